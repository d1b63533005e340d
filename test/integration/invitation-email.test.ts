import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { recordCaptured } from '../support/capture.ts';
import { closedPort, freePort } from '../support/closed-port.ts';
import { memoryIO } from '../support/memory-io.ts';
import { parseMessage, startSmtpCapture, type SmtpCapture } from '../support/smtp.ts';
import {
  cookiesOf,
  nonLoopbackAddress,
  startServeForTest,
  type ServedForTest,
  operatorSession,
  stopServe,
} from '../security/support.ts';
import { platformEnv, simulatorEnv } from '../support/worker-env.ts';

/**
 * Invitations emailed by feedmirror itself (R-OWN-10): `feedmirror accounts invite --owner-email …
 * --send` and the dashboard's "email it to the owner", through the alerts' mailer (a real SMTP
 * server here; the outbox without SMTP_URL) and the `owner-invitation` template (R-EML-1). The
 * email carries the link, until when and whom it is for, nothing secret; the invitation row
 * records it and the dashboard's list says so. Bad input and a mail that cannot go are one line
 * (or one flash), and the link is still there to copy.
 */
const OWNER = 'jane@bakery.example';
let sim: Simulator;
let smtp: SmtpCapture;
let s: ServedForTest;
let env: Record<string, string>;
let outbox: string;

async function cli(args: string[], over: Record<string, string | undefined> = {}) {
  const merged: Record<string, string> = { ...env };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) delete merged[k];
    else merged[k] = v;
  }
  const io = memoryIO({ env: merged });
  const code = await main(args, io);
  return { code, out: io.out(), err: io.err() };
}

const invitations = async () =>
  (
    await s.ctx.db.query<{
      owner_email: string | null;
      emailed_to: string | null;
      emailed_at: Date | null;
      emailed_via: string | null;
    }>('SELECT owner_email, emailed_to, emailed_at, emailed_via FROM invitations ORDER BY created_at, token_hash')
  ).rows;

/** Follow an invitation link through the simulator's login (auto-approved) to the callback page. */
async function connectWith(url: string, accountId: string): Promise<{ status: number; text: string }> {
  sim.autoApprove = accountId;
  const start = await fetch(url, { redirect: 'manual', headers: { 'x-forwarded-for': '198.51.100.40' } });
  if (start.status !== 302) return { status: start.status, text: await start.text() };
  const toCallback = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const done = await fetch(toCallback.headers.get('location')!, { redirect: 'manual' });
  const text = await done.text();
  recordCaptured('http', text);
  return { status: done.status, text };
}

const escapeHtml = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

beforeAll(async () => {
  sim = await startSimulator();
  smtp = await startSmtpCapture();
  outbox = mkdtempSync(join(tmpdir(), 'fm-invitemail-outbox-'));
  const port = await freePort('0.0.0.0');
  s = await startServeForTest('invite-mail', {
    PORT: String(port),
    PUBLIC_URL: `http://${nonLoopbackAddress()}:${port}`,
    TRUST_PROXY: '1',
    ...simulatorEnv(sim),
    SMTP_URL: smtp.url,
    ALERT_EMAIL_TO: 'ops@example.com',
    ALERT_EMAIL_FROM: 'feeds@northwind.example',
    OUTBOX_DIR: outbox,
    BRAND_NAME: 'Northwind Feeds',
    BRAND_SUPPORT_EMAIL: 'help@northwind.example',
    HTTP_MAX_RETRIES: '0',
  });
  env = { ...s.env, LOG_LEVEL: 'silent' };
}, 60_000);

afterAll(async () => {
  await stopServe(s);
  await sim?.close();
  await smtp?.close();
  if (outbox) await rm(outbox, { recursive: true, force: true });
});

