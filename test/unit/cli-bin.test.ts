import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * bin/feedmirror.js in a checkout whose dependencies were never installed (an operator who goes
 * straight to `npx feedmirror init`): one line saying what to run, exit 1, no stack trace.
 */
describe('bin/feedmirror.js without node_modules', () => {
  it('says to run npm ci, in one line, and exits 1', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fm-bin-'));
    cpSync(path.resolve('bin'), path.join(dir, 'bin'), { recursive: true });
    cpSync(path.resolve('package.json'), path.join(dir, 'package.json'));
    const r = spawnSync(process.execPath, [path.join(dir, 'bin/feedmirror.js'), 'init'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `feedmirror: its dependencies are not installed; run \`npm ci\` in ${dir}, then run this again\n`,
    );
  });
});
