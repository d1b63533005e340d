import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { recordCaptured } from './capture.ts';

const BIN = fileURLToPath(new URL('../../bin/feedmirror.js', import.meta.url));

export interface Spawned {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Run `feedmirror <args>` as a real process; its output is kept for the secrets audit. */
export function spawnFeedmirror(args: string[], env: NodeJS.ProcessEnv, opts: { cwd?: string } = {}): Spawned {
  // The child logs to stdout (not to the capture folder); what it prints is captured here instead.
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.FEEDMIRROR_CAPTURE_DIR;
  const child = spawn(process.execPath, [BIN, ...args], { env: childEnv, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (b: Buffer) => {
    const s = b.toString('utf8');
    out += s;
    recordCaptured('process', s);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}