describe('feedmirror accounts invite --send (R-OWN-10, R-EML-1)', () => {
  it('emails the invitation through SMTP: the link, until when, whom it is for; the row records it; the link connects with its owner', async () => {
    const before = smtp.messages.length;
    const r = await cli(['accounts', 'invite', '--owner-email', OWNER, '--owner-name', 'Jane', '--send']);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toBe('');
    const [url, line] = r.out.trimEnd().split('\n');
    // The first line is the link, as before: scripts reading it keep working.
    expect(url).toMatch(new RegExp(`^${env.PUBLIC_URL!.replace(/[.]/g, '\\.')}/connect\\?invite=[A-Za-z0-9_-]{43}$`));
    expect(line).toMatch(
      /^works once, until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z; emailed to jane@bakery\.example \(recorded as the account's owner when it connects\)$/,
    );
    const mails = smtp.messages.slice(before);
    expect(mails).toHaveLength(1);
    const mail = mails[0]!;
    expect(mail.to).toEqual([OWNER]);
    expect(mail.from).toBe('feeds@northwind.example');
    expect(mail.subject).toBe('Northwind Feeds: connect your account to show your posts on your website');
    // Both parts carry the whole link (its ?invite= survives the mailer's redaction guard).
    expect(mail.text).toContain(`\n${url}\n`);
    expect(mail.html).toContain(`href="${escapeHtml(url!)}"`);
    const expires = /until (\S+);/.exec(line!)![1]!;
    const human = new Date(expires).toLocaleDateString('en-GB', {
      weekday: 'long',
      day: 'numeric',
      month: 'long',
      year: 'numeric',
      timeZone: 'UTC',
    });
    for (const part of [mail.text, mail.html]) {
      expect(part).toContain('Hello Jane,');
      expect(part).toContain(`This invitation is for ${OWNER}.`);
      expect(part).toContain(`The link works once, until ${human}`);
      expect(part).toContain('help@northwind.example');
      // Nothing secret: neither the app secret nor a platform token nor the alerts' address.
      expect(part).not.toContain(sim.appSecret);
      expect(part).not.toMatch(/access_token|client_secret/);
      expect(part).not.toContain('ops@example.com');
    }
    const rows = await invitations();
    expect(rows.at(-1)).toMatchObject({ owner_email: OWNER, emailed_to: OWNER, emailed_via: 'smtp' });
    expect(rows.at(-1)!.emailed_at).toBeInstanceOf(Date);

    // The owner follows the emailed link: the account connects with them as its owner.
    const acc = sim.createAccount({ username: 'janes.bakery', posts: 1 });
    const done = await connectWith(url!, acc.id);
    expect(done.status, done.text).toBe(200);
    expect(done.text).toContain('@janes.bakery is connected');
    const shown = await cli(['accounts', 'show', acc.id, '--json']);
    expect((JSON.parse(shown.out) as { owner: { email: string; name: string } }).owner).toMatchObject({
      email: OWNER,
      name: 'Jane',
    });
  });

  it('--json names whether it was emailed; without --send nothing is emailed and the output is as before', async () => {
    const sent = await cli(['accounts', 'invite', '--owner-email', OWNER, '--send', '--json']);
    expect(sent.code, sent.err).toBe(0);
    const j = JSON.parse(sent.out) as Record<string, unknown> & { email: Record<string, unknown> };
    expect(Object.keys(j)).toEqual(['url', 'expiresAt', 'owner', 'app', 'emailed', 'email']);
    // Invited through the default app (APP_ID/APP_SECRET): no app was named.
    expect(j.app).toBe('default');
    expect(j).toMatchObject({ emailed: true, owner: { email: OWNER, name: null } });
    expect(j.email).toEqual({ to: OWNER, at: expect.stringMatching(/Z$/), via: 'smtp' });

    const before = smtp.messages.length;
    const plain = await cli(['accounts', 'invite', '--owner-email', OWNER]);
    expect(plain.code, plain.err).toBe(0);
    expect(plain.out).toMatch(
      /^http\S+\/connect\?invite=\S+\nworks once, until \S+; send it to the account's owner \(jane@bakery\.example, recorded as the account's owner when it connects\)\n$/,
    );
    const quiet = await cli(['accounts', 'invite', '--json']);
    expect(JSON.parse(quiet.out)).toMatchObject({ owner: null, emailed: false, email: null });
    expect(smtp.messages.length).toBe(before);
    expect((await invitations()).at(-1)).toMatchObject({ emailed_to: null, emailed_via: null });
  });

  it('bad input is refused as before (the usage error naming what is wrong), exit 2: nothing is made or sent', async () => {
    const rows = (await invitations()).length;
    const before = smtp.messages.length;
    for (const [args, message] of [
      [['--owner-email', `${OWNER}\r\nBcc: victim@example.com`, '--send'], /the owner email must be an address/],
      [['--owner-email', `${'j'.repeat(250)}@example.com`, '--send'], /longer than 254 characters/],
      [['--send'], /^--send needs --owner-email/],
      [['--owner-name', 'Jane', '--send'], /^--owner-name needs --owner-email/],
    ] as const) {
      const r = await cli(['accounts', 'invite', ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toMatch(message);
      expect(r.out).toBe('');
    }
    expect((await invitations()).length).toBe(rows);
    expect(smtp.messages.length).toBe(before);
  });

  it('no SMTP_URL: one line says the email was only written to the outbox; the link is printed to send; --json says emailed: false', async () => {
    const before = smtp.messages.length;
    const r = await cli(['accounts', 'invite', '--owner-email', OWNER, '--send'], { SMTP_URL: undefined });
    expect(r.code, r.err).toBe(0);
    const [url] = r.out.split('\n');
    expect(url).toMatch(/\/connect\?invite=[A-Za-z0-9_-]{43}$/);
    expect(r.out).toContain("send it to the account's owner (jane@bakery.example");
    const lines = r.err.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^not emailed: SMTP_URL is not set, so the invitation email was written to ${outbox}/\\S+\\.eml instead; send the link above to jane@bakery\\.example$`,
      ),
    );
    expect(smtp.messages.length).toBe(before);
    // The .eml holds the same email, link whole.
    const eml = parseMessage(readFileSync(/written to (\S+\.eml)/.exec(lines[0]!)![1]!, 'utf8'));
    expect(eml.text).toContain(`\n${url}\n`);
    expect((await invitations()).at(-1)).toMatchObject({ emailed_to: OWNER, emailed_via: 'outbox' });

    const j = await cli(['accounts', 'invite', '--owner-email', OWNER, '--send', '--json'], { SMTP_URL: undefined });
    expect(j.code).toBe(0);
    expect(JSON.parse(j.out)).toMatchObject({
      emailed: false,
      email: { to: OWNER, via: 'outbox', path: expect.stringMatching(/\.eml$/) },
    });
  });

  it('the mail server refuses: exit 1, one line, the link printed to send by hand and not recorded as emailed', async () => {
    smtp.failNext(1);
    const r = await cli(['accounts', 'invite', '--owner-email', OWNER, '--send']);
    expect(r.code).toBe(1);
    expect(r.out.split('\n')[0]).toMatch(/\/connect\?invite=[A-Za-z0-9_-]{43}$/);
    const lines = r.err.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^not emailed: sending email through smtp:\/\/127\.0\.0\.1:\d+ failed: .*451/);
    expect(lines[0]).toMatch(/; send the link above to jane@bakery\.example$/);
    expect((await invitations()).at(-1)).toMatchObject({ owner_email: OWNER, emailed_to: null });
    const j = await cli(['accounts', 'invite', '--owner-email', OWNER, '--send', '--json'], {});
    expect(j.code).toBe(0); // the server answers again
  });

  it('a mail server that does not answer: exit 3 within seconds, one line, no invitation made', async () => {
    const rows = (await invitations()).length;
    const started = Date.now();
    const r = await cli(['accounts', 'invite', '--owner-email', OWNER, '--send'], {
      SMTP_URL: `smtp://127.0.0.1:${await closedPort()}`,
    });
    expect(r.code).toBe(3);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/cannot reach SMTP at 127\.0\.0\.1:\d+ \(ECONNREFUSED\); check SMTP_URL/);
    expect(r.out).toBe('');
    expect((await invitations()).length).toBe(rows);
  });
});

