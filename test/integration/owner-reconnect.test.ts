import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { loadToken } from '../../src/store/tokens.ts';
import { DAY, FileClock, HOUR } from '../../src/util/clock.ts';
import { recordCaptured } from '../support/capture.ts';
import { startSmtpCapture, type SmtpCapture } from '../support/smtp.ts';
import { nonLoopbackAddress, startServeForTest, type ServedForTest, stopServe } from '../security/support.ts';
import { freePort } from '../support/closed-port.ts';
import { simulatorEnv } from '../support/worker-env.ts';
import { runCli } from '../support/cli.ts';

/**
 * The owner fixes their own connection, end to end: `feedmirror serve` with the simulator as the
 * platform, a real SMTP server and the CLI in-process on the same database. An account connected
 * by an invitation that carries its owner; its token revoked; the alert path (a sync that meets
 * code 190) mails the owner a one-time link and the operator a copy that says so; the link's
 * page and its Reconnect button; another account refused with nothing changed; the same account
 * reconnected and its feed published again; the link refused the second time and once expired.
 */
const T0 = Date.UTC(2026, 0, 10, 9, 0);
const OWNER = 'jane.owner@example.com';

let sim: Simulator;
let smtp: SmtpCapture;
let s: ServedForTest;
let clockFile: string;
let storageDir: string;
let env: Record<string, string>;

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  return runCli(args, env);
}

async function get(url: string, init: RequestInit = {}): Promise<{ res: Response; text: string }> {
  const res = await fetch(url, { redirect: 'manual', ...init });
  const text = await res.text();
  recordCaptured('http', text);
  return { res, text };
}

/** Press the page's Reconnect button and follow the simulator's login back to the callback page. */
async function reconnectAs(link: string, accountId: string): Promise<{ status: number; text: string }> {
  sim.autoApprove = accountId;
  const page = await get(link);
  if (page.res.status !== 200) return { status: page.res.status, text: page.text };
  const confirm = /name="confirm" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
  const origin = new URL(env.PUBLIC_URL!).origin;
  const post = await get(link, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
    body: new URLSearchParams({ confirm }),
  });
  if (post.res.status !== 303) return { status: post.res.status, text: post.text };
  const toCallback = await fetch(post.res.headers.get('location')!, { redirect: 'manual' });
  const done = await get(toCallback.headers.get('location')!);
  return { status: done.res.status, text: done.text };
}

const count = async (sql: string, params: unknown[] = []) =>
  Number((await s.ctx.db.query<{ n: string }>(sql, params)).rows[0]!.n);

beforeAll(async () => {
  sim = await startSimulator({ start: T0 });
  smtp = await startSmtpCapture();
  clockFile = join(mkdtempSync(join(tmpdir(), 'fm-owner-clock-')), 'now');
  FileClock.write(clockFile, T0);
  storageDir = mkdtempSync(join(tmpdir(), 'fm-owner-storage-'));
  const port = await freePort('0.0.0.0');
  s = await startServeForTest('owner-reconnect', {
    PORT: String(port),
    PUBLIC_URL: `http://${nonLoopbackAddress()}:${port}`,
    TRUST_PROXY: '1',
    ...simulatorEnv(sim),
    MEDIA_PUBLIC_URL: 'http://media.example.test/',
    MEDIA_VARIANT_WIDTHS: '160',
    STORAGE_URL: storageDir,
    SMTP_URL: smtp.url,
    ALERT_EMAIL_TO: 'ops@example.com',
    OWNER_ALERTS: 'on',
    PUBLISH_STATUS: 'on',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    FEEDMIRROR_CLOCK_FILE: clockFile,
    HTTP_MAX_RETRIES: '0',
  });
  env = s.env;
}, 60_000);

afterAll(async () => {
  await stopServe(s);
  await sim?.close();
  await smtp?.close();
  if (storageDir) await rm(storageDir, { recursive: true, force: true });
});

