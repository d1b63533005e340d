import { mkdtempSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mirrorMediaJob } from '../../jobs/mirror-media.ts';
import { loadAccountHealth } from '../../src/accounts/health.ts';
import { main } from '../../src/cli/main.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { runSyncNow } from '../../src/feeds/sync.ts';
import { parseExposition } from '../../src/metrics/exposition.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { listSyncRuns, markSynced, setAccountStatus, upsertAccount, SYNC_RUNS_KEPT } from '../../src/store/accounts.ts';
import { createReconnectLink, setOwner } from '../../src/store/owners.ts';
import { listCopyFailures, recordCopyFailure } from '../../src/store/copy-failures.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { loadHealthFacts } from '../../src/store/health-facts.ts';
import { migrate } from '../../src/store/migrate.ts';
import { createEndpoint, insertDeliveries, recordAttempt } from '../../src/store/webhooks.ts';
import { FileClock, HOUR } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { memoryIO } from '../support/memory-io.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { startServeForTest, type ServedForTest, operatorSession } from '../security/support.ts';
import { recordCaptured } from '../support/capture.ts';
import { importSimAccount } from '../support/accounts.ts';
import { startSmtpCapture } from '../support/smtp.ts';
import { noSleep, simPlatformClient } from '../support/sim-platform.ts';

/**
 * R-HLT-1..3: what an account's health is made of, recorded where copies fail and read back in a
 * fixed number of queries; and every surface (the account page, `accounts list --json`, /metrics,
 * doctor) showing the same verdict and reasons.
 */
let db: pg.Pool;
let drop: () => Promise<void>;
let dbUrl: string;
let sim: Simulator;
let storageDir: string;
let clockFile: string;
const key = randomBytes(32).toString('base64');
const cipher = TokenCipher.fromEnv(key);
let accountId: string;
let deps: FeedDeps;

beforeAll(async () => {
  const fresh = await freshDatabase('acchealth');
  drop = fresh.drop;
  dbUrl = fresh.url;
  db = createPool(fresh.url, { max: 4 });
  await migrate(db);
  sim = await startSimulator();
  storageDir = mkdtempSync(join(tmpdir(), 'fm-acchealth-'));
  clockFile = join(storageDir, 'clock');
  FileClock.write(clockFile, sim.clock.now());
  const acc = sim.createAccount({ posts: 6 });
  accountId = acc.id;
  await importSimAccount(db, cipher, sim, acc);
  deps = {
    db,
    cipher,
    platform: simPlatformClient(sim, { maxRetries: 1, sleep: noSleep }),
    storage: new LocalStorage(join(storageDir, 'storage'), 'http://127.0.0.1:8080/'),
    // The image host is refused, as after the simulator moved to another port.
    limits: {
      allowedHosts: ['cdn.elsewhere.example'],
      maxBytes: 1e7,
      maxPixels: 1e8,
      timeoutMs: 5_000,
      variantWidths: [],
    },
    clock: sim.clock,
    logger: silentLogger,
  };
}, 60_000);

afterAll(async () => {
  await sim?.close();
  await db?.end();
  await drop?.();
  if (storageDir) await rm(storageDir, { recursive: true, force: true });
});

const policy = () => ({ now: sim.clock.now(), syncIntervalMs: HOUR });
const healthOf = async (id = accountId) => (await loadAccountHealth(db, policy(), { accountId: id }))[0]!;

