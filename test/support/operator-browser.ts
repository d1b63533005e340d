import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { BrowserContext, ConsoleMessage, Locator, Page, Response } from 'playwright-core';
import { expect } from 'vitest';
import { AppContext } from '../../src/cli/context.ts';
import { startServer, type RunningServer } from '../../src/cli/start/server.ts';
import { startWorkerFromContext, type RunningWorkerProcess } from '../../src/cli/start/worker.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createLogger } from '../../src/util/logger.ts';
import { recordCaptured, registerSecretForAudit } from './capture.ts';
import { freshDatabase, redisForTest } from './services.ts';
import { startSmtpCapture, type SmtpCapture } from './smtp.ts';
import { freePort } from './closed-port.ts';
import { CHROMIUM } from './chromium.ts';
import { simulatorEnv } from './worker-env.ts';

/**
 * The operator's dashboard as it runs: `feedmirror serve` and `feedmirror worker` built by the
 * composition root (startServer, startWorkerFromContext) in this process, with a database and a
 * Redis prefix of their own, the simulator as the platform (on the wall clock, like the server),
 * a real SMTP server, and local-folder storage served by serve itself (MEDIA_PUBLIC_URL =
 * PUBLIC_URL). Then Debian's Chromium (playwright-core; nothing downloads a browser) and the
 * checks every page and form gets: no Content-Security-Policy violation in the console, and
 * every hop of a form's submission allowed by the form-action of the page it was sent from.
 */
export { CHROMIUM, launchChromium } from './chromium.ts';
export const OPERATOR = 'operator';

export interface OperatorStack {
  url: string;
  password: string;
  sim: Simulator;
  smtp: SmtpCapture;
  ctx: AppContext;
  server: RunningServer;
  worker: RunningWorkerProcess | undefined;
  close(): Promise<void>;
}

