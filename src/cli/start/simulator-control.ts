import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { printJson } from '../command.ts';
import { reportFailure } from '../failure.ts';
import { EXIT, type CliIO } from '../io.ts';

/**
 * `feedmirror simulator post add|edit|delete`, `revoke`, `expire-token`, `rate-limit`, `accounts`:
 * drive a running simulator through its control API (src/simulator/README.md). The simulator is
 * found as the demo left it: SIMULATOR_URL and SIMULATOR_CONTROL_SECRET in the environment (after
 * `set -a; . data/demo/demo.env; set +a`), else in ./data/demo/demo.env; `--simulator <url>`
 * names another address. No simulator there is one line and exit 3.
 */

export const DEMO_ENV = join('data', 'demo', 'demo.env');
const TIMEOUT_MS = 10_000;

export interface Target {
  url: string;
  secret: string;
}

export interface ControlOptions {
  simulator?: string;
  json?: boolean;
}

/** KEY=value lines of an env file as writeDemoEnv writes them (plain, or "double-quoted" with \-escapes). */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (!m) continue;
    let v = m[2] as string;
    if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1).replace(/\\(["\\$`])/g, '$1');
    else if (v.startsWith("'") && v.endsWith("'") && v.length >= 2) v = v.slice(1, -1);
    out[m[1] as string] = v;
  }
  return out;
}

/** Where the simulator is and its control secret; a sentence saying what is missing otherwise. */
export function findSimulator(io: CliIO, opts: ControlOptions): Target | string {
  let file: Record<string, string> = {};
  try {
    file = parseEnvFile(readFileSync(join(io.cwd, DEMO_ENV), 'utf8'));
  } catch {
    // No demo here: the environment or --simulator must say it.
  }
  const url = opts.simulator ?? io.env.SIMULATOR_URL ?? file.SIMULATOR_URL;
  const secret = io.env.SIMULATOR_CONTROL_SECRET ?? file.SIMULATOR_CONTROL_SECRET;
  if (!url)
    return `no simulator running here: start the demo (npm run demo) in this folder, or name one with --simulator <url>`;
  if (!/^https?:\/\/[^/\s]+\/?$/.test(url))
    return `--simulator must be an address such as http://127.0.0.1:4000, not ${url}`;
  if (!secret)
    return `no control secret for the simulator at ${url}: set SIMULATOR_CONTROL_SECRET (the demo writes it to ${DEMO_ENV})`;
  return { url: url.replace(/\/$/, ''), secret };
}

type Call = { ok: true; body: Record<string, unknown> } | { ok: false; code: number };

/** One control call; a failure is said once (one line) and its exit code returned. */
async function call(io: CliIO, opts: ControlOptions, method: string, path: string, body?: unknown): Promise<Call> {
  const target = findSimulator(io, opts);
  if (typeof target === 'string') {
    reportFailure(io, 'unavailable', target);
    return { ok: false, code: EXIT.unavailable };
  }
  let res: Response;
  try {
    res = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.secret}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch {
    reportFailure(
      io,
      'unavailable',
      `no simulator answers at ${target.url}: is the demo running (npm run demo)? (or name another with --simulator <url>)`,
    );
    return { ok: false, code: EXIT.unavailable };
  }
  let answer: Record<string, unknown> = {};
  try {
    answer = (await res.json()) as Record<string, unknown>;
  } catch {
    // Not the simulator's JSON: said below.
  }
  if (res.ok) return { ok: true, body: answer };
  const said = typeof answer.error === 'string' ? answer.error : `HTTP ${res.status}`;
  if (res.status === 401) {
    reportFailure(
      io,
      'failed',
      `the simulator at ${target.url} refused the control secret (is ${DEMO_ENV} from the demo running now?)`,
    );
  } else if (res.status === 404) {
    reportFailure(io, 'not_found', said);
  } else {
    reportFailure(io, res.status === 400 ? 'usage' : 'failed', `the simulator refused: ${said}`);
  }
  return { ok: false, code: res.status === 400 ? EXIT.usage : EXIT.failed };
}

function done(io: CliIO, opts: ControlOptions, body: Record<string, unknown>, line: string): number {
  if (opts.json) printJson(io, body);
  else io.stdout.write(`${line}\n`);
  return EXIT.ok;
}

const quoteCaption = (c: unknown) => (typeof c === 'string' ? JSON.stringify(c) : '(no caption)');

export async function postAdd(
  accountId: string,
  opts: ControlOptions & { caption?: string; type: string },
  io: CliIO,
): Promise<number> {
  const r = await call(io, opts, 'POST', `/__sim/accounts/${accountId}/posts`, {
    type: opts.type,
    ...(opts.caption !== undefined ? { caption: opts.caption } : {}),
  });
  if (!r.ok) return r.code;
  return done(
    io,
    opts,
    r.body,
    `added ${String(r.body.type)} post ${String(r.body.id)} to account ${accountId}: ${quoteCaption(r.body.caption)}\n` +
      `it reaches the feed with the next sync (now: npx feedmirror sync ${accountId} --wait)`,
  );
}

export async function postEdit(
  accountId: string,
  postId: string,
  opts: ControlOptions & { caption: string },
  io: CliIO,
): Promise<number> {
  const r = await call(io, opts, 'PATCH', `/__sim/accounts/${accountId}/posts/${postId}`, { caption: opts.caption });
  if (!r.ok) return r.code;
  return done(io, opts, r.body, `post ${postId} of account ${accountId} now reads ${quoteCaption(r.body.caption)}`);
}

export async function postDelete(accountId: string, postId: string, opts: ControlOptions, io: CliIO): Promise<number> {
  const r = await call(io, opts, 'DELETE', `/__sim/accounts/${accountId}/posts/${postId}`);
  if (!r.ok) return r.code;
  return done(
    io,
    opts,
    r.body,
    `deleted post ${postId} of account ${accountId} on the platform; the next sync prunes it from the feed`,
  );
}

export async function revoke(accountId: string, opts: ControlOptions, io: CliIO): Promise<number> {
  const r = await call(io, opts, 'POST', `/__sim/accounts/${accountId}/revoke`);
  if (!r.ok) return r.code;
  return done(
    io,
    opts,
    r.body,
    `revoked every token of account ${accountId}: its next platform call fails and the account needs its owner to log in again`,
  );
}

export async function expireToken(accountId: string, opts: ControlOptions, io: CliIO): Promise<number> {
  const r = await call(io, opts, 'POST', `/__sim/accounts/${accountId}/expire-token`);
  if (!r.ok) return r.code;
  const n = Number(r.body.expired ?? 0);
  return done(
    io,
    opts,
    r.body,
    `expired ${n} token${n === 1 ? '' : 's'} of account ${accountId}: its next platform call answers "session has expired"`,
  );
}

export async function rateLimit(opts: ControlOptions & { seconds: number }, io: CliIO): Promise<number> {
  const r = await call(io, opts, 'POST', '/__sim/rate-limit', { seconds: opts.seconds });
  if (!r.ok) return r.code;
  const until = r.body.rateLimitedUntil;
  return done(
    io,
    opts,
    r.body,
    typeof until === 'string'
      ? `every platform call answers "application request limit reached" (code 4) until ${until}`
      : 'the rate-limit window is over: platform calls are answered again',
  );
}

/** A further app on the simulated platform: its id and secret (the fake platform's, for tests and the demo). */
export async function addApp(opts: ControlOptions, io: CliIO): Promise<number> {
  const r = await call(io, opts, 'POST', '/__sim/apps', {});
  if (!r.ok) return r.code;
  const app = { appId: String(r.body.appId), appSecret: String(r.body.appSecret) };
  return done(
    io,
    opts,
    app,
    `app ${app.appId} registered; its secret: ${app.appSecret}\nadd it: feedmirror apps add <name> --app-id ${app.appId} (the secret on standard input)`,
  );
}

interface ListedAccount {
  id: string;
  username: string;
  name: string;
  posts: Array<{ id: string; type: string; caption: string | null }>;
}

export async function listAccounts(opts: ControlOptions, io: CliIO): Promise<number> {
  const r = await call(io, opts, 'GET', '/__sim/accounts');
  if (!r.ok) return r.code;
  const accounts = (r.body.accounts ?? []) as ListedAccount[];
  if (opts.json) {
    printJson(io, accounts);
    return EXIT.ok;
  }
  const lines: string[] = [];
  for (const a of accounts) {
    lines.push(`${a.id}  @${a.username}  ${a.name}  (${a.posts.length} posts, newest first)`);
    for (const p of a.posts) {
      const caption = p.caption === null ? '' : `  ${p.caption.split('\n')[0]!.slice(0, 60)}`;
      lines.push(`  ${p.id}  ${p.type.padEnd(8)}${caption}`);
    }
  }
  io.stdout.write(`${lines.join('\n')}\n`);
  return EXIT.ok;
}