describe('what the health is made of (R-HLT-3)', () => {
  it('a refused image host: each failed copy is recorded per slot (redacted, given up), the posts are withheld, the account fails', async () => {
    const r = await runSyncNow(deps, accountId);
    expect(r.sync.outcome).toBe('synced');
    expect(r.failedCopies.length).toBeGreaterThan(0);
    const failures = await listCopyFailures(db, accountId);
    expect(failures).toHaveLength(r.failedCopies.length);
    for (const f of failures) {
      expect(f).toMatchObject({ attempts: 1, gaveUp: true, errorKind: 'bad_item' });
      expect(f.error).toMatch(/MEDIA_ALLOWED_HOSTS|not allowed/i);
      expect(f.error).not.toMatch(/oe=|access_token/);
    }
    const { health, facts } = await healthOf();
    expect(facts.copies).toMatchObject({ failing: failures.length, gaveUp: failures.length });
    expect(facts.copies.waitingPosts).toBeGreaterThan(0);
    expect(health.verdict).toBe('fail');
    expect(health.reasons.map((x) => x.kind)).toEqual(expect.arrayContaining(['copies_failing', 'posts_withheld']));
    expect(health.reasons.find((x) => x.kind === 'copies_failing')!.text).toMatch(/given up until the next sync/);
  });

  it('the mirror-media job records its attempt on the same row, given up when no retry can heal it', async () => {
    const [first] = await listCopyFailures(db, accountId);
    const job = { attemptsMade: 0, attemptsStarted: 1, opts: { attempts: 5 } } as unknown as Job;
    await expect(
      mirrorMediaJob.process(deps, { accountId, mediaId: first!.mediaId, slot: first!.slot }, job),
    ).rejects.toThrow();
    const again = (await listCopyFailures(db, accountId)).find(
      (f) => f.mediaId === first!.mediaId && f.slot === first!.slot,
    )!;
    expect(again.attempts).toBe(2);
    expect(again.gaveUp).toBe(true); // a refused host is not retried (UnrecoverableError)
    expect(again.firstFailedAt).toEqual(first!.firstFailedAt);
  });

  it('a retryable failure with attempts left is "retrying": the account warns instead of failing', async () => {
    const other = sim.createAccount({ posts: 1 });
    await importSimAccount(db, cipher, sim, other);
    const ok = { ...deps, limits: { ...deps.limits, allowedHosts: [sim.imageHost] } };
    expect((await runSyncNow(ok, other.id)).failedCopies).toEqual([]);
    expect((await healthOf(other.id)).health).toEqual({ verdict: 'ok', reasons: [] });
    const [post] = (
      await db.query<{ media_id: string }>('SELECT media_id FROM posts WHERE account_id = $1', [other.id])
    ).rows;
    await recordCopyFailure(db, {
      accountId: other.id,
      mediaId: post!.media_id,
      slot: 'slide-9',
      errorKind: 'network',
      error: 'ETIMEDOUT',
      at: sim.clock.now(),
      gaveUp: false,
    });
    const h = await healthOf(other.id);
    expect(h.health.verdict).toBe('warn');
    expect(h.health.reasons).toEqual([
      expect.objectContaining({ kind: 'copies_failing', level: 'warn', text: expect.stringMatching(/being retried/) }),
    ]);
  });

  it('the image host allowed again: the copies succeed, their failures are cleared, nothing is withheld, the account is ok', async () => {
    const ok = { ...deps, limits: { ...deps.limits, allowedHosts: [sim.imageHost] } };
    const r = await runSyncNow(ok, accountId);
    expect(r.failedCopies).toEqual([]);
    expect(await listCopyFailures(db, accountId)).toEqual([]);
    const { health, facts } = await healthOf();
    expect(facts.copies).toMatchObject({ failing: 0, waitingPosts: 0 });
    expect(health).toEqual({ verdict: 'ok', reasons: [] });
    // Each run is in the account's history, newest first, with how many posts it listed.
    const runs = await listSyncRuns(db, accountId);
    expect(runs.map((x) => x.outcome)).toEqual(['complete', 'complete']);
    expect(runs[0]!.posts).toBe(r.sync.outcome === 'synced' ? r.sync.posts : -1);
  });

  it('the sync history keeps the latest runs only', async () => {
    for (let i = 0; i < SYNC_RUNS_KEPT + 5; i++)
      await markSynced(db, accountId, new Date(sim.clock.now().getTime() + i * 1000), {
        error: i % 2 ? 'page 2: HTTP 500' : null,
        errorKind: i % 2 ? 'platform' : null,
        outcome: i % 2 ? 'incomplete' : 'complete',
        posts: i,
      });
    const runs = await listSyncRuns(db, accountId, 100);
    expect(runs).toHaveLength(SYNC_RUNS_KEPT);
    expect(runs[0]!.posts).toBe(SYNC_RUNS_KEPT + 4);
    expect(runs[1]).toMatchObject({ outcome: 'incomplete', errorKind: 'platform', error: 'page 2: HTTP 500' });
    await markSynced(db, accountId, sim.clock.now(), { outcome: 'complete', posts: 6 });
  });
});

