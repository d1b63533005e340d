import { randomBytes } from 'node:crypto';
import { collectingEvents } from '../support/events.ts';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AccountLifecycle } from '../../src/accounts/lifecycle.ts';
import { createMailer } from '../../src/alerts/mailer.ts';
import { alertReauthRequired } from '../../src/alerts/sweep.ts';
import { createMetrics } from '../../src/metrics/index.ts';
import { getAccount, upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY, HOUR, ManualClock } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { DEFAULT_SCHEDULES, accountSchedules, refreshSchedulerId, syncSchedulerId } from '../../jobs/schedules.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { dropQueues } from '../support/queues.ts';

/** AccountLifecycle.apply against real Postgres, real BullMQ schedulers and a real (outbox) mailer. */
const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
const logger = createLogger({ level: 'silent' });
const clock = new ManualClock(Date.UTC(2026, 5, 1));
let pool: pg.Pool;
let drop: () => Promise<void>;
let outbox: string;
let queues: { tokenRefresh: Queue; feedSync: Queue };
const metrics = createMetrics({ processMetrics: false });

function lifecycle(): AccountLifecycle {
  const mailer = createMailer(
    { SMTP_URL: undefined, ALERT_EMAIL_TO: undefined, ALERT_EMAIL_FROM: 'feedmirror@example.test', OUTBOX_DIR: outbox },
    logger,
    { clock },
  );
  return new AccountLifecycle({
    db: pool,
    clock,
    logger,
    schedules: accountSchedules(queues, DEFAULT_SCHEDULES),
    alertReauth: (id) =>
      alertReauthRequired(
        { db: pool, mailer, clock, logger, publicUrl: 'https://feeds.example.test', events: collectingEvents() },
        id,
      ),
    transitions: metrics.accountTransitions,
  });
}

async function connectAccount(id: string): Promise<void> {
  await upsertAccount(pool, { id, username: `user${id}` }, clock.now());
  await saveToken(
    pool,
    cipher,
    {
      accountId: id,
      accessToken: `IGAA${randomBytes(20).toString('hex')}`,
      obtainedAt: clock.now(),
      expiresAt: new Date(clock.now().getTime() + 60 * DAY),
    },
    'exchanged',
  );
}

const schedulers = async (id: string) => ({
  refresh: (await queues.tokenRefresh.getJobScheduler(refreshSchedulerId(id))) !== undefined,
  sync: (await queues.feedSync.getJobScheduler(syncSchedulerId(id))) !== undefined,
});
const emails = async () => (await readdir(outbox)).filter((f) => f.endsWith('.eml')).length;
const events = async (id: string) =>
  (
    await pool.query<{ kind: string }>('SELECT kind FROM token_events WHERE account_id = $1 ORDER BY id', [id])
  ).rows.map((r) => r.kind);
const transitions = async (name: string) =>
  (await metrics.accountTransitions.get()).values.find((v) => v.labels.transition === name)?.value ?? 0;

beforeAll(async () => {
  const d = await freshDatabase('lifecycle');
  drop = d.drop;
  pool = createPool(d.url);
  await migrate(pool);
  const redis = redisForTest('lifecycle');
  queues = { tokenRefresh: createQueue(QUEUE.tokenRefresh, redis), feedSync: createQueue(QUEUE.feedSync, redis) };
});

beforeEach(async () => {
  if (outbox) await rm(outbox, { recursive: true, force: true });
  outbox = await mkdtemp(join(tmpdir(), 'fm-lifecycle-'));
});

afterAll(async () => {
  await dropQueues(queues);
  await pool?.end();
  await drop?.();
  if (outbox) await rm(outbox, { recursive: true, force: true });
});

