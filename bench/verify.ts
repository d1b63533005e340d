import { randomBytes } from 'node:crypto';
import { access, constants } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { publishAccountFeed } from '../src/feeds/publish.ts';
import { mirrorLimitsFromConfig } from '../src/mirror/copy.ts';
import { PlatformClient } from '../src/platform/client.ts';
import type { Post } from '../src/schema/v1.ts';
import { createStorage, mediaKey, type ObjectStorage } from '../src/storage/index.ts';
import { upsertAccount } from '../src/store/accounts.ts';
import { TokenCipher } from '../src/store/crypto.ts';
import { createPool } from '../src/store/db.ts';
import { migrate } from '../src/store/migrate.ts';
import { saveMediaCopy, upsertPosts } from '../src/store/posts.ts';
import { saveToken } from '../src/store/tokens.ts';
import { DAY, systemClock } from '../src/util/clock.ts';
import { silentLogger } from '../src/util/logger.ts';
import { runVerify } from '../src/verify/verify.ts';
import { scheduleAccount } from '../jobs/schedules.ts';
import { createQueues } from '../jobs/queues.ts';
import { scheduleCheck } from '../jobs/verify-schedules.ts';
import { S3RVER_CREDENTIALS, startS3 } from '../test/support/s3.ts';
import { benchDatabase, benchRedis, clearBenchRedis } from './services.ts';

/**
 * How long `feedmirror verify` takes on S3, per 10,000 objects the published feeds point at.
 *
 *   node --import tsx bench/verify.ts [--objects 10000] [--accounts 20] [--concurrency 16]
 *
 * The stores are filled directly, as a worker would have left them (no platform, no sharp: what is
 * measured is the check, not the copying): accounts with their tokens and schedules, posts, their
 * copies (an original and four variants each, plus its manifest) as objects in s3rver (kept in
 * /dev/shm where there is one), and each account's feed published by publishAccountFeed. Then the
 * whole check runs twice (every account, schedules, secrets, every object HEADed, media/ listed
 * for orphans) and the second run is reported.
 */
const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '10000' },
    accounts: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '16' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(
    'usage: node --import tsx bench/verify.ts [--objects 10000] [--accounts 20] [--concurrency 16]\n',
  );
  process.exit(0);
}
const OBJECTS = Number(values.objects);
const ACCOUNTS = Number(values.accounts);
const CONCURRENCY = Number(values.concurrency);
for (const [name, v] of Object.entries({ objects: OBJECTS, accounts: ACCOUNTS, concurrency: CONCURRENCY }))
  if (!Number.isInteger(v) || v < 1) {
    process.stderr.write(`--${name} must be a whole number above 0\n`);
    process.exit(2);
  }
/** Objects a post's feed entry points at: the original and its variants. */
const VARIANTS = [160, 320, 640, 810];
const PER_POST = 1 + VARIANTS.length;

