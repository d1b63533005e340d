/**
 * The benchmark's fake outside world in a process of its own: the platform simulator and s3rver.
 * Started by bench/run.ts (bench/ipc.ts forks it with `node --import tsx`), so the pipeline
 * process's RSS and CPU are its own; this process reports its own through the IPC channel.
 *
 * IPC protocol (bench/ipc.ts; every request carries an id echoed in the answer):
 *   parent -> child  { id, type: 'accounts', count, posts, usernamePrefix }  answer { id, accounts: [{id, username, token}] }
 *                    { id, type: 'warm', urls }  answer { id, fetched }        (fills the fake CDN's JPEG cache)
 *                    { id, type: 'phase' }  answer { id }                      (starts a new RSS high-water mark)
 *                    { id, type: 'stats' }  answer { id, stats: ChildStats }
 *                    { id, type: 'close' }  answer { id }, then the process exits
 *   child -> parent  first message { type: 'ready', ready: ChildReady }
 * Tokens travel over IPC only, never over HTTP (the control API answers no token, by design).
 * Accounts are created through the simulator's control API (POST /__sim/accounts), requests are
 * counted through GET /__sim/request-counts, like any other process would.
 */
import { access, constants } from 'node:fs/promises';
import { z } from 'zod';
import { configureJpegCache, jpegCacheStats } from '../src/simulator/images.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { followWallClock } from '../src/simulator/wall-clock.ts';
import { startS3 } from '../test/support/s3.ts';
import { serveParent } from './ipc.ts';
import { drawPost, seededRandom } from './feeds.ts';
import { MemorySampler, type MemoryStats } from './memory.ts';
import { quietNodeVersionWarning } from '../bin/quiet-node-warning.js';

// A benchmark's stderr is for its own progress: the AWS SDK's Node 20 notice is dropped.
quietNodeVersionWarning({ silent: true });

export interface ChildReady {
  simUrl: string;
  /** The simulator's control secret (its control API answers only with it). */
  simControlSecret: string;
  graphUrl: string;
  oauthTokenUrl: string;
  imageHost: string;
  s3Endpoint: string;
  bucket: string;
  /** s3rver's data folder: the soak's set-up writes feeds there in s3rver's own layout. */
  s3Directory: string;
  /** The simulator's (manual, never moved) clock: the pipeline uses a ManualClock at the same time. */
  clockMs: number;
}

export interface ChildStats extends MemoryStats {
  jpegCache: { entries: number; bytes: number };
}

const request = z.discriminatedUnion('type', [
  z.object({
    id: z.number(),
    type: z.literal('accounts'),
    count: z.number().int().positive(),
    posts: z.number().int().nonnegative(),
    usernamePrefix: z.string(),
  }),
  z.object({ id: z.number(), type: z.literal('warm'), urls: z.array(z.url()) }),
  z.object({ id: z.number(), type: z.literal('phase') }),
  z.object({ id: z.number(), type: z.literal('stats') }),
  // The scale benchmarks (bench/scale.ts): many accounts of small feeds with tiny images, created
  // here in-process (thousands of HTTP round trips would measure the control API, not feedmirror).
  z.object({
    id: z.number(),
    type: z.literal('small-accounts'),
    count: z.number().int().positive(),
    posts: z.number().int().nonnegative(),
    usernamePrefix: z.string(),
    issuedAgoMs: z.number().int().nonnegative().default(0),
  }),
  z.object({
    id: z.number(),
    type: z.literal('change'),
    accountIds: z.array(z.string()),
    atMs: z.array(z.number()).optional(),
    /** Each new post's kind (bench/feeds.ts drawPost); default a single image. */
    kinds: z
      .array(
        z.object({
          kind: z.enum(['image', 'carousel', 'video', 'reel']),
          slides: z.array(z.enum(['image', 'video'])).optional(),
        }),
      )
      .optional(),
  }),
  z.object({ id: z.number(), type: z.literal('fail'), accountIds: z.array(z.string()) }),
  // The soak's realistic feeds (bench/feeds.ts): each account's number of posts, the mix of
  // kinds drawn from a seeded source, posts spread back in time, their links signed at a moment
  // spread over the link lifetime (as the platform's and the worker's renewals leave them), and
  // each account's token issued at its own age.
  z.object({
    id: z.number(),
    type: z.literal('feed-accounts'),
    usernamePrefix: z.string(),
    postCounts: z.array(z.number().int().positive()),
    tokenAgesMs: z.array(z.number().int().nonnegative()),
    signedSpreadMs: z.number().int().nonnegative(),
    seed: z.number().int(),
  }),
  /** A new long-lived token for each account, issued at the given simulated instants. */
  z.object({
    id: z.number(),
    type: z.literal('reissue'),
    accountIds: z.array(z.string()),
    issuedAtMs: z.array(z.number()),
  }),
  /** A post deleted at the source on each account (its newest, one of its others at random). */
  z.object({ id: z.number(), type: z.literal('delete'), accountIds: z.array(z.string()), seed: z.number().int() }),
  /**
   * Each account's whole listing, every page, as the media edge answers it (the simulator's own
   * handler, in-process): the soak's set-up reads 100,000 listings without 100,000 HTTP calls.
   */
  z.object({
    id: z.number(),
    type: z.literal('listings'),
    accountIds: z.array(z.string()),
    version: z.string(),
    fields: z.string(),
    limit: z.number().int().positive(),
  }),
  z.object({ id: z.number(), type: z.literal('clock'), setMs: z.number() }),
  z.object({ id: z.number(), type: z.literal('close') }),
]);

