import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * An in-process S3 API (s3rver) on a random port, for tests. s3rver accepts any credentials; give
 * the client { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } explicitly (S3RVER_CREDENTIALS),
 * never through the global environment. stop()/start() simulate storage going down and coming
 * back on the same port with the same data.
 */
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
  httpServer?: Server;
}
type S3rverCtor = new (opts: Record<string, unknown>) => S3rverInstance;
// s3rver ships no types; load it through require and type the little we use.
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor;

export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface TestS3 {
  endpoint: string;
  bucket: string;
  /** s3rver's data folder (the benchmark's set-up writes objects there directly). */
  directory: string;
  /** Stop for good and remove the data folder. */
  close(): Promise<void>;
  /** Simulate storage down: the port refuses connections. */
  stop(): Promise<void>;
  /** Bring it back on the same port with the same data. */
  start(): Promise<void>;
}

/**
 * s3rver on a free port with a data folder of its own (removed by close). `parentDir`: where that
 * folder goes (the OS temp folder by default; the benchmark puts it in memory, /dev/shm).
 */
export async function startS3(
  bucket = 'feedmirror-test',
  opts: { createBucket?: boolean; parentDir?: string | undefined } = {},
): Promise<TestS3> {
  const directory = await mkdtemp(path.join(opts.parentDir ?? os.tmpdir(), 'feedmirror-s3rver-'));
  let port = 0;
  let running: S3rverInstance | undefined;

  const start = async () => {
    if (running) return;
    const server = new S3rver({
      address: '127.0.0.1',
      port,
      silent: true,
      directory,
      configureBuckets: opts.createBucket === false ? [] : [{ name: bucket, configs: [] }],
    });
    const addr = await server.run();
    port = addr.port;
    running = server;
  };
  const stop = async () => {
    const server = running;
    if (!server) return;
    running = undefined;
    // The SDK keeps connections alive; close them or close() waits for them forever.
    server.httpServer?.closeAllConnections();
    await server.close();
  };

  await start();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    directory,
    stop,
    start,
    close: async () => {
      await stop();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
