import { forkChild } from './ipc.ts';
import type { ChildReady, ChildStats } from './services-process.ts';

/** The parent's side of bench/services-process.ts: start it, ask it things, stop it. */
export interface ServicesChild {
  ready: ChildReady;
  pid: number;
  createAccounts(count: number, posts: number, usernamePrefix: string): Promise<Array<{ id: string; username: string; token: string }>>;
  /** Fetch every URL once through the fake CDN (fills its JPEG cache); resolves to how many. */
  warm(urls: string[]): Promise<number>;
  phase(): Promise<void>;
  stats(): Promise<ChildStats>;
  /** Request counts of the simulator's record (GET /__sim/request-counts). */
  requestCounts(): Promise<RequestCounts>;
  close(): Promise<void>;
}

export interface RequestCounts {
  total: number;
  byHost: Record<string, number>;
  graphByEdge: Record<string, number>;
}

export async function startServicesChild(opts: { startMs: number; jpegCacheMb: number; jpegCacheEntries: number }): Promise<ServicesChild> {
  const child = await forkChild<ChildReady>(new URL('./services-process.ts', import.meta.url), 'bench services', {
    BENCH_SIM_START_MS: String(opts.startMs),
    BENCH_JPEG_CACHE_MB: String(opts.jpegCacheMb),
    BENCH_JPEG_CACHE_ENTRIES: String(opts.jpegCacheEntries),
  });
  return {
    ready: child.ready,
    pid: child.pid,
    createAccounts: async (count, posts, usernamePrefix) =>
      (await child.ask({ type: 'accounts', count, posts, usernamePrefix })).accounts as Array<{ id: string; username: string; token: string }>,
    warm: async (urls) => (await child.ask({ type: 'warm', urls })).fetched as number,
    phase: async () => {
      await child.ask({ type: 'phase' });
    },
    stats: async () => (await child.ask({ type: 'stats' })).stats as ChildStats,
    requestCounts: async () => {
      const res = await fetch(`${child.ready.simUrl}/__sim/request-counts`);
      if (!res.ok) throw new Error(`GET /__sim/request-counts: HTTP ${res.status}`);
      return (await res.json()) as RequestCounts;
    },
    close: () => child.close(),
  };
}
