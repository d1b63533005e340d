import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildReady, ChildStats } from './services-process.ts';

/** The parent's side of bench/services-process.ts: start it, ask it things, stop it. */
export interface ServicesChild {
  ready: ChildReady;
  pid: number;
  createAccounts(count: number, posts: number, usernamePrefix: string): Promise<Array<{ id: string; username: string; token: string }>>;
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
  const child: ChildProcess = fork(fileURLToPath(new URL('./services-process.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    env: {
      ...process.env,
      BENCH_SIM_START_MS: String(opts.startMs),
      BENCH_JPEG_CACHE_MB: String(opts.jpegCacheMb),
      BENCH_JPEG_CACHE_ENTRIES: String(opts.jpegCacheEntries),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (m: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  let exited = false;

  const ready = await new Promise<ChildReady>((resolve, reject) => {
    const onMessage = (m: { type?: string; ready?: ChildReady }) => {
      if (m.type === 'ready' && m.ready) {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m.ready);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`bench services process exited (${code}) before it was ready`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
  child.on('message', (m: { id?: number; error?: string }) => {
    if (typeof m.id !== 'number') return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.error) p.reject(new Error(`bench services: ${m.error}`));
    else p.resolve(m as Record<string, unknown>);
  });
  child.on('exit', (code) => {
    exited = true;
    for (const p of pending.values()) p.reject(new Error(`bench services process exited (${code})`));
    pending.clear();
  });

  const ask = (msg: Record<string, unknown>): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error('bench services process is not running'));
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ id, ...msg });
    });

  return {
    ready,
    pid: child.pid ?? -1,
    createAccounts: async (count, posts, usernamePrefix) =>
      (await ask({ type: 'accounts', count, posts, usernamePrefix })).accounts as Array<{ id: string; username: string; token: string }>,
    phase: async () => {
      await ask({ type: 'phase' });
    },
    stats: async () => (await ask({ type: 'stats' })).stats as ChildStats,
    requestCounts: async () => {
      const res = await fetch(`${ready.simUrl}/__sim/request-counts`);
      if (!res.ok) throw new Error(`GET /__sim/request-counts: HTTP ${res.status}`);
      return (await res.json()) as RequestCounts;
    },
    close: async () => {
      if (exited) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      await ask({ type: 'close' }).catch(() => undefined);
      await gone;
    },
  };
}
