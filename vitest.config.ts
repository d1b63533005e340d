import { defineConfig } from 'vitest/config';
import { captureDirFor } from './test/support/capture-dir.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'jobs/**/*.test.ts'],
    exclude: ['test/audit/**', 'node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    env: { FEEDMIRROR_CAPTURE_DIR: captureDirFor(process.cwd()), LOG_LEVEL: 'debug' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // 2 cores: integration files share Postgres and Redis; keep parallelism modest.
    maxWorkers: 3,
  },
});
