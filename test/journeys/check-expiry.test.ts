import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY } from '../../src/util/clock.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { openStage, type Stage } from './stage.ts';

/**
 * docs "Token lifecycle and alerts": `feedmirror check-expiry` runs the expiry sweep now, and the
 * worker runs it daily. Both send the same thing for a token close to expiry (R-TOK-9): an email
 * to ALERT_EMAIL_TO (a real SMTP server here) and a signed `token.expiring` webhook delivery (a
 * local receiver, allowed with WEBHOOK_ALLOW_PRIVATE as the docs say for local receivers). Each
 * threshold alerts once, so an event the CLI's sweep left out was lost for good.
 */
interface Delivery {
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('journey: check-expiry and the worker send the same email and token.expiring event', () => {
  let stage: Stage;
  let receiver: Server;
  const received: Delivery[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    stage = await openStage('expiry', { smtp: true, env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  });
  afterAll(async () => {
    await stage?.close();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  /** An account whose long-lived token expires in 10 days (too young for the platform to refresh). */
  async function accountExpiringSoon(username: string): Promise<{ id: string; expiresAt: string }> {
    const acc = stage.sim.createAccount({ username, posts: 1 });
    const token = stage.sim.issueLongLivedToken(acc.id);
    registerSecretForAudit(token);
    const expiresAt = new Date(stage.now().getTime() + 10 * DAY).toISOString();
    const add = await stage.cli(['accounts', 'add', '--long-lived', '--expires-at', expiresAt, '--json'], {
      stdin: token,
    });
    expect(add.code, add.stderr).toBe(0);
    return { id: acc.id, expiresAt };
  }

  function verified(d: Delivery, secret: string): boolean {
    const header = String(d.headers['feedmirror-signature'] ?? '');
    const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
    if (!t) return false;
    const expected = createHmac('sha256', secret).update(`${t}.${d.body}`).digest();
    return [...header.matchAll(/v1=([0-9a-f]{64})/g)].some((m) => timingSafeEqual(Buffer.from(m[1]!, 'hex'), expected));
  }

  it('an email and a signed token.expiring delivery from each path, the same in both', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/feedmirror`;
    // The signing secret is printed once, to the operator who adds the endpoint; it must appear in
    // nothing else (worker logs, emails, the sweep's output), which the secrets audit checks.
    const hook = await stage.cli(['webhooks', 'add', url, '--events', 'token.expiring', '--json'], {
      stdoutRevealsSecret: true,
    });
    expect(hook.code, hook.stderr).toBe(0);
    const { secret } = JSON.parse(hook.stdout) as { secret: string };
    registerSecretForAudit(secret);

    // The CLI's sweep, with no worker running yet.
    const first = await accountExpiringSoon('expiring.cli');
    const run = await stage.cli(['check-expiry', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { sent: unknown[] }).sent).toEqual([
      { accountId: first.id, kind: 'expiry', thresholdDays: 14 },
    ]);
    await stage.until(() => stage.smtp!.messages.length === 1, 'the CLI sweep email', 10_000);

    // The worker's daily sweep (queued when it starts) for a second account; it delivers both events.
    const second = await accountExpiringSoon('expiring.worker');
    await stage.startWorker();
    await stage.until(() => stage.smtp!.messages.length === 2, "the worker's sweep email", 30_000);
    await stage.until(() => received.length >= 2, 'both token.expiring deliveries', 30_000);

    // The emails: one each, the same text but for the account.
    const [cliMail, workerMail] = stage.smtp!.messages;
    expect(cliMail!.to).toEqual(['ops@example.test']);
    expect(workerMail!.to).toEqual(['ops@example.test']);
    const neutral = (text: string, acc: { id: string; expiresAt: string }, name: string) =>
      text.replaceAll(acc.id, '<id>').replaceAll(name, '<user>').replaceAll(acc.expiresAt.slice(0, 10), '<date>');
    expect(neutral(workerMail!.subject, second, 'expiring.worker')).toBe(
      neutral(cliMail!.subject, first, 'expiring.cli'),
    );
    expect(neutral(workerMail!.text, second, 'expiring.worker')).toBe(neutral(cliMail!.text, first, 'expiring.cli'));

    // The events: one each, signed, with the same data.
    expect(received).toHaveLength(2);
    const events = received.map((d) => {
      expect(verified(d, secret)).toBe(true);
      expect(d.headers['feedmirror-event']).toBe('token.expiring');
      return JSON.parse(d.body) as { type: string; data: Record<string, unknown> };
    });
    const byAccount = new Map(events.map((e) => [e.data.accountId, e]));
    expect(byAccount.get(first.id)?.data).toEqual({
      accountId: first.id,
      username: 'expiring.cli',
      thresholdDays: 14,
      expiresAt: first.expiresAt,
    });
    expect(byAccount.get(second.id)?.data).toEqual({
      accountId: second.id,
      username: 'expiring.worker',
      thresholdDays: 14,
      expiresAt: second.expiresAt,
    });

    // Once per threshold: sweeping again sends nothing, by either path.
    const again = await stage.cli(['check-expiry', '--json']);
    expect((JSON.parse(again.stdout) as { sent: unknown[] }).sent).toEqual([]);
  }, 180_000);
});