describe('the facts of all accounts in a fixed number of queries', () => {
  /** The pool, counting every query (on the pool and on clients it hands out). */
  function counting(pool: pg.Pool): { db: pg.Pool; count: () => number } {
    let n = 0;
    const wrap = <T extends object>(target: T): T =>
      new Proxy(target, {
        get(t, k, r) {
          const v = Reflect.get(t, k, r) as unknown;
          if (k === 'query')
            return (...a: unknown[]) => {
              n++;
              return (v as (...x: unknown[]) => unknown).apply(t, a);
            };
          if (k === 'connect') return async () => wrap(await (t as unknown as pg.Pool).connect());
          return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(t) : v;
        },
      });
    return { db: wrap(pool), count: () => n };
  }

  it('the same number with 3 accounts and with 40 (posts, failures and webhook deliveries among them)', async () => {
    const measure = async () => {
      const c = counting(db);
      const list = await loadAccountHealth(c.db, policy());
      return { queries: c.count(), accounts: list.length };
    };
    const small = await measure();
    const { endpoint } = await createEndpoint(db, cipher, {
      url: 'https://hooks.example/feedmirror',
      events: [],
      at: sim.clock.now(),
    });
    for (let i = 0; i < 37; i++) {
      const id = `1799990000${String(i).padStart(7, '0')}`;
      await upsertAccount(db, { id, username: `bulk${i}` }, sim.clock.now());
      // Reconnect links (read in the accounts' query): newer ones too, the newest counts.
      for (let l = 0; l < i % 3; l++)
        await createReconnectLink(db, {
          accountId: id,
          reason: 'reauth',
          now: new Date(sim.clock.now().getTime() + l * 1000),
          ttlMs: 86_400_000,
          delivery: l % 2 ? 'copy' : 'email',
        });
      await recordCopyFailure(db, {
        accountId: id,
        mediaId: 'm1',
        slot: 'cover',
        errorKind: 'network',
        error: 'x',
        at: sim.clock.now(),
        gaveUp: true,
      });
      const [d] = await insertDeliveries(db, {
        id: `evt_${i}`,
        type: 'feed.updated',
        body: JSON.stringify({ data: { accountId: id } }),
        at: sim.clock.now(),
      });
      await recordAttempt(db, d!, { at: sim.clock.now(), ok: false, httpStatus: 500, error: 'HTTP 500', final: true });
    }
    const large = await measure();
    expect(large.accounts).toBe(small.accounts + 37);
    expect(large.queries).toBe(small.queries);
    expect(small.queries).toBeLessThanOrEqual(7);
    // The webhook failure is the account's: its health names the endpoint.
    const bulk = (await loadAccountHealth(db, policy(), { accountId: '17999900000000003' }))[0]!;
    expect(bulk.facts.webhooks).toEqual([expect.objectContaining({ endpointId: endpoint.id, state: 'failed' })]);
    expect(bulk.health.reasons.map((r) => r.kind)).toContain('webhooks_failing');
    // The bulk accounts have no token: they fail for it, and are removed again for the next test.
    expect(bulk.health.verdict).toBe('fail');
    await db.query("DELETE FROM accounts WHERE username LIKE 'bulk%'");
    await db.query('DELETE FROM webhook_endpoints');
    expect((await loadHealthFacts(db)).some((f) => f.username.startsWith('bulk'))).toBe(false);
  });
});

