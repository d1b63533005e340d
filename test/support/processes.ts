import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { recordCaptured } from './capture.ts';

const BIN = fileURLToPath(new URL('../../bin/feedmirror.js', import.meta.url));

export interface Spawned {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * Run `feedmirror <args>` as a real process; its output is kept for the secrets audit. `bin` runs
 * another checkout's bin/feedmirror.js (a previous release taken out of git).
 */
export function spawnFeedmirror(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { cwd?: string; bin?: string } = {},
): Spawned {
  // The child logs to stdout (not to the capture folder); what it prints is captured here instead.
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.FEEDMIRROR_CAPTURE_DIR;
  const child = spawn(process.execPath, [opts.bin ?? BIN, ...args], {
    env: childEnv,
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (b: Buffer) => {
    const s = b.toString('utf8');
    out += s;
    recordCaptured('process', s);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Run `feedmirror <args>` to the end as a real process, standard input given, stdout and stderr
 * kept apart (both captured for the secrets audit); killed after `timeoutMs`.
 */
export function runFeedmirror(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { stdin?: string; cwd?: string; timeoutMs?: number; stdoutRevealsSecret?: boolean; bin?: string } = {},
): Promise<Finished> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.FEEDMIRROR_CAPTURE_DIR;
  const started = Date.now();
  const child = spawn(process.execPath, [opts.bin ?? BIN, ...args], {
    env: childEnv,
    cwd: opts.cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  // A command whose stdout is the operator's one copy of a secret it just made (`webhooks add`
  // prints the signing secret, by design) is left out of the audit; its stderr still counts.
  child.stdout.on('data', (b: Buffer) => {
    stdout += b.toString('utf8');
    if (!opts.stdoutRevealsSecret) recordCaptured('process', b.toString('utf8'));
  });
  child.stderr.on('data', (b: Buffer) => {
    stderr += b.toString('utf8');
    recordCaptured('process', b.toString('utf8'));
  });
  child.stdin.on('error', () => undefined);
  child.stdin.end(opts.stdin ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    }),
  );
}
