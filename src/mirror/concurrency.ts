import { availableParallelism } from 'node:os';
import sharp from 'sharp';

/**
 * How many image copies a worker runs at once when MIRROR_CONCURRENCY is `auto`. A copy is part
 * CPU (decode, resize, encode in libvips) and part waiting (download, upload, Postgres). With one
 * copy per core, the CPU sits idle while copies wait. Three per core keep every core busy while
 * the others wait (the concurrency curve of `npm run bench` flattens there), bounded by the threads sharp can
 * run operations on at once (libuv's pool, UV_THREADPOOL_SIZE, default 4) times two, since a
 * copy spends about half its time off the pool.
 */
export function autoMirrorConcurrency(env: NodeJS.ProcessEnv = process.env): number {
  const cores = Math.max(1, availableParallelism());
  const pool = Number(env.UV_THREADPOOL_SIZE) > 0 ? Number(env.UV_THREADPOOL_SIZE) : 4;
  // libvips' own threads per operation: more than the cores only adds contention.
  const vipsThreads = Math.max(1, Math.min(sharp.concurrency(), cores));
  return Math.max(2, Math.min(3 * cores, 2 * pool * Math.max(1, Math.floor(cores / vipsThreads))));
}

export function mirrorConcurrency(setting: number | 'auto', env: NodeJS.ProcessEnv = process.env): number {
  return setting === 'auto' ? autoMirrorConcurrency(env) : setting;
}