describe('every surface shows the same verdict (R-HLT-1)', () => {
  let serve: ServedForTest;
  let env: Record<string, string>;
  const metricsToken = `mt-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    // A new post while the image host is refused: its copies fail, it is withheld.
    sim.addPost(accountId, { kind: 'image' });
    expect((await runSyncNow(deps, accountId)).failedCopies.length).toBeGreaterThan(0);
    // A display name that would be markup if it were not escaped.
    await upsertAccount(
      db,
      { id: accountId, username: sim.createAccount({ posts: 0 }).username, displayName: '<script>alert(1)</script>' },
      sim.clock.now(),
    );
    serve = await startServeForTest(
      'acchealth',
      { METRICS_TOKEN: metricsToken, FEEDMIRROR_CLOCK_FILE: clockFile, GRAPH_URL: sim.graphUrl },
      { databaseUrl: dbUrl, redisPrefix: redisForTest('acchealth').prefix },
    );
    env = { ...serve.env, LOG_LEVEL: 'silent' };
  }, 60_000);

  afterAll(async () => {
    await serve?.close();
  });

  const page = async (path: string, cookie?: string) => {
    const res = await fetch(`${serve.url}${path}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    const html = await res.text();
    recordCaptured('http', html);
    return { res, html };
  };

  it('the account page, accounts list --json, /metrics and doctor all say fail, naming the failing copies', async () => {
    const expected = await healthOf();
    expect(expected.health.verdict).toBe('fail');
    const kinds = expected.health.reasons.map((r) => r.kind);
    expect(kinds).toEqual(expect.arrayContaining(['copies_failing', 'posts_withheld']));

    const cookie = await operatorSession(serve, '192.0.2.7');
    const { res, html } = await page(`/dashboard/accounts/${accountId}`, cookie);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(html).toContain('<section id="health" data-health="fail">');
    for (const r of expected.health.reasons) expect(html).toContain(`data-reason="${r.kind}"`);
    expect(html).toMatch(/data-copies-failing="[1-9]/);
    expect(html).toMatch(/<tr data-copy-failure="[^"]+\/cover">/);
    expect(html).toContain('given up');
    expect(html).toMatch(/<tr data-sync-outcome="complete">/);
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // The overview links to it and shows the same verdict.
    const overview = await page('/dashboard', cookie);
    expect(overview.html).toContain(`href="/dashboard/accounts/${accountId}"`);
    expect(overview.html).toMatch(new RegExp(`data-account-id="${accountId}"[\\s\\S]*?data-health="fail"`));

    const io = memoryIO({ env });
    expect(await main(['accounts', 'list', '--json'], io)).toBe(0);
    const listed = (
      JSON.parse(io.out()) as Array<{ id: string; health: { verdict: string; reasons: Array<{ kind: string }> } }>
    ).find((a) => a.id === accountId)!;
    expect(listed.health.verdict).toBe('fail');
    expect(listed.health.reasons.map((r) => r.kind)).toEqual(kinds);

    const metrics = await fetch(`${serve.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    expect(metrics.status).toBe(200);
    const families = parseExposition(await metrics.text());
    const gauge = families.get('feedmirror_account_health')!;
    const mine = gauge.samples.filter((s) => s.labels.account_id === accountId);
    expect(Object.fromEntries(mine.map((s) => [s.labels.verdict, s.value]))).toEqual({ ok: 0, warn: 0, fail: 1 });
    expect(
      families.get('feedmirror_accounts')!.samples.find((s) => s.labels.verdict === 'fail')!.value,
    ).toBeGreaterThan(0);

    const doc = memoryIO({ env });
    expect(await main(['doctor', '--json'], doc)).toBe(1);
    const check = (
      JSON.parse(doc.out()) as { checks: Array<{ name: string; status: string; detail: string }> }
    ).checks.find((c) => c.name === 'accounts health')!;
    expect(check.status).toBe('fail');
    expect(check.detail).toContain(`(${accountId}) fail: [${kinds[0]}]`);
  }, 60_000);

  it('R-HLT-1 / R-OWN-12: an account waiting for its owner says what is true of its reconnect link, on every surface; the CLI sends one', async () => {
    const acc = sim.createAccount({ posts: 0 });
    await importSimAccount(db, cipher, sim, acc);
    await setOwner(db, acc.id, { email: 'jane.owner@example.com' }, sim.clock.now());
    await setAccountStatus(db, acc.id, 'reauth_required', 'the platform refused the token: password changed', {
      at: sim.clock.now(),
      reasonKind: 'password_changed',
    });
    const reauth = async (now = sim.clock.now()) =>
      (await loadAccountHealth(db, { now, syncIntervalMs: HOUR }, { accountId: acc.id }))[0]!.health.reasons.find(
        (r) => r.kind === 'reauth_required',
      )!.text;
    const command = `feedmirror accounts reconnect-link ${acc.id} --send`;

    // No link out: what to do, never "send an invitation".
    expect(await reauth()).toBe(
      `the owner must connect the account again (the platform refused the token: password changed); no link is out: send one (dashboard: the account's page; CLI: \`${command}\`)`,
    );
    // The terminal shows the command between backticks; the dashboard as code, without them.
    const list = memoryIO({ env });
    expect(await main(['accounts', 'list'], list)).toBe(0);
    expect(
      list
        .out()
        .split('\n')
        .find((l) => l.startsWith(acc.id)),
    ).toContain(`\`${command}\``);
    const doctor = memoryIO({ env });
    await main(['doctor', '--json'], doctor);
    const check = (JSON.parse(doctor.out()) as { checks: Array<{ name: string; detail: string }> }).checks.find(
      (c) => c.name === 'accounts health',
    )!;
    expect(check.detail).toContain(`(${acc.id}) fail: [reauth_required] the owner must connect the account again`);
    expect(check.detail).toContain(`\`${command}\``);
    expect(check.detail).not.toContain('jane.owner@'); // doctor's line reaches logs: the owner is masked, or absent
    const cookie = await operatorSession(serve, '192.0.2.9');
    for (const path of [`/dashboard/accounts/${acc.id}`, '/dashboard']) {
      const { html } = await page(path, cookie);
      const li = new RegExp(
        `data-account-id="${acc.id}"[\\s\\S]*?<li class="fail" data-reason="reauth_required">([^]*?)</li>`,
      );
      const reason = (path === '/dashboard' ? li : /<li class="fail" data-reason="reauth_required">([^]*?)<\/li>/).exec(
        html,
      )![1]!;
      expect(reason).toContain(`<code>${command}</code>`);
      expect(reason).not.toContain('`');
    }

    // A link made to copy (the CLI's twin of the dashboard's button): printed once; health says so.
    const copy = memoryIO({ env });
    expect(await main(['accounts', 'reconnect-link', acc.id], copy)).toBe(0);
    expect(copy.out()).toMatch(/^http\S+\/reconnect\/[A-Za-z0-9_-]{43}\nworks once, until \S+, and only for @/);
    expect(await reauth()).toMatch(/; a reconnect link made on [\d-]+ [\d:]+ UTC for you to pass on is valid until /);

    // Emailed to the owner: health says to whom (masked), when and until when; nothing to send.
    const smtp = await startSmtpCapture();
    try {
      const sent = memoryIO({ env: { ...env, SMTP_URL: smtp.url, ALERT_EMAIL_TO: 'ops@example.com' } });
      expect(await main(['accounts', 'reconnect-link', acc.id, '--send', '--json'], sent)).toBe(0);
      const out = JSON.parse(sent.out()) as { emailed: boolean; to: string; expiresAt: string };
      expect(out).toMatchObject({ emailed: true, to: 'jane.owner@example.com' });
      expect(smtp.messages.map((m) => m.to)).toEqual([['jane.owner@example.com']]);
      expect(smtp.messages[0]!.text).toMatch(/\/reconnect\/[A-Za-z0-9_-]{43}\n/);
      const until = out.expiresAt.slice(0, 16).replace('T', ' ');
      const text = await reauth();
      expect(text).toMatch(
        new RegExp(
          `; the owner \\(j\\*\\*\\*@example\\.com\\) was emailed a reconnect link on [\\d-]+ [\\d:]+ UTC, valid until ${until} UTC$`,
        ),
      );
      expect(text).not.toMatch(/send one|invitation/);
      // Once it expired: said, and what to do again.
      expect(await reauth(new Date(Date.parse(out.expiresAt) + HOUR))).toMatch(
        new RegExp(
          `; the reconnect link emailed to the owner \\(j\\*\\*\\*@example\\.com\\) on .* expired on ${until} UTC; no link is out: send one`,
        ),
      );
    } finally {
      await smtp.close();
    }
    // An account that needs no owner login gets no link: one line, exit 1.
    const refused = memoryIO({ env });
    expect(await main(['accounts', 'reconnect-link', accountId], refused)).toBe(1);
    expect(refused.err()).toMatch(/^no link made: @\S+ is connected: no owner login is needed\n$/);
  }, 60_000);

  it('an unknown account is an HTML 404 page of the dashboard; without a session, the login', async () => {
    const cookie = await operatorSession(serve, '192.0.2.8');
    for (const id of ['17841499999999999', 'not%20an%20id', '%3Cb%3E']) {
      const { res, html } = await page(`/dashboard/accounts/${id}`, cookie);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
      expect(html).toContain('<h1>No such account</h1>');
      expect(html).not.toContain('<b>');
    }
    const anonymous = await page(`/dashboard/accounts/${accountId}`);
    expect([302, 303]).toContain(anonymous.res.status);
    expect(anonymous.res.headers.get('location')).toMatch(/\/dashboard\/login/);
  }, 30_000);
});
