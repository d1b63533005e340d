import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailer, type Mailer } from '../../src/alerts/mailer.ts';
import { runExpirySweep, alertReauthRequired, type SweepDeps } from '../../src/alerts/sweep.ts';
import { getAccount, setAccountStatus, upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { collectingEvents, listEvents } from '../support/events.ts';
import { loadToken, recordRefreshFailure, replaceTokenIfCurrent, saveToken } from '../../src/store/tokens.ts';
import { DAY, HOUR, ManualClock } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { registerSecret } from '../../src/util/redact.ts';
import type { SmtpCapture } from '../support/smtp.ts';
import { openAlertStage, type AlertStage } from '../support/alert-stage.ts';

const ENCRYPTION_KEY = randomBytes(32).toString('base64');
const cipher = TokenCipher.fromEnv(ENCRYPTION_KEY);
const PUBLIC_URL = 'https://feeds.example.com';
/** Every token this file stores: none may appear in an email or a log line. */
const tokens: string[] = [];
const newToken = () => {
  const t = `IGAA${randomBytes(30).toString('hex')}`;
  tokens.push(t);
  return t;
};

let stage: AlertStage;
let pool: pg.Pool;
let smtp: SmtpCapture;
let mailer: Mailer;
const logLines: string[] = [];
const logger = createLogger({ level: 'debug', destination: { write: (s: string) => void logLines.push(s) } });

beforeAll(async () => {
  stage = await openAlertStage('alertsweep', logger);
  ({ pool, smtp, mailer } = stage);
});
afterAll(async () => {
  await stage?.close();
});

let accountSeq = 0;
async function connectAccount(clock: ManualClock, expiresIn: number): Promise<{ id: string; username: string }> {
  const id = `1784${randomBytes(5).toString('hex')}`;
  const username = `shop${++accountSeq}`;
  await upsertAccount(pool, { id, username }, clock.now());
  await saveToken(
    pool,
    cipher,
    {
      accountId: id,
      accessToken: newToken(),
      obtainedAt: clock.now(),
      expiresAt: new Date(clock.now().getTime() + expiresIn),
    },
    'exchanged',
  );
  return { id, username };
}

function deps(clock: ManualClock, m: Pick<Mailer, 'send'> = mailer): SweepDeps {
  return { db: pool, mailer: m, clock, logger, publicUrl: PUBLIC_URL, events: collectingEvents() };
}

/** Daily sweeps; returns, per day, the alerts this account got. */
async function sweepDays(clock: ManualClock, accountId: string, days: number) {
  const out: Array<{ day: number; kind: string; thresholdDays: number }> = [];
  for (let day = 0; day <= days; day++) {
    const r = await runExpirySweep(deps(clock));
    for (const s of r.sent)
      if (s.accountId === accountId) out.push({ day, kind: s.kind, thresholdDays: s.thresholdDays });
    clock.advance(DAY);
  }
  return out;
}

const mailsFor = (username: string) => smtp.messages.filter((m) => m.subject.includes(`@${username}`));

describe('expiry sweep', () => {
  it('R-TOK-9: over 20 days of daily sweeps, exactly one email at 14, 7, 3 and 1 days left, none in between', async () => {
    const clock = new ManualClock(Date.UTC(2026, 2, 1, 9, 0));
    // Expires on day 20 at 15:00; sweeps run daily at 09:00.
    const acct = await connectAccount(clock, 20 * DAY + 6 * HOUR);
    const sent = await sweepDays(clock, acct.id, 20);
    expect(sent).toEqual([
      { day: 7, kind: 'expiry', thresholdDays: 14 },
      { day: 14, kind: 'expiry', thresholdDays: 7 },
      { day: 18, kind: 'expiry', thresholdDays: 3 },
      { day: 20, kind: 'expiry', thresholdDays: 1 },
    ]);
    const mails = mailsFor(acct.username);
    expect(mails).toHaveLength(4);
    expect(mails.map((m) => /expires (in [^(]+) \(/.exec(m.subject)?.[1]?.trim())).toEqual([
      'in 13 days',
      'in 6 days',
      'in 2 days',
      'in less than a day',
    ]);
    const first = mails[0]!;
    expect(first.from).toBe('feedmirror@example.com');
    expect(first.to).toEqual(['ops@example.com']);
    expect(first.subject).toContain('2026-03-21');
    expect(first.text).toContain(`${PUBLIC_URL}/dashboard`);
    expect(first.text).toContain(acct.id);
    expect(first.text).toContain('Saturday, 21 March 2026, 15:00 UTC');
    expect(first.html).toContain(`href="${PUBLIC_URL}/dashboard"`);
    // Logs carry the expiry date.
    expect(logLines.some((l) => l.includes('token expiry alert sent') && l.includes('2026-03-21T15:00:00.000Z'))).toBe(
      true,
    );
  });

  it('a worker that was down sends only the most urgent alert due, not a burst', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 9, 0));
    const acct = await connectAccount(clock, 2 * DAY + HOUR);
    const r = await runExpirySweep(deps(clock));
    expect(r.sent.filter((s) => s.accountId === acct.id)).toEqual([
      { accountId: acct.id, kind: 'expiry', thresholdDays: 3 },
    ]);
    expect(mailsFor(acct.username)).toHaveLength(1);
  });

  it('a refreshed token (new expiry) starts the thresholds afresh', async () => {
    const clock = new ManualClock(Date.UTC(2026, 6, 1, 9, 0));
    const acct = await connectAccount(clock, 10 * DAY);
    expect((await runExpirySweep(deps(clock))).sent.filter((s) => s.accountId === acct.id)).toEqual([
      { accountId: acct.id, kind: 'expiry', thresholdDays: 14 },
    ]);
    expect((await runExpirySweep(deps(clock))).sent.filter((s) => s.accountId === acct.id)).toEqual([]);
    // The refresh failed for a while, then succeeded with a fresh 60 days... which later run low again.
    const stored = (await loadToken(pool, cipher, acct.id))!;
    clock.advance(DAY);
    expect(
      await replaceTokenIfCurrent(pool, cipher, acct.id, stored.generation, {
        accessToken: newToken(),
        obtainedAt: clock.now(),
        expiresAt: new Date(clock.now().getTime() + 13 * DAY),
      }),
    ).toBe(true);
    const again = (await runExpirySweep(deps(clock))).sent.filter((s) => s.accountId === acct.id);
    expect(again).toEqual([{ accountId: acct.id, kind: 'expiry', thresholdDays: 14 }]);
    expect(mailsFor(acct.username)).toHaveLength(2);
  });

  it('mentions failing refreshes in the expiry email, redacted', async () => {
    const clock = new ManualClock(Date.UTC(2026, 7, 1, 9, 0));
    const acct = await connectAccount(clock, 5 * DAY);
    const leaked = newToken();
    await recordRefreshFailure(
      pool,
      acct.id,
      clock.now(),
      `HTTP 500 from https://graph.instagram.com/refresh_access_token?access_token=${leaked}`,
    );
    await runExpirySweep(deps(clock));
    const [mail] = mailsFor(acct.username);
    expect(mail!.text).toContain('the last 1 refresh attempt failed');
    expect(mail!.text).not.toContain(leaked);
  });

  it('R-TOK-10: a reauth_required account gets one reauth email per token life', async () => {
    const clock = new ManualClock(Date.UTC(2026, 8, 1, 9, 0));
    const acct = await connectAccount(clock, 40 * DAY);
    await setAccountStatus(pool, acct.id, 'reauth_required', 'the account password was changed', { at: clock.now() });
    expect(await alertReauthRequired(deps(clock), acct.id)).toEqual({
      accountId: acct.id,
      kind: 'reauth',
      thresholdDays: 0,
    });
    for (let d = 0; d < 5; d++) {
      clock.advance(DAY);
      await runExpirySweep(deps(clock));
    }
    const mails = mailsFor(acct.username);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.subject).toBe(`feedmirror: @${acct.username} must log in again`);
    expect(mails[0]!.text).toContain('the account password was changed');
    // The owner logs in again: new token, account active again; a later death alerts again.
    await saveToken(
      pool,
      cipher,
      {
        accountId: acct.id,
        accessToken: newToken(),
        obtainedAt: clock.now(),
        expiresAt: new Date(clock.now().getTime() + 60 * DAY),
      },
      'exchanged',
    );
    await setAccountStatus(pool, acct.id, 'active', null, { at: clock.now() });
    expect((await runExpirySweep(deps(clock))).sent.filter((s) => s.accountId === acct.id)).toEqual([]);
    await setAccountStatus(pool, acct.id, 'reauth_required', 'the app was removed by the user', { at: clock.now() });
    expect((await runExpirySweep(deps(clock))).sent.filter((s) => s.accountId === acct.id)).toEqual([
      { accountId: acct.id, kind: 'reauth', thresholdDays: 0 },
    ]);
  });

  it('R-TOK-10: a token past its expiry marks the account reauth_required (event expired) and sends the reauth email once', async () => {
    const clock = new ManualClock(Date.UTC(2026, 9, 1, 9, 0));
    const acct = await connectAccount(clock, 12 * HOUR);
    await runExpirySweep(deps(clock)); // the 1-day alert
    clock.advance(DAY);
    const [a, b] = await Promise.all([runExpirySweep(deps(clock)), runExpirySweep(deps(clock))]);
    const mine = [...a.sent, ...b.sent].filter((s) => s.accountId === acct.id);
    expect(mine).toEqual([{ accountId: acct.id, kind: 'reauth', thresholdDays: 0 }]);
    expect((await getAccount(pool, acct.id))!).toMatchObject({
      status: 'reauth_required',
      statusReason: 'the token expired on 2026-10-01',
    });
    expect((await listEvents(pool, acct.id)).filter((e) => e.kind === 'expired')).toHaveLength(1);
    const mails = mailsFor(acct.username);
    expect(mails.map((m) => m.subject)).toEqual([
      expect.stringContaining('in less than a day'),
      `feedmirror: @${acct.username} must log in again`,
    ]);
    expect(mails[1]!.text).toContain('the token expired on 2026-10-01');
    clock.advance(DAY);
    expect((await runExpirySweep(deps(clock))).sent.filter((s) => s.accountId === acct.id)).toEqual([]);
  });

  it('R-EML-1: an alert arrives through SMTP as multipart/alternative, text and HTML, branded, with no raw markup', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 15, 9, 0));
    const acct = await connectAccount(clock, 2 * DAY + HOUR);
    const brand = { name: 'Northwind Studio', accentColor: '#0f766e', supportEmail: 'help@northwind.example' };
    const r = await runExpirySweep({ ...deps(clock), brand });
    expect(r.sent.filter((s) => s.accountId === acct.id)).toHaveLength(1);
    const [mail] = mailsFor(acct.username);
    expect(mail!.raw).toMatch(/^Content-Type: multipart\/alternative;/im);
    expect(mail!.raw).toMatch(/^Content-Type: text\/plain; charset=utf-8/im);
    expect(mail!.raw).toMatch(/^Content-Type: text\/html; charset=utf-8/im);
    expect(mail!.subject).toBe(`Northwind Studio: the token of @${acct.username} expires in 2 days (2026-11-17)`);
    for (const part of [mail!.text, mail!.html]) {
      expect(part).toContain(`@${acct.username}`);
      expect(part).toContain('in 2 days');
      expect(part).toContain(`${PUBLIC_URL}/dashboard`);
      expect(part).toContain('help@northwind.example');
      expect(part).not.toContain('`');
      expect(part).not.toMatch(/\*\*\w/);
    }
    // The button: the dashboard link in a cell of the brand's colour.
    expect(mail!.html).toMatch(
      new RegExp(
        `<td style="[^"]*background-color:#0f766e;"><a href="${PUBLIC_URL}/dashboard"[^>]*>Open the dashboard</a>`,
      ),
    );
    expect(mail!.text).not.toMatch(/<[a-z]/i);
  });

  it('a failed send releases its claim; the next sweep retries', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 1, 9, 0));
    const acct = await connectAccount(clock, 6 * DAY);
    smtp.failNext(100);
    let r;
    try {
      r = await runExpirySweep(deps(clock));
    } finally {
      smtp.failNext(0);
    }
    expect(r.failed.map((f) => f.accountId)).toContain(acct.id);
    expect(r.sent.filter((s) => s.accountId === acct.id)).toEqual([]);
    expect(mailsFor(acct.username)).toHaveLength(0);
    const retry = await runExpirySweep(deps(clock));
    expect(retry.sent.filter((s) => s.accountId === acct.id)).toEqual([
      { accountId: acct.id, kind: 'expiry', thresholdDays: 7 },
    ]);
    expect(mailsFor(acct.username)).toHaveLength(1);
  });
});

