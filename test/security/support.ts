import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { Writable } from 'node:stream';
import { AppContext } from '../../src/cli/context.ts';
import { startServer, type RunningServer } from '../../src/cli/start/server.ts';
import { createLogger } from '../../src/util/logger.ts';
import { recordCaptured, registerSecretForAudit } from '../support/capture.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';

/**
 * `feedmirror serve` as an attacker meets it: built by the real composition root (startServer,
 * the same code the command runs), listening on 0.0.0.0, and reached through this machine's
 * NON-loopback address. Express trusts loopback peers by default, so a test from 127.0.0.1
 * would not show what happens behind docker-proxy or an Ingress; from 192.0.2.x it does.
 * The test plays the proxy: it sends X-Forwarded-For as a proxy appends it.
 */
export function nonLoopbackAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  throw new Error('this machine has no non-loopback IPv4 address; the proxy tests need one (see `hostname -I`)');
}

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export interface ServeUnderTest {
  /** http://<non-loopback address>:<port> */
  url: string;
  ctx: AppContext;
  running: RunningServer;
  logs: LogLine[];
  env: Record<string, string>;
  close(): Promise<void>;
}

export const DASHBOARD_USER = 'operator';

/** What startServeForTest returns: the running server, and `drop` for the database it made. */
export type ServedForTest = ServeUnderTest & { drop: () => Promise<void> };

/**
 * The operator logged in through the login form from `ip`, with the password the server was
 * started with: the session cookie. Shared because every dashboard test starts with it; the
 * login form itself is tested with postLogin.
 */
export async function operatorSession(s: Pick<ServeUnderTest, 'url' | 'env'>, ip: string): Promise<string> {
  return sessionCookie(await postLogin(s.url, ip, DASHBOARD_USER, s.env.DASHBOARD_PASSWORD!));
}

/** Stop a served test server and drop its database (whichever of them was started). */
export async function stopServe(s: ServedForTest | undefined): Promise<void> {
  await s?.close();
  await s?.drop();
}

export async function startServeForTest(
  label: string,
  env: Record<string, string> = {},
  shared?: { databaseUrl: string; redisPrefix: string },
): Promise<ServedForTest> {
  const db = shared ? { url: shared.databaseUrl, drop: async () => undefined } : await freshDatabase(label);
  const redis = redisForTest(label);
  const key = randomBytes(32).toString('base64');
  registerSecretForAudit(key);
  const fullEnv: Record<string, string> = {
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    REDIS_PREFIX: shared?.redisPrefix ?? redis.prefix,
    TOKEN_ENCRYPTION_KEY: key,
    HOST: '0.0.0.0',
    PORT: '0',
    DASHBOARD_USER,
    DASHBOARD_PASSWORD: `pw-${randomBytes(12).toString('base64url')}`,
    STORAGE_URL: `/tmp/feedmirror-security-${label}-${randomBytes(4).toString('hex')}`,
    HEAP_GROWTH_PERCENT: '0',
    LOG_LEVEL: 'debug',
    ...env,
  };
  registerSecretForAudit(fullEnv.DASHBOARD_PASSWORD!);
  const logs: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue;
        recordCaptured('log', line);
        try {
          logs.push(JSON.parse(line) as LogLine);
        } catch {
          /* not JSON: ignore */
        }
      }
      cb();
    },
  });
  const ctx = new AppContext(fullEnv, { logger: createLogger({ level: 'debug', destination: sink }) });
  const running = await startServer(ctx);
  const port = new URL(running.url).port;
  const url = `http://${nonLoopbackAddress()}:${port}`;
  return {
    url,
    ctx,
    running,
    logs,
    env: fullEnv,
    drop: db.drop,
    close: async () => {
      await running.close();
      await ctx.close();
    },
  };
}

/** Cookie header value from a response's Set-Cookie lines (name=value pairs, cleared ones dropped). */
export function cookiesOf(res: Response): string {
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='))
    .join('; ');
}

/** GET the login page as a client behind the proxy: its nonce cookie and the form's CSRF token. */
export async function loginForm(
  base: string,
  forwardedFor: string,
): Promise<{ cookie: string; csrf: string; html: string; res: Response }> {
  const res = await fetch(`${base}/dashboard/login`, { headers: { 'x-forwarded-for': forwardedFor } });
  const html = await res.text();
  recordCaptured('http', html);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!csrf) throw new Error(`no CSRF token on the login page (HTTP ${res.status})`);
  return { cookie: cookiesOf(res), csrf, html, res };
}

/** POST the login form (fields user, password, _csrf) as a client behind the proxy. */
export async function postLogin(base: string, forwardedFor: string, user: string, password: string): Promise<Response> {
  const form = await loginForm(base, forwardedFor);
  const res = await fetch(`${base}/dashboard/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: form.cookie,
      origin: base,
      'x-forwarded-for': forwardedFor,
    },
    body: new URLSearchParams({ user, password, _csrf: form.csrf }),
  });
  recordCaptured('http', await res.clone().text());
  return res;
}

export function sessionCookie(res: Response): string {
  const c = res.headers
    .getSetCookie()
    .map((x) => x.split(';')[0]!)
    .find((x) => x.startsWith('fm_session=') && x !== 'fm_session=');
  if (!c) throw new Error(`no session cookie (HTTP ${res.status})`);
  return c;
}
