import { defineConfig } from 'vitest/config';
import { captureDirFor } from './test/support/capture-dir.ts';

// Second run of `npm test`: the audit of everything the first run captured.
export default defineConfig({
  test: { include: ['test/audit/**/*.test.ts'], env: { FEEDMIRROR_CAPTURE_DIR: captureDirFor(process.cwd()) } },
});
