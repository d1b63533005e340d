import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { CliIO } from '../../src/cli/io.ts';
import { validateFeed } from '../../src/schema/validate.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { listMediaCopies, listPosts } from '../../src/store/posts.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY, FileClock } from '../../src/util/clock.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { workerEnv } from '../support/worker-env.ts';

/** `feedmirror sync <id> --wait` and `feedmirror feeds get <id>` against real services. */
const T0 = Date.UTC(2026, 3, 1, 10);

function memoryIO(env: Record<string, string>): CliIO & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    stdin: new PassThrough(),
    env,
    cwd: process.cwd(),
    out: () => out,
    err: () => err,
  };
}

describe('feedmirror sync --wait / feeds get', () => {
  let sim: Simulator;
  let db: pg.Pool;
  let drop: () => Promise<void>;
  let storageDir: string;
  let env: Record<string, string>;
  let accountId: string;

  beforeAll(async () => {
    const key = randomBytes(32).toString('base64');
    registerSecretForAudit(key);
    sim = await startSimulator({ start: T0 });
    const clockDir = mkdtempSync(join(tmpdir(), 'fm-cli-clock-'));
    FileClock.write(join(clockDir, 'now'), T0);
    const database = await freshDatabase('clisync');
    drop = database.drop;
    db = createPool(database.url, { max: 2 });
    await migrate(db);
    const acc = sim.createAccount({ username: 'cli.shop', posts: 30 });
    accountId = acc.id;
    const token = sim.issueLongLivedToken(acc.id);
    registerSecretForAudit(token);
    await upsertAccount(db, { id: acc.id, username: acc.username }, sim.clock.now());
    await saveToken(
      db,
      TokenCipher.fromEnv(key),
      { accountId: acc.id, accessToken: token, obtainedAt: sim.clock.now(), expiresAt: new Date(T0 + 60 * DAY) },
      'imported',
    );
    storageDir = mkdtempSync(join(tmpdir(), 'fm-cli-storage-'));
    env = workerEnv({
      sim,
      databaseUrl: database.url,
      redis: redisForTest('clisync'),
      key,
      clockFile: join(clockDir, 'now'),
      storageDir,
      extra: { LOG_LEVEL: 'warn', MEDIA_VARIANT_WIDTHS: '160', PAGE_SIZE: '8' },
    });
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await drop?.();
    await sim?.close();
    if (storageDir) await rm(storageDir, { recursive: true, force: true });
  });

  it('sync --wait prints progress (pages read, posts, images copied) and a summary, then feeds get prints a valid feed', async () => {
    const io = memoryIO(env);
    expect(await main(['sync', accountId, '--wait'], io)).toBe(0);
    const lines = io.out().trim().split('\n');
    const progress = lines.filter((l) => l.startsWith('pages read '));
    const parsed = progress
      .map((l) => /^pages read (\d+), posts (\d+)(?:, images copied (\d+)\/(\d+))?$/.exec(l))
      .map((m) => m && m.slice(1).map((n) => Number(n ?? 0)));
    expect(parsed.every((m) => m !== null)).toBe(true);
    // No line twice (the first used to be repeated with the count of images to copy).
    expect(new Set(progress).size).toBe(progress.length);
    // Pages counted up one by one while reading, images one by one while copying.
    const pages = parsed.map((m) => m![0]!);
    expect(Math.max(...pages)).toBeGreaterThan(1);
    expect(pages).toEqual([...pages].sort((a, b) => a - b));
    const copies = await listMediaCopies(db, accountId);
    const last = parsed.at(-1)!;
    expect(last[2]).toBe(last[3]);
    expect(last[3]).toBe(copies.length);
    expect(last[1]).toBe((await listPosts(db, accountId)).length); // every post read and stored (dropped ones aside)
    expect(Math.max(...parsed.map((m) => m![1]!))).toBe(30); // while reading: every listed item counted
    const summary = lines.find((l) => l.startsWith('summary: '));
    expect(summary).toMatch(
      new RegExp(
        `^summary: complete listing, ${Math.max(...pages)} pages, \\d+ API calls; \\d+ posts .*images copied ${copies.length}, reused 0, .*failed 0; feed written; widget script published$`,
      ),
    );
    expect(io.err()).toBe('');
    // The widget script is published with the first feed, without any worker.
    const { existsSync } = await import('node:fs');
    expect(existsSync(join(storageDir, 'widget', 'feedmirror-widget.js'))).toBe(true);

    const get = memoryIO(env);
    expect(await main(['feeds', 'get', accountId], get)).toBe(0);
    const v = validateFeed(JSON.parse(get.out()));
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    expect(v.feed.demo).toBe(false);
    expect(v.feed.origin.name).toBe('cli.shop');
    expect(v.feed.posts.length).toBeGreaterThan(20);
  }, 60_000);

  it('R-CNV-10: feeds get --raw-links puts back the raw the platform sent (signed links included) that the published feed leaves out', async () => {
    const plain = memoryIO(env);
    expect(await main(['feeds', 'get', accountId], plain)).toBe(0);
    const published = JSON.parse(plain.out()) as { posts: Array<{ id: string; raw: Record<string, unknown> }> };
    const withMedia = published.posts.find((p) => p.raw && 'media_type' in p.raw && p.raw.media_type === 'IMAGE')!;
    expect(withMedia.raw.media_url).toBeUndefined(); // dropped on publication

    const io = memoryIO(env);
    expect(await main(['feeds', 'get', accountId, '--raw-links'], io)).toBe(0);
    const full = JSON.parse(io.out()) as typeof published;
    const stored = (await listPosts(db, accountId)).find((p) => p.mediaId === withMedia.id)!;
    const again = full.posts.find((p) => p.id === withMedia.id)!;
    expect(again.raw).toEqual(stored.post.raw);
    expect(String(again.raw.media_url)).toMatch(/[?&]oe=/); // the platform's signed link, as sent
    // Everything else is the published feed.
    expect(full.posts.map((p) => p.id)).toEqual(published.posts.map((p) => p.id));

    const one = memoryIO(env);
    expect(await main(['feeds', 'get', accountId, '--raw-links', '--post', withMedia.id, '--json'], one)).toBe(0);
    expect(JSON.parse(one.out())).toEqual(stored.post.raw);
    const missing = memoryIO(env);
    expect(await main(['feeds', 'get', accountId, '--raw-links', '--post', '1'], missing)).toBe(1);
    expect(missing.err()).toMatch(/has no stored post 1/);
    const misuse = memoryIO(env);
    expect(await main(['feeds', 'get', accountId, '--post', withMedia.id], misuse)).toBe(2);
  });

  it('a second sync --wait of an unchanged account copies nothing and leaves the feed unchanged', async () => {
    const io = memoryIO(env);
    expect(await main(['sync', accountId, '--wait'], io)).toBe(0);
    expect(io.out()).toMatch(/images copied 0, reused 0, .*feed unchanged; widget script unchanged\n$/);
  }, 60_000);

  it('bad input: an id with ../ is a usage error; feeds get of an unknown account fails clearly', async () => {
    const bad = memoryIO(env);
    expect(await main(['sync', '../etc', '--wait'], bad)).toBe(2);
    expect(bad.err()).toMatch(/account id must be/);
    expect(bad.err()).toMatch(/Usage: feedmirror sync/);
    const none = memoryIO(env);
    expect(await main(['feeds', 'get', '999'], none)).toBe(1);
    expect(none.err()).toMatch(/no feed published for account 999/);
  });
});
