import { fork, type ChildProcess } from 'node:child_process';

/**
 * The bench's child processes (bench/services-process.ts, bench/pipeline-process.ts) and the
 * parent talk over Node's IPC channel with one tiny protocol:
 *   child -> parent  first message { type: 'ready', ready: <what the child offers> }
 *   parent -> child  { id, type, ...args }   answered with { id, ...result } or { id, error }
 *                    { id, type: 'close' }   answered, then the child exits
 */
export interface ChildHandle<Ready> {
  ready: Ready;
  pid: number;
  ask(msg: { type: string } & Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function forkChild<Ready>(
  script: URL,
  name: string,
  env: Record<string, string>,
): Promise<ChildHandle<Ready>> {
  // BENCH_PROFILE_DIR: every child writes a V8 CPU profile there (open it in Chrome DevTools);
  // BENCH_PROFILE=heap: a sampled allocation profile instead (what makes the garbage).
  const dir = process.env.BENCH_PROFILE_DIR;
  const profile = !dir
    ? []
    : process.env.BENCH_PROFILE === 'heap'
      ? ['--heap-prof', `--heap-prof-dir=${dir}`]
      : ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  const child: ChildProcess = fork(script, [], {
    execArgv: ['--import', 'tsx', ...profile],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (m: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  let exited = false;

  const ready = await new Promise<Ready>((resolve, reject) => {
    const onMessage = (m: { type?: string; ready?: Ready }) => {
      if (m.type === 'ready' && m.ready) {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m.ready);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`${name} process exited (${code}) before it was ready`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
  child.on('message', (m: { id?: number; error?: string }) => {
    if (typeof m.id !== 'number') return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.error) p.reject(new Error(`${name}: ${m.error}`));
    else p.resolve(m);
  });
  child.on('exit', (code) => {
    exited = true;
    for (const p of pending.values()) p.reject(new Error(`${name} process exited (${code})`));
    pending.clear();
  });

  const ask = (msg: { type: string } & Record<string, unknown>): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error(`${name} process is not running`));
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ id, ...msg });
    });

  return {
    ready,
    pid: child.pid ?? -1,
    ask,
    close: async () => {
      if (exited) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      await ask({ type: 'close' }).catch(() => undefined);
      await gone;
    },
  };
}

/**
 * The child's side: answer each request with `handle`, exit after answering 'close', and do not
 * linger when the parent goes away. Requests are validated by `handle` (it throws on bad input).
 */
export function serveParent(
  name: string,
  handle: (msg: unknown) => Promise<Record<string, unknown>>,
  onDisconnect: () => Promise<void>,
): (ready: unknown) => void {
  const send = process.send?.bind(process);
  if (!send) throw new Error(`${name} is started by bench/run.ts (it needs an IPC channel)`);
  process.on('message', (raw: unknown) => {
    const id = (raw as { id?: unknown } | null)?.id;
    const type = (raw as { type?: unknown } | null)?.type;
    handle(raw).then(
      (a) =>
        send({ id, ...a }, () => {
          if (type === 'close') process.exit(0);
        }),
      (err: unknown) => send({ id, error: (err as Error).message }),
    );
  });
  process.on('disconnect', () => {
    void onDisconnect().finally(() => process.exit(0));
  });
  return (ready: unknown) => send({ type: 'ready', ready });
}