describe('account lifecycle, applied', () => {
  it('connected: the account becomes active and both schedulers exist (R-TOK-8); a reconnect revives reauth_required (R-TOK-10)', async () => {
    const lc = lifecycle();
    await connectAccount('1001');
    expect(await lc.apply('1001', 'connected')).toMatchObject({ changed: true, to: 'active', effects: ['schedule'] });
    expect(await schedulers('1001')).toEqual({ refresh: true, sync: true });

    await lc.apply('1001', 'owner_must_act', 'the platform rejected the token: password changed (code 190/460)');
    expect(await schedulers('1001')).toEqual({ refresh: false, sync: false });
    const revived = await lc.apply('1001', 'connected');
    expect(revived).toMatchObject({ changed: true, from: 'reauth_required', to: 'active' });
    expect((await getAccount(pool, '1001'))?.statusReason).toBeNull();
    expect(await schedulers('1001')).toEqual({ refresh: true, sync: true });
  });

  it('owner_must_act (R-TOK-10): reauth_required, schedules stopped, one email, one event, counted; a second time does nothing', async () => {
    const lc = lifecycle();
    await connectAccount('1002');
    await lc.apply('1002', 'connected');
    const before = await transitions('owner_must_act');
    const r = await lc.apply('1002', 'owner_must_act', 'code 190/463');
    expect(r).toMatchObject({
      changed: true,
      from: 'active',
      to: 'reauth_required',
      effects: ['unschedule', 'alert_reauth'],
    });
    expect(r.alert).toMatchObject({ accountId: '1002', kind: 'reauth' });
    expect((await getAccount(pool, '1002'))?.status).toBe('reauth_required');
    expect(await schedulers('1002')).toEqual({ refresh: false, sync: false });
    expect(await emails()).toBe(1);
    expect(await events('1002')).toEqual(['exchanged', 'reauth_required']);
    expect(await transitions('owner_must_act')).toBe(before + 1);

    expect(await lc.apply('1002', 'owner_must_act', 'again')).toMatchObject({ changed: false });
    expect(await lc.apply('1002', 'token_expired', 'again')).toMatchObject({ changed: false });
    expect(await emails()).toBe(1);
    expect(await events('1002')).toEqual(['exchanged', 'reauth_required']);
  });

  it('token_expired from several processes at once: exactly one makes the transition, one email, one expired event (R-TOK-5, R-TOK-10)', async () => {
    await connectAccount('1003');
    await lifecycle().apply('1003', 'connected');
    clock.advance(61 * DAY);
    const results = await Promise.all(
      [lifecycle(), lifecycle(), lifecycle()].map((lc) => lc.apply('1003', 'token_expired', 'the token expired')),
    );
    expect(results.filter((r) => r.changed)).toHaveLength(1);
    expect(await emails()).toBe(1);
    expect((await events('1003')).filter((k) => k === 'expired')).toHaveLength(1);
    expect(await schedulers('1003')).toEqual({ refresh: false, sync: false });
  });

  it('refresh_succeeded and refresh_failed (R-TOK-6, R-TOK-7) leave the account active and scheduled; refused on reauth_required', async () => {
    const lc = lifecycle();
    await connectAccount('1004');
    await lc.apply('1004', 'connected');
    clock.advance(HOUR);
    expect(await lc.apply('1004', 'refresh_failed', 'HTTP 500')).toMatchObject({
      changed: true,
      to: 'active',
      effects: [],
    });
    expect(await lc.apply('1004', 'refresh_succeeded')).toMatchObject({ changed: true, to: 'active' });
    expect((await getAccount(pool, '1004'))?.status).toBe('active');
    expect(await schedulers('1004')).toEqual({ refresh: true, sync: true });
    await lc.apply('1004', 'owner_must_act', 'code 190');
    expect(await lc.apply('1004', 'refresh_succeeded')).toMatchObject({ changed: false, from: 'reauth_required' });
  });

  it('removed: schedules stopped, the account and its token deleted, the history kept with a removed event', async () => {
    const lc = lifecycle();
    await connectAccount('1005');
    await lc.apply('1005', 'connected');
    expect(await lc.apply('1005', 'removed')).toMatchObject({ changed: true, to: 'removed', effects: ['unschedule'] });
    expect(await getAccount(pool, '1005')).toBeNull();
    expect((await pool.query('SELECT 1 FROM tokens WHERE account_id = $1', ['1005'])).rowCount).toBe(0);
    expect(await schedulers('1005')).toEqual({ refresh: false, sync: false });
    expect(await events('1005')).toEqual(['exchanged', 'removed']);
    expect(await lc.apply('1005', 'removed')).toMatchObject({ changed: false, from: 'none' });
  });
});