describe("the dashboard's invite form and list of invitations", () => {
  let cookie: string;
  const post = async (base: string, fields: Record<string, string>, session: string) => {
    const page = await fetch(`${base}/dashboard`, { headers: { cookie: session } });
    const html = await page.text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
    const res = await fetch(`${base}/dashboard/invitations`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: [session, cookiesOf(page)].filter(Boolean).join('; '),
        origin: base,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: csrf, expires: '7d', ...fields }),
    });
    const text = await res.text();
    recordCaptured('http', text);
    return { res, text };
  };
  const flashAfter = async (base: string, res: Response, session: string) => {
    expect(res.status).toBe(303);
    const next = await fetch(new URL(res.headers.get('location')!, base), {
      headers: { cookie: [session, cookiesOf(res)].join('; ') },
    });
    const html = await next.text();
    return /<p class="flash (\w+)" role="status">([^<]*)<\/p>/.exec(html)?.slice(1);
  };

  beforeAll(async () => {
    cookie = await operatorSession(s, '198.51.100.41');
  });

  it('"email it" without an address, or with a CRLF in it: one error flash, nothing made', async () => {
    const rows = (await invitations()).length;
    const none = await post(s.url, { send: 'email' }, cookie);
    expect(await flashAfter(s.url, none.res, cookie)).toEqual([
      'error',
      'Invitation not created: emailing it needs the owner&#39;s email.',
    ]);
    const crlf = await post(s.url, { send: 'email', owner_email: `${OWNER}\r\nBcc: x@example.com` }, cookie);
    expect(await flashAfter(s.url, crlf.res, cookie)).toEqual([
      'error',
      'Invitation not created: the owner email must be an address like name@example.com.',
    ]);
    expect((await invitations()).length).toBe(rows);
  });

  it('the list of invitations says which were emailed (to whom, when), written to the outbox, or only shown', async () => {
    const page = await fetch(`${s.url}/dashboard`, { headers: { cookie } });
    const html = await page.text();
    recordCaptured('http', html);
    const list = /<table class="invitations">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '';
    expect(list).toContain('<th>Email</th>');
    // The connected one is used; the newest come first.
    expect(list).toMatch(/data-invitation-state="used"[\s\S]*?emailed to jane@bakery\.example/);
    expect(list).toContain('data-emailed="smtp"');
    expect(list).toContain('data-emailed="outbox"');
    expect(list).toContain('not sent: written to the outbox for jane@bakery.example (no SMTP_URL)');
    expect(list).toContain('not emailed: the link was shown to copy');
    expect(list).not.toMatch(/invite=/); // the list never shows a link
  });

  it('a serve without SMTP_URL: "email it" says in one flash it was not sent, and the page shows the link to copy', async () => {
    const port = await freePort('0.0.0.0');
    const bare = await startServeForTest(
      'invite-mail-bare',
      {
        PORT: String(port),
        PUBLIC_URL: `http://${nonLoopbackAddress()}:${port}`,
        ...platformEnv(sim),
        OUTBOX_DIR: outbox,
      },
      { databaseUrl: s.env.DATABASE_URL!, redisPrefix: s.env.REDIS_PREFIX! },
    );
    try {
      const session = await operatorSession(bare, '198.51.100.42');
      const before = smtp.messages.length;
      const made = await post(bare.url, { send: 'email', owner_email: OWNER, owner_name: 'Jane' }, session);
      expect(made.res.status).toBe(200);
      expect(made.text).toContain('<h1>Invitation created</h1>');
      const flash = /<p class="flash (\w+)" role="status">([^<]*)<\/p>/.exec(made.text)!.slice(1);
      expect(flash).toEqual([
        'error',
        'Not emailed: SMTP_URL is not set, so the email was only written to the outbox (OUTBOX_DIR). Copy the link below and send it to jane@bakery.example.',
      ]);
      expect(made.text).toMatch(/<input id="invitation" readonly size="90" value="http[^"]+\/connect\?invite=[^"]+">/);
      expect(smtp.messages.length).toBe(before);
      expect((await invitations()).at(-1)).toMatchObject({ emailed_to: OWNER, emailed_via: 'outbox' });
    } finally {
      await bare.close();
    }
  }, 60_000);
});