const settings = z.object({
  BENCH_SIM_START_MS: z.coerce.number().int().positive(),
  // The fake CDN renders every JPEG with sharp (~35 ms of CPU each): the benchmark warms a cache
  // big enough for the run, so that cost is paid before the clock starts, not during the passes.
  BENCH_JPEG_CACHE_MB: z.coerce.number().int().nonnegative().default(0),
  BENCH_JPEG_CACHE_ENTRIES: z.coerce.number().int().nonnegative().default(0),
  /** 1: the simulated clock follows the wall clock (the soak's real-time window). */
  BENCH_SIM_WALL_CLOCK: z.enum(['0', '1']).default('0'),
  BENCH_SIM_LINK_LIFETIME_MS: z.coerce.number().int().positive().optional(),
});

/** A small post: tiny pictures, so a 10,000-account run measures scheduling, not image work. */
const SMALL_POST = { kind: 'image' as const, width: 120, height: 150 };

/** /dev/shm when it exists and can be written to, else the OS temp folder. */
async function memoryFolder(): Promise<string | undefined> {
  try {
    await access('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const env = settings.parse(process.env);
  if (env.BENCH_JPEG_CACHE_MB > 0) configureJpegCache({ maxBytes: env.BENCH_JPEG_CACHE_MB * 1024 * 1024 });
  if (env.BENCH_JPEG_CACHE_ENTRIES > 0) configureJpegCache({ maxEntries: env.BENCH_JPEG_CACHE_ENTRIES });

  const sim = await startSimulator({
    start: env.BENCH_SIM_START_MS,
    ...(env.BENCH_SIM_LINK_LIFETIME_MS ? { linkLifetimeMs: env.BENCH_SIM_LINK_LIFETIME_MS } : {}),
  });
  if (env.BENCH_SIM_WALL_CLOCK === '1') followWallClock(sim);
  /** Tokens of the small accounts, for faults aimed at one account. */
  const tokens = new Map<string, string>();
  // s3rver keeps each object as files. On a disk, page writeback stalls some rounds and not others
  // (the fake's disk, not feedmirror); in memory (/dev/shm, where there is one) the rounds compare.
  const s3 = await startS3('feedmirror-bench', { parentDir: await memoryFolder() });
  const memory = new MemorySampler();

  const createAccounts = async (count: number, posts: number, prefix: string) => {
    const out: Array<{ id: string; username: string; token: string }> = [];
    for (let i = 0; i < count; i++) {
      const res = await fetch(`${sim.url}/__sim/accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${sim.controlSecret}` },
        body: JSON.stringify({ username: `${prefix}${i}`, posts }),
      });
      const body = (await res.json()) as { id?: string; username?: string; error?: string };
      if (!res.ok || !body.id || !body.username)
        throw new Error(`creating account ${prefix}${i}: HTTP ${res.status} ${body.error ?? ''}`);
      out.push({ id: body.id, username: body.username, token: sim.issueLongLivedToken(body.id) });
    }
    return out;
  };

  /** Four lanes over the fake CDN, here, so warming costs the pipeline process nothing. */
  const warm = async (urls: string[]) => {
    let i = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (i < urls.length) {
          const res = await fetch(urls[i++]!);
          await res.arrayBuffer();
        }
      }),
    );
    return urls.length;
  };

  const stats = (): ChildStats => {
    const cache = jpegCacheStats();
    return { ...memory.stats(), jpegCache: { entries: cache.entries, bytes: cache.bytes } };
  };

  const close = async () => {
    memory.stop();
    await sim.close();
    await s3.close();
  };

  const sendReady = serveParent(
    'bench/services-process.ts',
    async (raw) => {
      const m = request.parse(raw);
      switch (m.type) {
        case 'accounts':
          return { accounts: await createAccounts(m.count, m.posts, m.usernamePrefix) };
        case 'warm':
          return { fetched: await warm(m.urls) };
        case 'phase':
          memory.phase();
          return {};
        case 'stats':
          return { stats: stats() };
        case 'small-accounts': {
          const out: Array<{ id: string; username: string; token: string }> = [];
          for (let i = 0; i < m.count; i++) {
            const acc = sim.createAccount({
              username: `${m.usernamePrefix}${i}`,
              posts: Array.from({ length: m.posts }, (_, k) => ({
                ...SMALL_POST,
                caption: `Post ${k} of ${i}`,
                timestamp: new Date(sim.clock.now().getTime() - (k + 1) * 3_600_000),
              })),
            });
            const token = sim.issueLongLivedToken(acc.id, {
              issuedAt: new Date(sim.clock.now().getTime() - m.issuedAgoMs),
            });
            tokens.set(acc.id, token);
            out.push({ ...acc, token });
          }
          return { accounts: out };
        }
        case 'feed-accounts': {
          const rnd = seededRandom(m.seed);
          const now = sim.clock.now().getTime();
          const out: Array<{ id: string; username: string; token: string }> = [];
          try {
            m.postCounts.forEach((count, i) => {
              const acc = sim.createAccount({ username: `${m.usernamePrefix}${i}` });
              // A post every 1-3 days back from now, oldest first (the newest ends up first).
              const gaps = Array.from({ length: count }, () => (1 + rnd() * 2) * 86_400_000);
              let t = now;
              const times = gaps.map((g) => (t -= g));
              for (let k = count - 1; k >= 0; k--) {
                const p = drawPost(rnd);
                sim.clock.set(new Date(now - Math.floor(rnd() * m.signedSpreadMs)));
                sim.addPost(acc.id, {
                  ...SMALL_POST,
                  kind: p.kind,
                  ...(p.slides ? { slides: p.slides } : {}),
                  caption: `Post ${k} of ${i} #bench`,
                  timestamp: new Date(times[k]!),
                });
              }
              const token = sim.issueLongLivedToken(acc.id, { issuedAt: new Date(now - (m.tokenAgesMs[i] ?? 0)) });
              tokens.set(acc.id, token);
              out.push({ ...acc, token });
            });
          } finally {
            sim.clock.set(new Date(now));
          }
          return { accounts: out };
        }
        case 'reissue': {
          const out = m.accountIds.map((accountId, i) => {
            const token = sim.issueLongLivedToken(accountId, { issuedAt: new Date(m.issuedAtMs[i]!) });
            tokens.set(accountId, token);
            return token;
          });
          return { tokens: out };
        }
        case 'delete': {
          const rnd = seededRandom(m.seed);
          let deleted = 0;
          for (const accountId of m.accountIds) {
            const posts = sim.posts(accountId);
            // Never the last post: an empty account is another story (R-OWN-7 holds big removals).
            if (posts.length < 2) continue;
            sim.deletePost(accountId, posts[Math.floor(rnd() * posts.length)]!.id);
            deleted++;
          }
          return { deleted };
        }
        case 'change': {
          // A new post on each account (at the given simulated instants: its links are signed then).
          const now = sim.clock.now().getTime();
          m.accountIds.forEach((accountId, i) => {
            const at = m.atMs?.[i];
            if (at !== undefined) sim.clock.set(new Date(at));
            const p = m.kinds?.[i];
            sim.addPost(accountId, {
              ...SMALL_POST,
              ...(p ? { kind: p.kind, ...(p.slides ? { slides: p.slides } : {}) } : {}),
              caption: `New at ${new Date(at ?? now).toISOString()}`,
            });
          });
          if (m.atMs) sim.clock.set(new Date(now));
          return {};
        }
        case 'fail': {
          // The account's listing fails: every try of one sync (1 + the client's 3 retries).
          for (const accountId of m.accountIds) {
            const token = tokens.get(accountId);
            sim.injectFault({
              kind: 'status',
              status: 500,
              times: 4,
              match: (r) => r.path.endsWith('/media') && r.query.access_token === token,
            });
          }
          return {};
        }
        case 'listings': {
          const listings = m.accountIds.map((accountId) => {
            const token = tokens.get(accountId);
            if (!token) throw new Error(`no token for account ${accountId}`);
            const items: unknown[] = [];
            let query: Record<string, string> = { access_token: token, fields: m.fields, limit: String(m.limit) };
            for (;;) {
              const reply = sim.graphGet(`/${m.version}/me/media`, query);
              if (reply.status !== 200) throw new Error(`listing of ${accountId}: HTTP ${reply.status}`);
              const page = JSON.parse(reply.body) as { data: unknown[]; paging?: { next?: string } };
              items.push(...page.data);
              if (!page.paging?.next) break;
              query = Object.fromEntries(new URL(page.paging.next).searchParams);
            }
            return items;
          });
          return { listings };
        }
        case 'clock':
          sim.clock.set(new Date(m.setMs));
          return { now: sim.clock.now().getTime() };
        case 'close':
          await close();
          return {};
      }
    },
    close,
  );

  const ready: ChildReady = {
    simUrl: sim.url,
    simControlSecret: sim.controlSecret,
    graphUrl: sim.graphUrl,
    oauthTokenUrl: sim.oauthTokenUrl,
    imageHost: sim.imageHost,
    s3Endpoint: s3.endpoint,
    bucket: s3.bucket,
    s3Directory: s3.directory,
    clockMs: sim.clock.now().getTime(),
  };
  sendReady(ready);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench services: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
