import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Mailer } from '../../src/alerts/mailer.ts';
import { runExpirySweep, type SweepDeps } from '../../src/alerts/sweep.ts';
import { publishAccountStatus, statusPublisher } from '../../src/accounts/status-document.ts';
import { AccountLifecycle, NO_SCHEDULES } from '../../src/accounts/lifecycle.ts';
import { markSynced, upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { findReconnectLink, linkState, setOwner } from '../../src/store/owners.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { createStorage } from '../../src/storage/index.ts';
import { statusKey } from '../../src/storage/keys.ts';
import { DAY, HOUR, ManualClock } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { collectingEvents } from '../support/events.ts';
import { ownStorage } from '../support/storage-owner.ts';
import type { SmtpCapture } from '../support/smtp.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { openAlertStage, type AlertStage } from '../support/alert-stage.ts';

/**
 * Owner alerts through the expiry sweep (R-OWN-11, R-OWN-12, R-OWN-14) against real PostgreSQL
 * and a real SMTP server, and the status document (R-OWN-16) on local storage.
 */
const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
const PUBLIC_URL = 'https://feeds.example.com';
const LINK_RE = /https:\/\/feeds\.example\.com\/reconnect\/([A-Za-z0-9_-]{43})/;

let stage: AlertStage;
let pool: pg.Pool;
let smtp: SmtpCapture;
let mailer: Mailer;
const logger = createLogger({ level: 'warn', destination: { write: () => undefined } });

beforeAll(async () => {
  stage = await openAlertStage('owneralerts', logger);
  ({ pool, smtp, mailer } = stage);
});
afterAll(async () => {
  await stage?.close();
});

let seq = 0;
async function connect(clock: ManualClock, expiresIn: number, owner?: string) {
  const id = `1785${randomBytes(5).toString('hex')}`;
  const username = `owned${++seq}`;
  await upsertAccount(pool, { id, username }, clock.now());
  const token = `IGAA${randomBytes(30).toString('hex')}`;
  registerSecretForAudit(token);
  await saveToken(
    pool,
    cipher,
    {
      accountId: id,
      accessToken: token,
      obtainedAt: clock.now(),
      expiresAt: new Date(clock.now().getTime() + expiresIn),
    },
    'exchanged',
  );
  if (owner) await setOwner(pool, id, { email: owner, name: 'Sam' }, clock.now());
  return { id, username, token };
}

function deps(
  clock: ManualClock,
  ownersOn: boolean,
  events = collectingEvents(),
): SweepDeps & { events: typeof events } {
  return {
    db: pool,
    mailer,
    clock,
    logger,
    publicUrl: PUBLIC_URL,
    events,
    owners: { enabled: ownersOn, linkTtlMs: 14 * DAY },
    brand: { name: 'Agency Feeds', supportEmail: 'help@agency.example' },
  };
}

const to = (addr: string, username: string) =>
  smtp.messages.filter((m) => m.to.includes(addr) && m.subject.includes(`@${username}`));

describe('owner alerts through the sweep', () => {
  it('R-OWN-11: with OWNER_ALERTS off nothing goes to the owner; the operator gets the ladder as before', async () => {
    const clock = new ManualClock(Date.UTC(2026, 2, 1, 9));
    const a = await connect(clock, 10 * DAY + HOUR, 'off.owner@example.com');
    for (let day = 0; day <= 10; day++) {
      await runExpirySweep(deps(clock, false));
      clock.advance(DAY);
    }
    expect(to('off.owner@example.com', a.username)).toHaveLength(0);
    const ops = to('ops@example.com', a.username);
    expect(ops.map((m) => /expires (in [^(]+) \(/.exec(m.subject)?.[1]?.trim())).toEqual([
      'in 10 days',
      'in 6 days',
      'in 2 days',
      'in less than a day',
    ]);
    for (const m of ops) expect(m.text).not.toContain('The owner');
  });

  it('R-OWN-11, R-OWN-12, R-OWN-14: on, the owner gets each threshold once with a link; a new alert revokes the old link; restarts send nothing twice', async () => {
    const clock = new ManualClock(Date.UTC(2026, 3, 1, 9));
    const a = await connect(clock, 20 * DAY + 6 * HOUR, 'sam@example.org');
    const events = collectingEvents();
    const links: string[] = [];
    for (let day = 0; day <= 20; day++) {
      const before = smtp.messages.length;
      // Two sweeps a day, as two workers (or a restart) would run them: each email goes once.
      await runExpirySweep(deps(clock, true, events));
      await runExpirySweep(deps(clock, true, events));
      for (const m of smtp.messages.slice(before).filter((x) => x.to.includes('sam@example.org')))
        links.push(LINK_RE.exec(m.text)![1]!);
      clock.advance(DAY);
    }
    const owner = to('sam@example.org', a.username);
    const ops = to('ops@example.com', a.username);
    expect(owner).toHaveLength(4);
    expect(ops).toHaveLength(4);
    expect(owner[0]!.subject).toBe(`Please reconnect @${a.username}: your website's feed stops updating in 13 days`);
    expect(owner[0]!.text).toContain('help@agency.example');
    expect(owner[0]!.html).toContain('<a href="https://feeds.example.com/reconnect/');
    expect(owner[0]!.text).not.toMatch(/`|\*\*/);
    for (const m of ops) {
      expect(m.text).toMatch(/The owner \(s\*\*\*@example\.org\) was told on \w+day, \d+ \w+ 2026/);
      expect(m.text).not.toContain('sam@example.org');
      expect(m.text).not.toContain('/reconnect/');
    }
    // Only the newest link works: every earlier one was revoked when the next went out.
    expect(new Set(links).size).toBe(4);
    const states = await Promise.all(links.map(async (t) => linkState(await findReconnectLink(pool, t), clock.now())));
    expect(states).toEqual(['revoked', 'revoked', 'revoked', 'ok']);
    const { rows } = await pool.query<{ token_hash: string }>(
      'SELECT token_hash FROM reconnect_links WHERE account_id = $1',
      [a.id],
    );
    // Only digests are stored.
    for (const t of links) expect(rows.map((r) => r.token_hash)).not.toContain(t);
    const notified = events.emitted.filter((e) => e.type === 'account.owner_notified' && e.data.accountId === a.id);
    expect(notified.map((e) => (e.data as { thresholdDays: number }).thresholdDays)).toEqual([14, 7, 3, 1]);
    expect(JSON.stringify(notified)).not.toContain('sam@example.org');
  });

  it('R-OWN-11: an owner whose alerts are off for the account, or no owner, gets nothing; a failed owner email is retried alone', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 9));
    const off = await connect(clock, 5 * DAY, 'quiet@example.com');
    await setOwner(pool, off.id, { alerts: false }, clock.now());
    const failing = await connect(clock, 5 * DAY, 'later@example.com');
    const run1 = deps(clock, true);
    // The owner's mail server refuses the first time.
    let refuseOwner = true;
    const flaky: Pick<Mailer, 'send'> = {
      send: async (m) => {
        if (m.to === 'later@example.com' && refuseOwner) throw new Error('451 try again later');
        return mailer.send(m);
      },
    };
    await runExpirySweep({ ...run1, mailer: flaky });
    expect(to('quiet@example.com', off.username)).toHaveLength(0);
    expect(to('later@example.com', failing.username)).toHaveLength(0);
    const opFirst = to('ops@example.com', failing.username);
    expect(opFirst).toHaveLength(1);
    // Not told: the operator's copy asks them to send the owner a link, as without owner alerts.
    expect(opFirst[0]!.text).not.toContain('was told');
    expect(opFirst[0]!.text).toContain('send the owner of');
    expect(opFirst[0]!.text).toContain('feedmirror accounts reconnect-link');
    // Next sweep: the owner's copy goes, the operator's does not go again.
    refuseOwner = false;
    await runExpirySweep({ ...run1, mailer: flaky });
    expect(to('later@example.com', failing.username)).toHaveLength(1);
    expect(to('ops@example.com', failing.username)).toHaveLength(1);
  });

  it('R-OWN-16: the status document says connected or needs_owner, with days left and the last good sync, and holds no secret or contact', async () => {
    const clock = new ManualClock(Date.UTC(2026, 6, 1, 9));
    const a = await connect(clock, 30 * DAY + HOUR, 'private.owner@example.com');
    const dir = await mkdtemp(join(tmpdir(), 'fm-status-'));
    try {
      const storage = createStorage({ STORAGE_URL: dir } as Parameters<typeof createStorage>[0]);
      const sd = { db: pool, storage, clock, logger };
      await ownStorage(pool, storage);
      await markSynced(pool, a.id, clock.now(), { outcome: 'complete' });
      const synced = clock.now().toISOString();
      const doc = await publishAccountStatus(sd, a.id);
      expect(doc).toEqual({
        accountId: a.id,
        username: a.username,
        state: 'connected',
        daysLeft: 30,
        lastGoodSyncAt: synced,
        staleSince: null,
        generatedAt: synced,
      });
      // A state change through the lifecycle rewrites it: the owner must act now.
      clock.advance(2 * DAY);
      const lifecycle = new AccountLifecycle({
        db: pool,
        clock,
        logger,
        schedules: NO_SCHEDULES,
        alertReauth: async () => null,
        status: statusPublisher(sd),
      });
      await lifecycle.apply(a.id, 'owner_must_act', 'the account password was changed', 'token_invalid');
      const raw = await readFile(join(dir, statusKey(a.id)), 'utf8');
      const after = JSON.parse(raw) as Record<string, unknown>;
      expect(after).toMatchObject({ state: 'needs_owner', daysLeft: 28, staleSince: synced, lastGoodSyncAt: synced });
      expect(raw).not.toContain(a.token);
      expect(raw).not.toContain('private.owner@example.com');
      expect(raw).not.toContain('password');
      // Removing the account deletes it.
      await lifecycle.apply(a.id, 'removed');
      await expect(readFile(join(dir, statusKey(a.id)), 'utf8')).rejects.toThrow(/ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
