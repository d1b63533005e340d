import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingEvents } from '../support/events.ts';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { freshDatabase } from '../support/services.ts';
import { startSmtpCapture, type SmtpCapture } from '../support/smtp.ts';
import { recordCaptured, registerSecretForAudit } from '../support/capture.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { getTokenInfo, loadToken } from '../../src/store/tokens.ts';
import { getAccount } from '../../src/store/accounts.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import { createLogger } from '../../src/util/logger.ts';
import { DAY, HOUR } from '../../src/util/clock.ts';
import { createMailer } from '../../src/alerts/mailer.ts';
import { runExpirySweep, alertReauthRequired } from '../../src/alerts/sweep.ts';
import { createApp } from '../../src/http/app.ts';
import { AccountLifecycle } from '../../src/accounts/lifecycle.ts';
import { refreshAccountToken, type TokenRefreshDeps } from '../../src/accounts/token-refresh.ts';
import type pg from 'pg';
import { noSleep, simPlatformClient } from '../support/sim-platform.ts';

/**
 * The whole life of a token: login through /connect and /callback on the simulator,
 * refresh refused before 24 hours, refreshed at 30 days, then a refresh failing for weeks leads to
 * exactly one email at 14, 7, 3 and 1 days left and none in between. Time moves through the
 * simulator's clock, which is also the app's clock; nothing sleeps.
 */