describe('mailer', () => {
  it('outbox mode (no SMTP_URL) writes .eml files and logs their path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fm-outbox-'));
    try {
      const outbox = createMailer({ ALERT_EMAIL_FROM: 'feedmirror@localhost', OUTBOX_DIR: dir }, logger, {
        clock: new ManualClock(),
      });
      const clock = new ManualClock(Date.UTC(2026, 11, 1, 9, 0));
      const acct = await connectAccount(clock, 3 * DAY + HOUR);
      const r = await runExpirySweep(deps(clock, outbox));
      expect(r.sent.filter((s) => s.accountId === acct.id)).toEqual([
        { accountId: acct.id, kind: 'expiry', thresholdDays: 7 },
      ]);
      const files = (await readdir(dir)).filter((f) => f.endsWith('.eml'));
      expect(files.length).toBeGreaterThanOrEqual(1);
      const emls = await Promise.all(files.map((f) => readFile(join(dir, f), 'utf8')));
      const mine = emls.find((e) => e.includes(`@${acct.username}`))!;
      expect(mine).toMatch(/^To: operator@localhost$/m);
      expect(mine).toContain(`${PUBLIC_URL}/dashboard`);
      expect(logLines.some((l) => l.includes('written to the outbox') && files.some((f) => l.includes(f)))).toBe(true);
      for (const t of tokens) expect(emls.join('\n')).not.toContain(t);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('redacts subject and body as a last guard', async () => {
    const secret = `IGAA${randomBytes(20).toString('hex')}`;
    registerSecret(secret);
    tokens.push(secret);
    await mailer.send({
      subject: `leak ${secret}`,
      text: `see https://graph.instagram.com/me?access_token=${secret}`,
      html: `<p>${secret}</p>`,
    });
    const m = smtp.messages.at(-1)!;
    expect(m.subject).toBe('leak [redacted]');
    expect(m.text).toContain('https://graph.instagram.com/me?…');
    expect(m.html).toContain('[redacted]');
  });

  it('refuses SMTP_URL without ALERT_EMAIL_TO, clearly', () => {
    expect(() => createMailer({ SMTP_URL: smtp.url, ALERT_EMAIL_FROM: 'a@b.c', OUTBOX_DIR: '.' }, logger)).toThrow(
      /SMTP_URL is set but ALERT_EMAIL_TO is not/,
    );
  });
});

// Last in the file (vitest runs a file's tests in order): covers every email and log line above.
describe('R-TOK-11: secrets never leave', () => {
  it('no token and no encryption key in any captured email or log line', () => {
    expect(smtp.messages.length).toBeGreaterThan(10);
    expect(logLines.length).toBeGreaterThan(10);
    const everything = [...logLines, ...smtp.messages.map((m) => `${m.raw}\n${m.text}\n${m.html}\n${m.subject}`)].join(
      '\n',
    );
    for (const t of tokens) expect(everything).not.toContain(t);
    expect(everything).not.toContain(ENCRYPTION_KEY);
    expect(everything).not.toContain(Buffer.from(ENCRYPTION_KEY, 'base64').toString('hex'));
  });
});
