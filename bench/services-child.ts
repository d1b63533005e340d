import type { FeedPost } from './feeds.ts';
import { forkChild } from './ipc.ts';
import type { ChildReady, ChildStats } from './services-process.ts';

/** The parent's side of bench/services-process.ts: start it, ask it things, stop it. */
export interface ServicesChild {
  ready: ChildReady;
  pid: number;
  createAccounts(
    count: number,
    posts: number,
    usernamePrefix: string,
  ): Promise<Array<{ id: string; username: string; token: string }>>;
  /** Fetch every URL once through the fake CDN (fills its JPEG cache); resolves to how many. */
  warm(urls: string[]): Promise<number>;
  phase(): Promise<void>;
  stats(): Promise<ChildStats>;
  smallAccounts(
    count: number,
    posts: number,
    usernamePrefix: string,
    issuedAgoMs?: number,
  ): Promise<Array<{ id: string; username: string; token: string }>>;
  /** A new post on each account, at the given simulated instants (default now), of the given kinds (default a single image). */
  change(accountIds: string[], atMs?: number[], kinds?: FeedPost[]): Promise<void>;
  /** Accounts with realistic feeds (bench/feeds.ts): their post counts and token ages given. */
  feedAccounts(opts: {
    usernamePrefix: string;
    postCounts: number[];
    tokenAgesMs: number[];
    signedSpreadMs: number;
    seed: number;
  }): Promise<Array<{ id: string; username: string; token: string }>>;
  /** A new long-lived token for each account, issued at the given simulated instants (aged tokens). */
  reissueTokens(accountIds: string[], issuedAtMs: number[]): Promise<string[]>;
  /** One post deleted at the source on each account (never an account's last); resolves to how many. */
  deletePosts(accountIds: string[], seed: number): Promise<number>;
  /** The next sync of each account fails (its listing answers 500 to every try). */
  fail(accountIds: string[]): Promise<void>;
  /** Each account's whole listing (every page's items), answered in-process by the simulator. */
  listings(accountIds: string[], opts: { version: string; fields: string; limit: number }): Promise<unknown[][]>;
  setClock(ms: number): Promise<void>;
  /** Request counts of the simulator's record (GET /__sim/request-counts). */
  requestCounts(): Promise<RequestCounts>;
  close(): Promise<void>;
}

export interface RequestCounts {
  total: number;
  byHost: Record<string, number>;
  graphByEdge: Record<string, number>;
}

export async function startServicesChild(opts: {
  startMs: number;
  jpegCacheMb: number;
  jpegCacheEntries: number;
  wallClock?: boolean;
  linkLifetimeMs?: number;
}): Promise<ServicesChild> {
  const child = await forkChild<ChildReady>(new URL('./services-process.ts', import.meta.url), 'bench services', {
    BENCH_SIM_START_MS: String(opts.startMs),
    BENCH_JPEG_CACHE_MB: String(opts.jpegCacheMb),
    BENCH_JPEG_CACHE_ENTRIES: String(opts.jpegCacheEntries),
    BENCH_SIM_WALL_CLOCK: opts.wallClock ? '1' : '0',
    // The soak's 100,000 simulated accounts hold some 2.4 million posts in this process's heap.
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=8192`.trim(),
    ...(opts.linkLifetimeMs ? { BENCH_SIM_LINK_LIFETIME_MS: String(opts.linkLifetimeMs) } : {}),
  });
  return {
    ready: child.ready,
    pid: child.pid,
    createAccounts: async (count, posts, usernamePrefix) =>
      (await child.ask({ type: 'accounts', count, posts, usernamePrefix })).accounts as Array<{
        id: string;
        username: string;
        token: string;
      }>,
    warm: async (urls) => (await child.ask({ type: 'warm', urls })).fetched as number,
    phase: async () => {
      await child.ask({ type: 'phase' });
    },
    stats: async () => (await child.ask({ type: 'stats' })).stats as ChildStats,
    smallAccounts: async (count, posts, usernamePrefix, issuedAgoMs = 0) =>
      (await child.ask({ type: 'small-accounts', count, posts, usernamePrefix, issuedAgoMs })).accounts as Array<{
        id: string;
        username: string;
        token: string;
      }>,
    change: async (accountIds, atMs, kinds) => {
      await child.ask({ type: 'change', accountIds, ...(atMs ? { atMs } : {}), ...(kinds ? { kinds } : {}) });
    },
    feedAccounts: async (o) =>
      (await child.ask({ type: 'feed-accounts', ...o })).accounts as Array<{
        id: string;
        username: string;
        token: string;
      }>,
    reissueTokens: async (accountIds, issuedAtMs) =>
      (await child.ask({ type: 'reissue', accountIds, issuedAtMs })).tokens as string[],
    deletePosts: async (accountIds, seed) => (await child.ask({ type: 'delete', accountIds, seed })).deleted as number,
    fail: async (accountIds) => {
      await child.ask({ type: 'fail', accountIds });
    },
    listings: async (accountIds, o) =>
      (await child.ask({ type: 'listings', accountIds, ...o })).listings as unknown[][],
    setClock: async (setMs) => {
      await child.ask({ type: 'clock', setMs });
    },
    requestCounts: async () => {
      const res = await fetch(`${child.ready.simUrl}/__sim/request-counts`, {
        headers: { authorization: `Bearer ${child.ready.simControlSecret}` },
      });
      if (!res.ok) throw new Error(`GET /__sim/request-counts: HTTP ${res.status}`);
      return (await res.json()) as RequestCounts;
    },
    close: () => child.close(),
  };
}
