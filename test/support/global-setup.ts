import type { TestProject } from 'vitest/node';
import { mkdirSync, rmSync } from 'node:fs';
import { captureDirFor } from './capture-dir.ts';

/**
 * Resolves where the real services of the integration tests are: testcontainers when a container
 * engine runs, otherwise the servers named by DATABASE_URL / REDIS_URL (which `npm test` makes sure
 * are up through infra/ensure.sh). Each test file then makes its own database and Redis prefix.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    redisUrl: string;
  }
}

export default async function setup(project: TestProject) {
  // A fresh capture for the secrets audit that runs after the suite (test/audit).
  const capture = process.env.FEEDMIRROR_CAPTURE_DIR ?? captureDirFor(process.cwd());
  rmSync(capture, { recursive: true, force: true });
  mkdirSync(capture, { recursive: true });
  const stops: Array<() => Promise<unknown>> = [];
  let databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  let redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

  if (!process.env.DATABASE_URL || !process.env.REDIS_URL) {
    try {
      const { GenericContainer, Wait } = await import('testcontainers');
      // With no container engine this throws within milliseconds, so probing is cheap.
      if (!process.env.DATABASE_URL) {
        const pg = await new GenericContainer('postgres:16')
          .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
          .withExposedPorts(5432)
          .withWaitStrategy(Wait.forLogMessage(/ready to accept connections/, 2))
          .start();
        stops.push(() => pg.stop());
        databaseUrl = `postgres://postgres@${pg.getHost()}:${pg.getMappedPort(5432)}/postgres`;
      }
      if (!process.env.REDIS_URL) {
        const redis = await new GenericContainer('redis:7').withExposedPorts(6379).start();
        stops.push(() => redis.stop());
        redisUrl = `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`;
      }
    } catch (err) {
      const msg = (err as Error).message ?? String(err);
      if (!/container runtime strategy/i.test(msg))
        console.warn(`[test] testcontainers unavailable (${msg.split('\n')[0]}); using local services`);
    }
  }
  project.provide('databaseUrl', databaseUrl);
  project.provide('redisUrl', redisUrl);
  return async () => {
    for (const stop of stops) await stop();
  };
}
