import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../bin/feedmirror.js', import.meta.url));

describe('a reader that closes the pipe early', () => {
  it('ends the output quietly, as `feedmirror … | head` expects: exit 0, no EPIPE stack on stderr', async () => {
    // The read end is closed before the command writes anything, as `head -1` does once it has its line.
    const child = spawn(process.execPath, [BIN, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    expect(stderr).not.toMatch(/EPIPE|Unhandled 'error' event|at .*\(node:/);
    expect(code).toBe(0);
  });
});