describe('token lifecycle end to end (R-TOK-1..10)', () => {
  let sim: Simulator;
  let db: pg.Pool;
  let drop: () => Promise<void>;
  let smtp: SmtpCapture;
  let server: Server;
  let baseUrl: string;
  let cipher: TokenCipher;
  let platform: PlatformClient;
  let accountId: string;
  const logger = createLogger({ name: 'token-lifecycle' });
  const reauthCalls: string[] = [];

  beforeAll(async () => {
    sim = await startSimulator({ start: Date.UTC(2026, 2, 1, 9) });
    const acc = sim.createAccount({ username: 'bakery', posts: 3 });
    accountId = acc.id;
    sim.autoApprove = acc.id;
    const database = await freshDatabase('lifecycle');
    drop = database.drop;
    db = createPool(database.url, { logger });
    await migrate(db, { logger });
    const key = randomBytes(32).toString('base64');
    registerSecretForAudit(key);
    cipher = TokenCipher.fromEnv(key);
    smtp = await startSmtpCapture();
    platform = simPlatformClient(sim, { appId: sim.appId, appSecret: sim.appSecret, logger, sleep: noSleep });
    // The redirect_uri is this server's own address: listen first, then mount the app on it.
    server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const app = createApp({
      logger,
      connect: {
        db,
        cipher,
        platform,
        clock: sim.clock,
        logger,
        appId: sim.appId,
        authorizeUrl: sim.authorizeUrl,
        publicUrl: baseUrl,
        open: true,
      }, // self-service (CONNECT_OPEN=true); invitations: test/security
    });
    server.on('request', app);
  });

  afterAll(async () => {
    server?.close();
    await smtp?.close();
    await db?.end();
    await drop?.();
    await sim?.close();
  });

  const mailer = () =>
    createMailer(
      {
        SMTP_URL: smtp.url,
        ALERT_EMAIL_TO: 'ops@example.test',
        ALERT_EMAIL_FROM: 'feedmirror@example.test',
        OUTBOX_DIR: '/nonexistent',
      },
      logger,
      { clock: sim.clock },
    );
  const sweepDeps = () => ({
    db,
    mailer: mailer(),
    clock: sim.clock,
    logger,
    publicUrl: baseUrl,
    events: collectingEvents(),
  });
  const refreshDeps = (): TokenRefreshDeps => ({
    db,
    cipher,
    platform,
    clock: sim.clock,
    logger,
    // The lifecycle's effects: unscheduling happens exactly on the reauth transitions (R-TOK-10).
    lifecycle: new AccountLifecycle({
      db,
      clock: sim.clock,
      logger,
      schedules: { schedule: async () => undefined, unschedule: async (id) => void reauthCalls.push(id) },
      alertReauth: (id) => alertReauthRequired(sweepDeps(), id),
    }),
  });

  async function follow(url: string): Promise<Response> {
    const res = await fetch(url, { redirect: 'manual' });
    // Only feedmirror's own responses are audited: the platform's redirect to /callback carries
    // the login code by design (OAuth), which is not ours to hide.
    if (url.startsWith(baseUrl)) recordCaptured('http', `${res.status} ${res.headers.get('location') ?? ''}`);
    return res;
  }

  async function login(): Promise<Response> {
    const toPlatform = await follow(`${baseUrl}/connect`);
    const toCallback = await follow(toPlatform.headers.get('location')!);
    const res = await fetch(toCallback.headers.get('location')!);
    recordCaptured('http', await res.clone().text());
    return res;
  }

  it('connects through /connect and /callback, storing the long-lived token and its absolute expiry (R-TOK-1, R-TOK-4, R-TOK-12)', async () => {
    const toPlatform = await follow(`${baseUrl}/connect`);
    expect(toPlatform.status).toBe(302);
    const authorize = new URL(toPlatform.headers.get('location')!);
    expect(authorize.searchParams.get('scope')).toBe('instagram_business_basic');
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${baseUrl}/callback`);
    const toCallback = await follow(authorize.toString());
    expect(toCallback.status).toBe(302);
    const callbackUrl = toCallback.headers.get('location')!;
    const done = await fetch(callbackUrl);
    const html = await done.text();
    recordCaptured('http', html);
    expect(done.status, html).toBe(200);
    expect(html).toContain('@bakery is connected');

    const info = await getTokenInfo(db, accountId);
    expect(info).not.toBeNull();
    // R-TOK-4: now + expires_in (60 days), from the injected clock.
    expect(Math.abs(info!.expiresAt.getTime() - (sim.clock.now().getTime() + 60 * DAY))).toBeLessThan(2 * DAY);
    const exchange = sim.requests.filter((r) => r.path.endsWith('/access_token') && r.host === 'graph');
    expect(exchange).toHaveLength(1);
    expect(exchange[0]!.query.grant_type).toBe('ig_exchange_token');
    expect(exchange[0]!.query.client_secret).toBe(sim.appSecret);

    // Replaying the same callback is refused: the state is single use.
    const replay = await fetch(callbackUrl);
    const replayHtml = await replay.text();
    recordCaptured('http', replayHtml);
    expect(replay.status).toBe(400);
    expect(replayHtml).toMatch(/already used/);
  });

  it('a forged state gets a plain page that says what happened', async () => {
    const res = await fetch(`${baseUrl}/callback?code=abc&state=forged`);
    const html = await res.text();
    recordCaptured('http', html);
    expect(res.status).toBe(400);
    expect(html).toMatch(/does not match any connect request/);
  });

  it('does not refresh before 24 hours and leaves the stored token unchanged (R-TOK-5)', async () => {
    const before = await loadToken(db, cipher, accountId);
    sim.clock.advance(2 * HOUR);
    const outcome = await refreshAccountToken(refreshDeps(), { accountId, force: true });
    expect(outcome.outcome).toBe('not-due');
    const after = await loadToken(db, cipher, accountId);
    expect(after).toEqual(before);
    expect(sim.requests.filter((r) => r.path.endsWith('/refresh_access_token'))).toHaveLength(0);
  });

  it('refreshes at 30 days and stores the new expiry, without the app secret (R-TOK-2, R-TOK-6, R-TOK-8)', async () => {
    sim.clock.advance(29 * DAY);
    // A check with nothing to do (most of them: every six hours, a refresh every 30 days) reads
    // the account and the token's metadata, and takes no lock: no connection checked out, no
    // transaction (the lock's four round trips were most of a check's cost).
    const statements: string[] = [];
    let checkouts = 0;
    const counted = new Proxy(db, {
      get(t, k, r) {
        if (k === 'query') return (text: string, values?: unknown[]) => (statements.push(text), t.query(text, values));
        if (k === 'connect') return (checkouts++, t.connect.bind(t));
        const v = Reflect.get(t, k, r) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
    expect((await refreshAccountToken({ ...refreshDeps(), db: counted }, { accountId })).outcome).toBe('not-due');
    expect(statements).toHaveLength(2);
    expect(checkouts).toBe(0);
    sim.clock.advance(1 * DAY);
    const before = await getTokenInfo(db, accountId);
    const outcome = await refreshAccountToken(refreshDeps(), { accountId });
    expect(outcome.outcome).toBe('refreshed');
    const after = await getTokenInfo(db, accountId);
    expect(after!.generation).toBe(before!.generation + 1);
    expect(after!.expiresAt.getTime()).toBeGreaterThan(before!.expiresAt.getTime() + 25 * DAY);
    const refreshes = sim.requests.filter((r) => r.path.endsWith('/refresh_access_token'));
    expect(refreshes).toHaveLength(1);
    expect(refreshes.every((r) => !('client_secret' in r.query))).toBe(true);
  });

  it('a refresh failing for weeks keeps the token and sends exactly one email at 14, 7, 3 and 1 days left (R-TOK-7, R-TOK-9)', async () => {
    sim.injectFault({ path: '/refresh_access_token', kind: 'status', status: 500, times: Infinity });
    const stored = await loadToken(db, cipher, accountId);
    const expiresAt = stored!.expiresAt;
    const emailsByDaysLeft = new Map<number, number>();
    let outcomes = 0;
    // Daily: one refresh check and one sweep, from the refresh's due date until the token expires.
    sim.clock.set(stored!.obtainedAt.getTime() + 30 * DAY);
    while (sim.clock.now().getTime() < expiresAt.getTime()) {
      const o = await refreshAccountToken(refreshDeps(), { accountId });
      if (o.outcome === 'failed') outcomes++;
      const before = smtp.messages.length;
      await runExpirySweep(sweepDeps());
      const daysLeft = Math.floor((expiresAt.getTime() - sim.clock.now().getTime()) / DAY);
      const sent = smtp.messages.length - before;
      if (sent) emailsByDaysLeft.set(daysLeft, sent);
      sim.clock.advance(DAY);
    }
    expect(outcomes).toBeGreaterThan(20); // retried daily while the token lived
    expect(await loadToken(db, cipher, accountId)).toEqual(stored); // R-TOK-7
    expect([...emailsByDaysLeft.entries()]).toEqual([
      [13, 1],
      [6, 1],
      [2, 1],
      [0, 1],
    ]);
    for (const m of smtp.messages) {
      recordCaptured('email', m.raw);
      expect(m.subject).toMatch(/bakery/);
      expect(m.text).toContain(expiresAt.toISOString().slice(0, 10));
      expect(m.text).toContain(`${baseUrl}/dashboard`);
    }
  });

  it('a changed password marks the account reauth_required, stops refreshing and alerts at once (R-TOK-10)', async () => {
    sim.clearFaults();
    // The token above has run out; the owner logs in again, which revives the account.
    const again = await login();
    expect(again.status).toBe(200);
    expect((await getAccount(db, accountId))!.status).toBe('active');
    sim.clock.advance(25 * HOUR);
    sim.setPasswordChanged(accountId, true);
    const before = smtp.messages.length;
    const o = await refreshAccountToken(refreshDeps(), { accountId, force: true });
    expect(o.outcome).toBe('reauth-required');
    expect((await getAccount(db, accountId))!.status).toBe('reauth_required');
    expect(reauthCalls).toEqual([accountId]);
    expect(smtp.messages.length).toBe(before + 1);
    const mail = smtp.messages.at(-1)!;
    recordCaptured('email', mail.raw);
    expect(mail.text).toMatch(/password/i);
    // No further calls to the platform for this account.
    const calls = sim.requests.length;
    expect((await refreshAccountToken(refreshDeps(), { accountId, force: true })).outcome).toBe('skipped');
    expect(sim.requests.length).toBe(calls);
  });
});