describe('an owner reconnects their own account from the alert', () => {
  let accountId: string;
  let username: string;
  let link: string;

  it('R-OWN-10: an invitation carrying the owner connects the account with that owner; accounts show --json has it', async () => {
    // A receiver for the events (none is delivered here: the outbox rows are what is checked).
    expect((await cli(['webhooks', 'add', 'http://127.0.0.1:9/hooks'])).code).toBe(0);
    const bad = await cli(['accounts', 'invite', '--owner-email', 'not-an-address']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--owner-email.*name@example\.com/);

    const inv = await cli(['accounts', 'invite', '--owner-email', OWNER, '--owner-name', 'Jane Doe', '--json']);
    expect(inv.code, inv.err).toBe(0);
    const { url, owner } = JSON.parse(inv.out) as { url: string; owner: { email: string } };
    expect(owner.email).toBe(OWNER);
    const acc = sim.createAccount({ username: 'janes.bakery', posts: 3 });
    accountId = acc.id;
    username = acc.username;
    sim.autoApprove = acc.id;
    const start = await fetch(url, { redirect: 'manual', headers: { 'x-forwarded-for': '198.51.100.7' } });
    const back = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const done = await get(back.headers.get('location')!);
    expect(done.res.status, done.text).toBe(200);

    const shown = await cli(['accounts', 'show', accountId, '--json']);
    expect(JSON.parse(shown.out).owner).toEqual({ name: 'Jane Doe', email: OWNER, language: null, alerts: true });
    const listed = JSON.parse((await cli(['accounts', 'list', '--json'])).out) as Array<{ owner: unknown }>;
    expect(listed[0]!.owner).toEqual({ name: 'Jane Doe', email: OWNER, language: null, alerts: true });

    const first = await cli(['sync', accountId, '--wait', '--json']);
    expect(first.code, first.err).toBe(0);
  });

  it('R-OWN-11: a revoked token mails the owner a one-time link and the operator a copy that says the owner was told', async () => {
    sim.revokeTokens(accountId);
    const before = smtp.messages.length;
    const sync = await cli(['sync', accountId, '--wait']);
    expect(sync.code).not.toBe(0);
    const mails = smtp.messages.slice(before);
    const toOwner = mails.filter((m) => m.to.includes(OWNER));
    const toOperator = mails.filter((m) => m.to.includes('ops@example.com'));
    expect(toOwner).toHaveLength(1);
    expect(toOperator).toHaveLength(1);
    const mail = toOwner[0]!;
    expect(mail.subject).toContain(`@${username}`);
    const m = new RegExp(`${env.PUBLIC_URL!.replace(/[.]/g, '\\.')}/reconnect/([A-Za-z0-9_-]{43})`).exec(mail.text);
    expect(m, mail.text).not.toBeNull();
    link = m![0];
    expect(mail.html).toContain(`href="${link}"`);
    // The operator's copy: the owner told (address masked), when, and no link of theirs.
    const op = toOperator[0]!.text;
    expect(op).toContain('The owner (j***@example.com) was told on');
    expect(op).not.toContain(OWNER);
    expect(op).not.toContain('/reconnect/');
    const status = JSON.parse((await cli(['accounts', 'show', accountId, '--json'])).out) as { status: string };
    expect(status.status).toBe('reauth_required');
    // The owner's copy is claimed like the operator's: the sweep now sends neither again.
    expect((await cli(['check-expiry'])).code).toBe(0);
    expect(smtp.messages.length).toBe(before + 2);
  });

  it('R-OWN-15: the link opens the owner status page: state, why, last sync, the button; no secret; no-referrer, no-store', async () => {
    const { res, text } = await get(link);
    expect(res.status).toBe(200);
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(text).toContain(`@${username}`);
    expect(text).toContain('data-state="needs_owner"');
    // The token is refused: its days left would read as if the connection had weeks to go.
    expect(text).not.toContain('data-days-left');
    expect(text).toContain('<dd data-reason>The platform no longer accepts the connection.</dd>');
    expect(text).toContain('Last successful update');
    expect(text).toContain('<button type="submit">Reconnect');
    expect(text).not.toContain(OWNER);
    const stored = await loadToken(s.ctx.db, s.ctx.cipher, accountId);
    expect(text).not.toContain(stored!.accessToken);
    // The button needs the page's value and this origin.
    const forged = await get(link, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: new URLSearchParams({ confirm: 'x' }),
    });
    expect(forged.res.status).toBe(403);
  });

  it('R-OWN-13: consenting as ANOTHER account is refused with a clear page and changes nothing', async () => {
    const other = sim.createAccount({ username: 'someone.else', posts: 2 });
    const accountsBefore = await count('SELECT count(*) AS n FROM accounts');
    const tokenBefore = (
      await s.ctx.db.query('SELECT ciphertext, generation FROM tokens WHERE account_id = $1', [accountId])
    ).rows[0];
    const r = await reconnectAs(link, other.id);
    expect(r.status).toBe(403);
    expect(r.text).toContain('Wrong account');
    expect(r.text).toContain(`This link is for @${username} only, so nothing was changed.`);
    expect(await count('SELECT count(*) AS n FROM accounts')).toBe(accountsBefore);
    expect(await count('SELECT count(*) AS n FROM accounts WHERE id = $1', [other.id])).toBe(0);
    expect(await count('SELECT count(*) AS n FROM tokens WHERE account_id = $1', [other.id])).toBe(0);
    const tokenAfter = (
      await s.ctx.db.query('SELECT ciphertext, generation FROM tokens WHERE account_id = $1', [accountId])
    ).rows[0];
    expect(tokenAfter).toEqual(tokenBefore);
    const status = JSON.parse((await cli(['accounts', 'show', accountId, '--json'])).out) as { status: string };
    expect(status.status).toBe('reauth_required');
    // The link was not used up.
    expect((await get(link)).res.status).toBe(200);
  });

  it('R-OWN-13, R-OWN-14, R-OWN-16: the SAME account reconnects, the feed resumes, the events and the status document follow', async () => {
    // An hour later: the new token's expiry differs from the revoked one's (alerts are per token life).
    FileClock.write(clockFile, T0 + HOUR);
    sim.addPost(accountId, { kind: 'image', caption: 'fresh bread after reconnecting' });
    const r = await reconnectAs(link, accountId);
    expect(r.status, r.text).toBe(200);
    expect(r.text).toContain(`@${username} is connected again`);
    const shown = JSON.parse((await cli(['accounts', 'show', accountId, '--json'])).out) as { status: string };
    expect(shown.status).toBe('active');

    const sync = await cli(['sync', accountId, '--wait', '--json']);
    expect(sync.code, sync.err).toBe(0);
    const feed = await get(`${s.url}/feeds/${accountId}.json`);
    expect(feed.text).toContain('fresh bread after reconnecting');

    const events = (
      await s.ctx.db.query<{ event_type: string; body: string }>(
        'SELECT event_type, body FROM webhook_deliveries WHERE account_id = $1 ORDER BY created_at',
        [accountId],
      )
    ).rows;
    const types = events.map((e) => e.event_type);
    expect(types).toContain('account.owner_notified');
    expect(types).toContain('account.reconnected');
    for (const e of events.filter((x) => x.event_type.startsWith('account.'))) {
      expect(e.body).not.toContain(OWNER);
      expect(e.body).not.toContain('/reconnect/');
    }
    const reconnected = JSON.parse(events.find((e) => e.event_type === 'account.reconnected')!.body) as {
      data: { via: string };
    };
    expect(reconnected.data.via).toBe('reconnect_link');

    const status = await get(`${s.url}/status/${accountId}.json`);
    expect(status.res.status).toBe(200);
    const doc = JSON.parse(status.text) as Record<string, unknown>;
    expect(Object.keys(doc).sort()).toEqual(
      ['accountId', 'daysLeft', 'generatedAt', 'lastGoodSyncAt', 'staleSince', 'state', 'username'].sort(),
    );
    expect(doc).toMatchObject({ accountId, username, state: 'connected', staleSince: null });
    expect(status.text).not.toContain(OWNER);
    const stored = await loadToken(s.ctx.db, s.ctx.cipher, accountId);
    expect(status.text).not.toContain(stored!.accessToken);
  });

  it('R-OWN-13: the second use of the link is refused (410), by GET and by POST', async () => {
    const again = await get(link);
    expect(again.res.status).toBe(410);
    expect(again.text).toContain('already used');
    const post = await get(link, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ confirm: 'x' }),
    });
    expect(post.res.status).toBe(410);
    const unknown = await get(`${env.PUBLIC_URL}/reconnect/${'A'.repeat(43)}`);
    expect(unknown.res.status).toBe(404);
    expect(unknown.res.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('R-OWN-12: a link works until RECONNECT_LINK_TTL (14 days) has passed, then is refused (the injectable clock moved)', async () => {
    sim.revokeTokens(accountId);
    const before = smtp.messages.length;
    expect((await cli(['sync', accountId, '--wait'])).code).not.toBe(0);
    const mail = smtp.messages.slice(before).find((m) => m.to.includes(OWNER))!;
    const fresh = /\/reconnect\/[A-Za-z0-9_-]{43}/.exec(mail.text)![0];
    expect((await get(`${env.PUBLIC_URL}${fresh}`)).res.status).toBe(200);
    FileClock.write(clockFile, T0 + HOUR + 14 * DAY - 60_000);
    expect((await get(`${env.PUBLIC_URL}${fresh}`)).res.status).toBe(200);
    FileClock.write(clockFile, T0 + HOUR + 14 * DAY);
    const expired = await get(`${env.PUBLIC_URL}${fresh}`);
    expect(expired.res.status).toBe(410);
    expect(expired.text).toContain('expired');
    FileClock.write(clockFile, T0 + HOUR);
  });
  it('R-OWN-10: accounts set changes the owner, refuses a bad address in one line, and --clear-owner forgets the owner', async () => {
    const bad = await cli(['accounts', 'set', accountId, '--owner-email', 'jane@']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--owner-email.*name@example\.com/);
    const off = await cli(['accounts', 'set', accountId, '--owner-alerts', 'off', '--json']);
    expect(off.code, off.err).toBe(0);
    expect(JSON.parse(off.out).owner).toEqual({ name: 'Jane Doe', email: OWNER, language: null, alerts: false });
    // A new address without a name forgets the old person's name.
    const moved = await cli(['accounts', 'set', accountId, '--owner-email', 'new.owner@example.com', '--json']);
    expect(JSON.parse(moved.out).owner).toEqual({
      name: null,
      email: 'new.owner@example.com',
      language: null,
      alerts: false,
    });
    const cleared = await cli(['accounts', 'set', accountId, '--clear-owner', '--json']);
    expect(JSON.parse(cleared.out).owner).toBeNull();
    const missing = await cli(['accounts', 'set', '17841499999999999', '--owner-email', OWNER]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('no account with id 17841499999999999');
  });
});