async function memoryFolder(): Promise<string | undefined> {
  try {
    await access('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return undefined;
  }
}

/** fn over items, `limit` at once. */
async function each<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function main(): Promise<void> {
  const database = await benchDatabase();
  const redis = benchRedis();
  const s3 = await startS3('feedmirror-bench-verify', { parentDir: await memoryFolder() });
  const db = createPool(database.url, { max: 8 });
  const queues = createQueues(redis);
  try {
    await migrate(db);
    const config = loadConfig({
      STORAGE_URL: `s3://${s3.bucket}/feedmirror`,
      S3_ENDPOINT: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      MEDIA_PUBLIC_URL: 'https://cdn.example.test/feedmirror/',
    });
    const storage: ObjectStorage = createStorage(config, { credentials: S3RVER_CREDENTIALS });
    const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
    const schedules = { refreshCheckEveryMs: 6 * 3_600_000, syncEveryMs: 3_600_000 };
    const clock = systemClock;
    const now = clock.now();
    const deps = {
      db,
      cipher,
      // Never called: the check reads no platform (only --repair would).
      platform: new PlatformClient({
        graphUrl: 'http://127.0.0.1:9',
        apiVersion: 'v25.0',
        oauthTokenUrl: 'http://127.0.0.1:9',
      }),
      storage,
      limits: mirrorLimitsFromConfig(config),
      clock,
      logger: silentLogger,
    };

    const posts = Math.ceil(OBJECTS / PER_POST);
    const perAccount = Math.ceil(posts / ACCOUNTS);
    const body = randomBytes(2048);
    const fillStarted = performance.now();
    let written = 0;
    for (let a = 0; a < ACCOUNTS; a++) {
      const accountId = `1784140000${String(a).padStart(7, '0')}`;
      await upsertAccount(db, { id: accountId, username: `bench.verify${a}` }, now);
      await saveToken(
        db,
        cipher,
        {
          accountId,
          accessToken: `IGAA${randomBytes(24).toString('hex')}`,
          obtainedAt: now,
          expiresAt: new Date(now.getTime() + 50 * DAY),
        },
        'imported',
      );
      await scheduleAccount(queues, accountId, schedules);
      const count = Math.min(perAccount, posts - a * perAccount);
      if (count <= 0) continue;
      const inputs = Array.from({ length: count }, (_, i) => {
        const mediaId = `179${String(a).padStart(5, '0')}${String(i).padStart(7, '0')}`;
        const link = `https://scontent.cdninstagram.com/v/t51/${mediaId}.jpg?oe=FFFFFFFF&_nc_sid=x`;
        const post: Post = {
          id: mediaId,
          source: 'instagram',
          type: 'image',
          format: 'post',
          status: 'published',
          url: `https://www.instagram.com/p/${mediaId}/`,
          text: `post ${i}`,
          media: [{ url: link, mime: 'image/jpeg' }],
          thumbnailUrl: link,
          publishedAt: new Date(now.getTime() - i * 3_600_000).toISOString(),
        };
        return { mediaId, post, contentHash: mediaId, earliestOe: null };
      });
      await upsertPosts(db, accountId, inputs, now);
      await each(inputs, 16, async ({ mediaId, post }) => {
        const stem = `cover-${mediaId.slice(-16).padStart(16, '0')}`;
        const key = mediaKey(accountId, mediaId, `${stem}.jpg`);
        const variants = VARIANTS.map((w) => ({
          key: mediaKey(accountId, mediaId, `${stem}-w${w}.webp`),
          width: w,
          height: w,
          contentType: 'image/webp',
        }));
        const put = (k: string, type: string) =>
          storage.put(k, body, { contentType: type, cacheControl: 'public, max-age=31536000, immutable' });
        await put(key, 'image/jpeg');
        for (const v of variants) await put(v.key, v.contentType);
        await put(mediaKey(accountId, mediaId, 'cover.json'), 'application/json');
        written += PER_POST + 1;
        await saveMediaCopy(db, {
          accountId,
          mediaId,
          slot: 'cover',
          sourceId: post.thumbnailUrl.split('?')[0]!,
          key,
          width: 1080,
          height: 1080,
          bytes: body.length,
          contentType: 'image/jpeg',
          variants,
          placeholder: null,
          copiedAt: now,
        });
      });
      const out = await publishAccountFeed(deps, accountId, { complete: true });
      if (out.outcome !== 'written') throw new Error(`account ${accountId}: feed ${out.outcome}`);
    }
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    process.stdout.write(
      `filled ${ACCOUNTS} accounts, ${posts} posts, ${written} objects in s3rver in ${fillSeconds.toFixed(1)} s\n`,
    );

    const verifyDeps = { ...deps, schedules: scheduleCheck({ db, queues, schedules }) };
    let last;
    for (const round of [1, 2]) {
      const started = performance.now();
      const cpu = process.cpuUsage();
      last = await runVerify(verifyDeps, { trigger: 'cli', concurrency: CONCURRENCY });
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      const c = last.counts;
      process.stdout.write(
        `verify round ${round}: ${seconds.toFixed(2)} s, ok ${last.ok}, ${c.objects} objects HEADed, ${c.storedObjects} listed, ` +
          `${c.accounts} accounts, CPU ${((used.user + used.system) / 1e6).toFixed(2)} s; ` +
          `${((seconds * 10_000) / c.objects).toFixed(2)} s per 10,000 objects (concurrency ${CONCURRENCY})\n`,
      );
      if (!last.ok) throw new Error(`verify found problems: ${JSON.stringify(last.problems.slice(0, 3))}`);
    }
  } finally {
    await Promise.all(Object.values(queues).map((q) => q.close()));
    await clearBenchRedis(redis);
    await db.end();
    await database.drop();
    await s3.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/verify: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
