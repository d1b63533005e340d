import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { openStage, type Stage } from './stage.ts';

/**
 * docs/health.md ("Account health") as an operator meets it, with real processes: one verdict per
 * account that `accounts list`, `doctor` and the dashboard's account page agree on (R-HLT-1), never
 * ok while copies fail or posts are withheld (R-HLT-2); and Redis losing its keys under a running
 * worker, after which the schedules come back from PostgreSQL and the account is ok again.
 */
interface Listed {
  id: string;
  health: { verdict: 'ok' | 'warn' | 'fail'; reasons: Array<{ kind: string; level: string; text: string }> };
}

let stage: Stage | undefined;
afterEach(async () => {
  await stage?.close();
  stage = undefined;
});

async function listed(s: Stage, id: string): Promise<Listed | undefined> {
  const r = await s.cli(['accounts', 'list', '--json']);
  if (r.code !== 0) throw new Error(`accounts list --json exited ${r.code}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as Listed[]).find((a) => a.id === id);
}

describe('journey: account health', () => {
  it('the image host refused: accounts list, doctor and the account page all say fail and why; fixed and synced, all say ok', async () => {
    const s = (stage = await openStage('healthrefused'));
    const acc = await s.connect({ username: 'refused.host.shop', posts: 4 });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    // MEDIA_ALLOWED_HOSTS names another host than the one the platform's images come from.
    const w = await s.startWorker({ env: { MEDIA_ALLOWED_HOSTS: 'cdn.elsewhere.example' } });
    await s
      .until(
        async () => (await listed(s, acc.id))?.health.reasons.some((r) => r.kind === 'copies_failing') ?? false,
        'accounts list to name the failing copies',
        60_000,
      )
      .catch((err: Error) => {
        throw new Error(`${err.message}; the worker said:\n${w.output().slice(-4000)}`);
      });
    await w.stop();

    const row = (await listed(s, acc.id))!;
    expect(row.health.verdict).toBe('fail');
    const kinds = row.health.reasons.map((r) => r.kind);
    expect(kinds).toEqual(expect.arrayContaining(['copies_failing', 'posts_withheld']));
    expect(row.health.reasons.find((r) => r.kind === 'copies_failing')!.text).toMatch(/MEDIA_ALLOWED_HOSTS/);

    const text = await s.cli(['accounts', 'list']);
    expect(text.stdout).toMatch(new RegExp(`^${acc.id}\\t@refused\\.host\\.shop\\t.*\\tfail: .*image cop`, 'm'));
    expect(text.stdout).not.toMatch(new RegExp(`^${acc.id}\\t.*\\tok$`, 'm'));

    const doctor = await s.cli(['doctor']);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(
      /^FAIL {2}accounts health: 1 account: 0 ok, 0 warn, 1 fail; @refused\.host\.shop .* fail: \[copies_failing\]/m,
    );

    const serve = await s.startServe();
    const dash = await serve.login();
    const page = await dash.get(`/dashboard/accounts/${acc.id}`);
    expect(page.status).toBe(200);
    expect(page.html).toContain('<section id="health" data-health="fail">');
    for (const k of kinds) expect(page.html).toContain(`data-reason="${k}"`);
    expect(page.html).toMatch(/<tr data-copy-failure="[^"]+\/cover">[\s\S]*?MEDIA_ALLOWED_HOSTS/);
    const overview = await dash.get('/dashboard');
    expect(overview.html).toMatch(new RegExp(`data-account-id="${acc.id}"[\\s\\S]*?data-health="fail"`));
    expect(overview.html).toContain(`href="/dashboard/accounts/${acc.id}"`);

    // The README's remedy: fix the setting (the stage's .env names the right host) and sync again.
    const sync = await s.cli(['sync', acc.id, '--wait']);
    expect(sync.code, sync.stderr).toBe(0);
    const healed = (await listed(s, acc.id))!;
    expect(healed.health).toEqual({ verdict: 'ok', reasons: [] });
    expect((await s.cli(['doctor'])).stdout).toMatch(/^ok {4}accounts health: 1 account: 1 ok, 0 warn, 0 fail$/m);
    const after = await dash.get(`/dashboard/accounts/${acc.id}`);
    expect(after.html).toContain('<section id="health" data-health="ok">');
    expect((await s.feed(acc.id))?.posts).toHaveLength(4);
  }, 180_000);

  it('Redis flushed under a running worker: the schedules come back from PostgreSQL, the account syncs again and is ok', async () => {
    // Syncs every minute and a reconciler every 2 s, so the journey takes about a minute, not an hour.
    const s = (stage = await openStage('healthflush', {
      env: { SYNC_INTERVAL_MINUTES: '1', RECONCILE_INTERVAL_SECONDS: '2' },
    }));
    const acc = await s.connect({ username: 'flushed.shop', posts: 3 });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    const w = await s.startWorker();
    await s.until(async () => (await s.feed(acc.id))?.demo === false, 'the first real feed', 60_000);
    await s.until(async () => (await listed(s, acc.id))?.health.verdict === 'ok', 'the account ok', 30_000);

    // Everything feedmirror keeps in Redis (its prefix only: other tests share this Redis) is gone.
    const redis = new Redis(s.env.REDIS_URL!);
    try {
      let cursor = '0';
      let deleted = 0;
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${s.env.REDIS_PREFIX}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length) deleted += await redis.del(...keys);
      } while (cursor !== '0');
      expect(deleted).toBeGreaterThan(0);
    } finally {
      redis.disconnect();
    }

    // A new post on the platform: only a sync after the flush can bring it to the feed.
    const added = s.sim.addPost(acc.id, { kind: 'image' });
    await s
      .until(
        async () => (await s.feed(acc.id))?.posts.some((p) => p.id === added) ?? false,
        'the new post in the feed after the flush',
        120_000,
      )
      .catch((err: Error) => {
        throw new Error(`${err.message}; the worker said:\n${w.output().slice(-4000)}`);
      });
    expect(w.output()).toMatch(/reconciler repaired \d+ schedule/);
    const row = (await listed(s, acc.id))!;
    expect(row.health).toEqual({ verdict: 'ok', reasons: [] });
    expect((await s.feed(acc.id))?.posts).toHaveLength(4);
  }, 240_000);
});
