import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { FileClock } from '../../src/util/clock.ts';
import { importSimAccount } from '../support/accounts.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { runFeedmirror } from '../support/processes.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { workerEnv } from '../support/worker-env.ts';

/**
 * R-MED-13: `feedmirror platform compare --version v26.0` as a real process against the
 * simulator, whose v26.0 answers a reel with media_type REELS (src/simulator/README.md): the
 * reel's account would see its feed change, the account without reels would not. doctor and
 * account health warn as the pinned version's end of availability nears, with the clock moved.
 */
const T0 = Date.UTC(2026, 10, 1, 10);

interface Summary {
  side: 'item' | 'post';
  path: string;
  pinned?: unknown;
  candidate?: unknown;
  count: number;
  ids: string[];
}
interface CompareJson {
  pinned: string;
  candidate: string;
  pinnedAvailability: { level: string; availableUntil: string };
  feedWouldChange: boolean;
  feedsChanging: string[];
  accounts: Array<{
    accountId: string;
    username: string;
    error?: string;
    comparison?: {
      compared: number;
      complete: boolean;
      feedWouldChange: boolean;
      feedChanges: { changed: number; leftOut: number; added: number };
      summary: Summary[];
      differing: Array<{ id: string }>;
    };
  }>;
}

describe('feedmirror platform compare (R-MED-13)', () => {
  let sim: Simulator;
  let db: pg.Pool;
  let drop: () => Promise<void>;
  let storageDir: string;
  let clockFile: string;
  let env: Record<string, string>;
  let reels: { id: string; username: string };
  let plain: { id: string; username: string };
  let reelIds: string[];
  let cipher: TokenCipher;

  beforeAll(async () => {
    const key = randomBytes(32).toString('base64');
    registerSecretForAudit(key);
    sim = await startSimulator({ start: T0 });
    clockFile = join(mkdtempSync(join(tmpdir(), 'fm-compare-clock-')), 'now');
    FileClock.write(clockFile, T0);
    const database = await freshDatabase('compare');
    drop = database.drop;
    db = createPool(database.url, { max: 2 });
    await migrate(db);
    reels = sim.createAccount({
      username: 'reel.bakery',
      posts: [{ kind: 'image' }, { kind: 'reel' }, { kind: 'carousel' }, { kind: 'video' }, { kind: 'reel' }],
    });
    plain = sim.createAccount({
      username: 'plain.shop',
      posts: [{ kind: 'image' }, { kind: 'carousel' }, { kind: 'video' }],
    });
    reelIds = sim
      .posts(reels.id)
      .filter((p) => p.kind === 'reel')
      .map((p) => p.id);
    cipher = TokenCipher.fromEnv(key);
    await importSimAccount(db, cipher, sim, reels);
    await importSimAccount(db, cipher, sim, plain);
    storageDir = mkdtempSync(join(tmpdir(), 'fm-compare-storage-'));
    env = workerEnv({
      sim,
      databaseUrl: database.url,
      redis: redisForTest('compare'),
      key,
      clockFile,
      storageDir,
      extra: { LOG_LEVEL: 'warn', PAGE_SIZE: '2' },
    });
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await drop?.();
    await sim?.close();
    if (storageDir) await rm(storageDir, { recursive: true, force: true });
    if (clockFile) await rm(join(clockFile, '..'), { recursive: true, force: true });
  });

  it('--json: the reel account differs in media_type, its reels are no longer converted, its feed would change; the other not', async () => {
    const r = await runFeedmirror(['platform', 'compare', '--version', 'v26.0', '--json'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as CompareJson;
    expect(out).toMatchObject({
      pinned: 'v25.0',
      candidate: 'v26.0',
      pinnedAvailability: { level: 'ok', availableUntil: '2028-07-29' },
      feedWouldChange: true,
      feedsChanging: [reels.id],
    });
    const byId = new Map(out.accounts.map((a) => [a.accountId, a]));
    const a = byId.get(reels.id)!.comparison!;
    // Every item of both listings compared (paged two at a time), only the reels differ.
    expect(a).toMatchObject({ compared: 5, complete: true, feedWouldChange: true });
    expect(a.differing.map((d) => d.id).sort()).toEqual([...reelIds].sort());
    expect(a.feedChanges).toEqual({ changed: 0, leftOut: 2, added: 0 });
    expect(a.summary).toEqual([
      { side: 'item', path: 'media_type', pinned: 'VIDEO', candidate: 'REELS', count: 2, ids: expect.any(Array) },
      {
        side: 'post',
        path: '(post)',
        pinned: 'converted',
        candidate: 'left out: unknown media_type "REELS"',
        count: 2,
        ids: expect.any(Array),
      },
    ]);
    const b = byId.get(plain.id)!.comparison!;
    expect(b).toMatchObject({ compared: 3, complete: true, feedWouldChange: false, differing: [], summary: [] });
    // Links are shown without their signature, and the token never appears.
    expect(r.stdout).not.toMatch(/oe=|access_token/);
  }, 60_000);

  it('human output names the difference and says whether a feed would change', async () => {
    const one = await runFeedmirror(['platform', 'compare', '--version', 'v26.0', '--account', reels.id], env);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`@reel.bakery (${reels.id}): 5 items compared, 2 differ; its feed WOULD CHANGE`);
    expect(one.stdout).toContain('item media_type: "VIDEO" -> "REELS" (2 items:');
    expect(one.stdout).toContain('post (post): "converted" -> "left out: unknown media_type \\"REELS\\"" (2 posts:');
    expect(one.stdout).toMatch(/Moving to v26\.0 would change 1 published feed \(of 1 compared\): stay on v25\.0/);

    const other = await runFeedmirror(['platform', 'compare', '--version', 'v26.0', '--account', plain.id], env);
    expect(other.code).toBe(0);
    expect(other.stdout).toContain('3 items compared, 0 differ; its feed would not change');
    expect(other.stdout).toContain('Moving to v26.0 would change no published feed (1 compared)');
  }, 60_000);

  it('an account whose token the platform refuses is not compared: exit 1, one line naming it, and the report does not claim its feed is safe', async () => {
    const gone = sim.createAccount({ username: 'gone.cafe', posts: [{ kind: 'image' }] });
    await importSimAccount(db, cipher, sim, gone);
    sim.revokeTokens(gone.id);
    const r = await runFeedmirror(['platform', 'compare', '--version', 'v26.0', '--account', gone.id], env);
    expect(r.code).toBe(1);
    // Logs (JSON lines) aside, one line names the account and why.
    const lines = r.stderr.split('\n').filter((l) => l && !l.startsWith('{'));
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(`^platform compare: 1 of 1 account could not be compared \\(${gone.id}: .*token is invalid.*\\)$`),
      ),
    ]);
    expect(r.stdout).toContain(`@gone.cafe (${gone.id}): not compared:`);
    expect(r.stdout).toContain('whether moving to v26.0 would change its feed is unknown');
    expect(r.stdout).not.toContain('would change no published feed');
    const json = await runFeedmirror(
      ['platform', 'compare', '--version', 'v26.0', '--account', gone.id, '--json'],
      env,
    );
    expect(json.code).toBe(1);
    const out = JSON.parse(json.stdout) as CompareJson & { error: { kind: string; message: string } };
    expect(out.accounts[0]!.error).toMatch(/token is invalid/);
    expect(out.error.kind).toBe('failed');
  }, 60_000);

  it('bad input: an unknown version or the pinned one is a usage error (2), an unknown account a failure (1), one line each', async () => {
    for (const [args, code, line] of [
      [['--version', 'v27.0'], 2, /^--version: v27\.0 is not a version feedmirror knows \(v25\.0, v26\.0\)\n$/],
      [['--version', 'v25.0'], 2, /^--version: v25\.0 is the pinned version already/],
      [['--version', 'v26.0', '--account', 'nosuch'], 1, /^no account with id nosuch\n$/],
      [['--version', 'v26.0', '--account', '../x'], 2, /^--account: account id must be/],
    ] as const) {
      const r = await runFeedmirror(['platform', 'compare', ...args], env);
      expect(r.code, args.join(' ')).toBe(code);
      expect(r.stderr).toMatch(line);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stdout).toBe('');
    }
    // A pinned version feedmirror does not know is refused by the configuration itself.
    const bad = await runFeedmirror(['platform', 'compare', '--version', 'v26.0'], {
      ...env,
      GRAPH_API_VERSION: 'v24.0',
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/GRAPH_API_VERSION.*must be a version feedmirror knows: v25\.0, v26\.0/);
  }, 60_000);

  it('doctor and account health warn near the end of v25.0 (2028-07-29), by the clock; not before the lead', async () => {
    const doctorCheck = async () => {
      const r = await runFeedmirror(['doctor', '--json'], env, { timeoutMs: 60_000 });
      const { checks } = JSON.parse(r.stdout) as {
        checks: Array<{ name: string; status: string; detail: string; fix?: string }>;
      };
      return checks.find((c) => c.name === 'platform API version');
    };
    const healthKinds = async () => {
      const r = await runFeedmirror(['accounts', 'list', '--json'], env);
      expect(r.code).toBe(0);
      const list = JSON.parse(r.stdout) as Array<{ id: string; health: { reasons: Array<{ kind: string }> } }>;
      return list.map((a) => a.health.reasons.map((x) => x.kind));
    };
    expect(await doctorCheck()).toMatchObject({ status: 'ok', detail: expect.stringContaining('2028-07-29') });
    expect((await healthKinds()).flat()).not.toContain('api_version_ending');

    // 60 days before the end: within the default lead of 90.
    FileClock.write(clockFile, Date.UTC(2028, 4, 31, 12));
    const near = await doctorCheck();
    expect(near).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(
        /v25\.0 is available until 2028-07-29 \(59 days left\): compare before moving: `feedmirror platform compare --version v26\.0`/,
      ),
    });
    for (const kinds of await healthKinds()) expect(kinds).toContain('api_version_ending');
    // A shorter lead is quiet still.
    const quiet = await runFeedmirror(['doctor', '--json'], { ...env, PLATFORM_VERSION_WARN_DAYS: '30' });
    const q = (JSON.parse(quiet.stdout) as { checks: Array<{ name: string; status: string }> }).checks.find(
      (c) => c.name === 'platform API version',
    );
    expect(q?.status).toBe('ok');

    // Past its last day: a failure.
    FileClock.write(clockFile, Date.UTC(2028, 6, 30, 0, 0, 1));
    expect(await doctorCheck()).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('was available until'),
    });
  }, 180_000);
});