export async function startOperatorStack(
  label: string,
  opts: { worker?: boolean; env?: Record<string, string> } = {},
): Promise<OperatorStack> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (this test never downloads a browser)`);
  const sim = await startSimulator({ start: Date.now() });
  const smtp = await startSmtpCapture();
  const db = await freshDatabase(label);
  const redis = redisForTest(label);
  const storageDir = await mkdtemp(path.join(os.tmpdir(), `feedmirror-${label}-`));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const password = `pw-${randomBytes(12).toString('base64url')}`;
  const key = randomBytes(32).toString('base64');
  registerSecretForAudit(password);
  registerSecretForAudit(key);
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    TOKEN_ENCRYPTION_KEY: key,
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: url,
    MEDIA_PUBLIC_URL: `${url}/`,
    STORAGE_URL: storageDir,
    DASHBOARD_USER: OPERATOR,
    DASHBOARD_PASSWORD: password,
    ...simulatorEnv(sim),
    MEDIA_VARIANT_WIDTHS: '320',
    SMTP_URL: smtp.url,
    ALERT_EMAIL_TO: 'ops@example.com',
    OWNER_ALERTS: 'on',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    HTTP_MAX_RETRIES: '0',
    HEAP_GROWTH_PERCENT: '0',
    LOG_LEVEL: 'info',
    ...opts.env,
  };
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      recordCaptured('log', chunk.toString('utf8'));
      cb();
    },
  });
  const ctx = new AppContext(env, { logger: createLogger({ level: 'info', destination: sink }) });
  const server = await startServer(ctx);
  const worker = opts.worker ? await startWorkerFromContext(ctx) : undefined;
  return {
    url,
    password,
    sim,
    smtp,
    ctx,
    server,
    worker,
    async close() {
      await worker?.close();
      await server.close();
      await ctx.close();
      await sim.close();
      await smtp.close();
      await db.drop();
      await rm(storageDir, { recursive: true, force: true });
    },
  };
}

/** What the browser reported against the CSP, by page: every page of every watched context. */
export interface CspWatch {
  violations: string[];
  /** Pages that showed a one-time secret: their bodies are not captured for the audit. */
  skipCapture: RegExp[];
}

const CSP_MESSAGE = /Content Security Policy|Content-Security-Policy/i;

/** The CSP of the document each page shows now (its last main-frame navigation's header). */
const pageCsp = new WeakMap<Page, { url: string; csp: string }>();

function watchPage(page: Page, watch: CspWatch): void {
  page.on('console', (m) => {
    if (CSP_MESSAGE.test(m.text())) watch.violations.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => {
    if (CSP_MESSAGE.test(e.message)) watch.violations.push(`${page.url()}: ${e.message}`);
  });
  page.on('response', (r) => {
    const req = r.request();
    if (req.isNavigationRequest() && req.frame() === page.mainFrame() && r.status() < 300)
      pageCsp.set(page, { url: r.url(), csp: r.headers()['content-security-policy'] ?? '' });
    const type = r.headers()['content-type'] ?? '';
    if (type.startsWith('text/') && !watch.skipCapture.some((re) => re.test(r.url())))
      void r
        .text()
        .then((t) => recordCaptured('http', t))
        .catch(() => undefined);
  });
}

/** Watch every page the context opens (and opened). */
export function watchContext(context: BrowserContext, watch: CspWatch): void {
  for (const p of context.pages()) watchPage(p, watch);
  context.on('page', (p) => watchPage(p, watch));
}

/** The sources a page's CSP allows for a directive ('self' stands for the page's origin). */
function sources(csp: string, directive: string): string[] | null {
  for (const part of csp.split(';')) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name === directive) return values;
  }
  return null;
}

function allowedBy(values: string[] | null, pageUrl: string, target: string): boolean {
  if (values === null) return true; // no form-action: nothing restricts it (default-src does not)
  const t = new URL(target);
  return values.some((v) => {
    if (v === "'self'") return t.origin === new URL(pageUrl).origin;
    if (v === "'none'") return false;
    if (/^[a-z]+:$/.test(v)) return t.protocol === v;
    return t.origin === new URL(v).origin || target.startsWith(v);
  });
}

/**
 * Press a form's submit button as the operator does and follow it to the page it leads to. Every
 * hop (the POST and each redirect) must be allowed by the form-action of the page the form was
 * on; the page reached is returned with its response.
 */
export async function submit(page: Page, button: Locator): Promise<Response> {
  const from = pageCsp.get(page);
  expect(from, `no CSP recorded for ${page.url()}`).toBeDefined();
  const formAction = sources(from!.csp, 'form-action');
  expect(formAction, `${from!.url} has no form-action`).not.toBeNull();
  // A submission the CSP blocks navigates nowhere: its console report ends the wait at once.
  let onConsole: ((m: ConsoleMessage) => void) | undefined;
  const blocked = new Promise<never>((_resolve, reject) => {
    onConsole = (m) => {
      if (CSP_MESSAGE.test(m.text())) reject(new Error(`the CSP blocked the form: ${m.text()}`));
    };
    page.on('console', onConsole);
  });
  let response: Response | null;
  try {
    [response] = await Promise.all([
      // A form post that may land on the URL it came from: waitForURL would return at once.
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      Promise.race([page.waitForNavigation({ waitUntil: 'load' }), blocked]),
      button.click(),
    ]);
  } finally {
    page.off('console', onConsole!);
  }
  expect(response, 'the form led nowhere').not.toBeNull();
  const hops: string[] = [];
  for (let r: ReturnType<Response['request']> | null = response!.request(); r; r = r.redirectedFrom())
    hops.unshift(`${r.method()} ${r.url()}`);
  expect(hops[0], 'the first hop is the form POST').toMatch(/^POST /);
  for (const hop of hops)
    expect(
      allowedBy(formAction, from!.url, hop.split(' ')[1]!),
      `${hop} against form-action ${formAction!.join(' ')}`,
    ).toBe(true);
  return response!;
}

/** Log in through the form; returns the page on the dashboard. */
export async function logIn(page: Page, stack: Pick<OperatorStack, 'url' | 'password'>): Promise<void> {
  await page.goto(`${stack.url}/dashboard/login`);
  await page.fill('#user', OPERATOR);
  await page.fill('#password', stack.password);
  const res = await submit(page, page.locator('button[type=submit]', { hasText: 'Log in' }));
  expect(res.status()).toBe(200);
  expect(new URL(page.url()).pathname).toBe('/dashboard');
}

/** The flash of the page shown now (the outcome of the last action), and its kind: ok, info or error. */
export async function flash(page: Page): Promise<{ kind: string; text: string }> {
  const f = page.locator('main .flash');
  expect(await f.count(), `no flash on ${page.url()}`).toBe(1);
  const kinds = ((await f.getAttribute('class')) ?? '').split(/\s+/).filter((c) => c !== 'flash');
  expect(kinds, 'one kind of flash').toHaveLength(1);
  return { kind: kinds[0]!, text: ((await f.textContent()) ?? '').trim() };
}

/**
 * The look of every button of the page's main part (outside a preview's widget): one signature
 * per distinct look, with the buttons that have it.
 */
export async function buttonLooks(page: Page): Promise<Map<string, string[]>> {
  const looks = await page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>('main button, main a.button')]
      .filter((b) => !b.closest('.fmw-w') && b.offsetParent !== null)
      .map((b) => {
        const s = getComputedStyle(b);
        const kind = b.classList.contains('primary') ? 'primary' : b.classList.contains('danger') ? 'danger' : 'plain';
        return {
          label: (b.textContent ?? '').trim(),
          look: [
            kind,
            kind === 'primary' ? s.backgroundColor : `bg ${s.backgroundColor}`,
            s.borderTopWidth,
            s.borderTopStyle,
            s.borderRadius,
            s.paddingTop,
            s.paddingLeft,
            s.fontSize,
            s.fontFamily,
          ].join(' | '),
        };
      }),
  );
  const out = new Map<string, string[]>();
  for (const l of looks) out.set(l.look, [...(out.get(l.look) ?? []), l.label]);
  return out;
}
