import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { rebuildAccountMedia } from '../../src/feeds/rebuild.ts';
import { runSyncNow } from '../../src/feeds/sync.ts';
import { mirrorLimitsFromConfig } from '../../src/mirror/copy.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import type { Feed } from '../../src/schema/v1.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createStorage, feedKey, mediaKey } from '../../src/storage/index.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { listMediaCopies } from '../../src/store/posts.ts';
import { getLastVerify } from '../../src/store/verify-runs.ts';
import { createEndpoint } from '../../src/store/webhooks.ts';
import { DAY, HOUR } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { runVerify, type VerifyDeps } from '../../src/verify/verify.ts';
import { hideWidgetPost, insertWidget } from '../../src/store/widgets.ts';
import { statusKey, widgetDocumentKey, widgetFragmentKey } from '../../src/storage/keys.ts';
import { buildStatusDocument, publishAccountStatus } from '../../src/accounts/status-document.ts';
import {
  publishWidget,
  WIDGET_CACHE_CONTROL,
  WIDGET_CONTENT_TYPE,
  WIDGET_KEY,
  widgetSource,
} from '../../src/embed/index.ts';
import type { WidgetDocument } from '../../src/schema/widget-document.ts';
import { publishWidgetDocument, type WidgetDeps } from '../../src/widgets/publish.ts';
import { newWidgetId } from '../../src/widgets/widgets.ts';
import { refreshSchedulerId, scheduleAccount, syncSchedulerId } from '../../jobs/schedules.ts';
import { createQueues, type Queues } from '../../jobs/queues.ts';
import { scheduleCheck } from '../../jobs/verify-schedules.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../support/s3.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { dropQueues } from '../support/queues.ts';
import { importSimAccount } from '../support/accounts.ts';
import { ownStorage } from '../support/storage-owner.ts';

/**
 * `feedmirror verify`'s checker against real stores (PostgreSQL, Redis, an S3 API server) and the
 * simulator: what it finds when storage, the queues or the keys disagree with the database, and
 * that its repair (the worker's own copy, publish and schedule operations) makes them agree again.
 */
const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
const schedules = { refreshCheckEveryMs: 6 * HOUR, syncEveryMs: HOUR };
let db: pg.Pool;
let dropDb: () => Promise<void>;
let sim: Simulator;
let s3: TestS3;
let queues: Queues;
let deps: VerifyDeps;
let accountId: string;
/** Posts of the first published feed (a copyright-flagged item of the simulator is left out). */
let postCount: number;

const readFeed = async (): Promise<Feed> =>
  JSON.parse((await deps.storage.get(feedKey(accountId)))!.body.toString('utf8')) as Feed;

beforeAll(async () => {
  const fresh = await freshDatabase('verify');
  dropDb = fresh.drop;
  db = createPool(fresh.url, { max: 5 });
  await migrate(db);
  // The simulated clock starts at the wall clock: object ages in S3 are wall-clock times.
  sim = await startSimulator({ start: Date.now() });
  s3 = await startS3('verify');
  const config = loadConfig({
    STORAGE_URL: `s3://${s3.bucket}/site`,
    S3_ENDPOINT: s3.endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    MEDIA_ALLOWED_HOSTS: sim.imageHost,
    MEDIA_VARIANT_WIDTHS: '320',
  });
  queues = createQueues(redisForTest('verify'));
  const feedDeps: FeedDeps = {
    db,
    cipher,
    platform: new PlatformClient({
      graphUrl: sim.graphUrl,
      apiVersion: 'v25.0',
      oauthTokenUrl: sim.oauthTokenUrl,
      clock: sim.clock,
      maxRetries: 1,
      sleep: async () => undefined,
    }),
    storage: createStorage(config, { credentials: S3RVER_CREDENTIALS, maxAttempts: 1, requestTimeoutMs: 5_000 }),
    limits: mirrorLimitsFromConfig(config),
    clock: sim.clock,
    logger: silentLogger,
  };
  deps = { ...feedDeps, schedules: scheduleCheck({ db, queues, schedules }) };
  // A new storage, made this deployment's as a worker's first start makes it (R-DEL-1).
  await ownStorage(db, deps.storage);

  const acc = sim.createAccount({ username: 'verify.shop', posts: 6 });
  accountId = acc.id;
  await importSimAccount(db, cipher, sim, acc);
  await scheduleAccount(queues, accountId, schedules);
  const first = await runSyncNow(deps, accountId);
  expect(first.publish?.outcome).toBe('written');
  postCount = (await readFeed()).posts.length;
  expect(postCount).toBeGreaterThan(3);
});

afterAll(async () => {
  await dropQueues(queues);
  await sim?.close();
  await s3?.close();
  await db?.end();
  await dropDb?.();
});

describe('feedmirror verify: do the stores agree?', () => {
  it('a synced, scheduled account: all well, with every object of its feed checked, and the run recorded', async () => {
    const report = await runVerify(deps, { trigger: 'cli' });
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    const feed = await readFeed();
    const images = feed.posts.flatMap((p) => [
      ...(p.thumbnailSizes ?? []),
      ...p.media.flatMap((m) => (m.mime.startsWith('image/') ? (m.sizes ?? []) : [])),
    ]);
    expect(images.length).toBeGreaterThan(6);
    expect(report.counts).toMatchObject({ accounts: 1, feeds: 1, tokens: 1, orphans: 0, scheduleDifferences: 0 });
    expect(report.counts.objects).toBe(new Set(images.map((i) => i.url)).size);
    const last = await getLastVerify(db);
    expect(last).toMatchObject({ trigger: 'cli', ok: true, problemCount: 0, accountId: null });
  });

  it('objects deleted behind its back, a lost schedule, an old orphan: each named; --repair restores them and checks again', async () => {
    const copies = await listMediaCopies(db, accountId);
    const cover = copies.find((c) => c.slot === 'cover' && c.variants.length > 0)!;
    const variant = copies.find((c) => c !== cover && c.variants.length > 0)!.variants[0]!;
    await deps.storage.delete(cover.key);
    await deps.storage.delete(variant.key);
    await queues.feedSync.removeJobScheduler(syncSchedulerId(accountId));
    const orphan = mediaKey(accountId, '999999', 'cover-0000000000000000.jpg');
    await deps.storage.put(orphan, Buffer.from('left behind'), { contentType: 'image/jpeg', cacheControl: 'no-cache' });

    // Written a moment ago, it may be a copy in flight: counted, not a problem, left alone.
    const now = await runVerify(deps, { trigger: 'cli' });
    expect(now.counts.unreferencedRecent).toBe(1);
    expect(now.problems.map((p) => p.kind)).not.toContain('orphan');

    // Two days later it is past the 24 h grace.
    sim.clock.advance(2 * DAY);
    const found = await runVerify(deps, { trigger: 'cli' });
    expect(found.ok).toBe(false);
    const named = found.problems.map((p) => `${p.kind} ${p.key ?? ''}`).sort();
    expect(named).toEqual(
      [
        `object-missing ${cover.key}`,
        `object-missing ${variant.key}`,
        `orphan ${orphan}`,
        `schedule-missing ${syncSchedulerId(accountId)}`,
      ].sort(),
    );
    expect(found.counts.unreferencedRecent).toBe(0);
    expect((await getLastVerify(db, { accountId }))?.problems.map((p) => p.kind)).toContain('object-missing');
    // Nothing was touched by the check.
    expect(await deps.storage.head(orphan)).not.toBeNull();

    const repaired = await runVerify(deps, { trigger: 'cli', repair: true });
    expect(repaired.problems).toEqual([]);
    expect(repaired.ok).toBe(true);
    expect(repaired.found?.length).toBe(4);
    expect(repaired.repaired.map((r) => r.kind)).toEqual(
      expect.arrayContaining(['rescheduled', 'recopied', 'republished', 'deleted-orphan']),
    );
    expect(repaired.repaired.filter((r) => r.kind === 'repair-failed')).toEqual([]);
    // The objects are back, at the same names (content-addressed), and the orphan is gone.
    expect(await deps.storage.head(cover.key)).toMatchObject({ size: cover.bytes, contentType: cover.contentType });
    expect(await deps.storage.head(variant.key)).not.toBeNull();
    expect(await deps.storage.head(orphan)).toBeNull();
    expect(await queues.feedSync.getJobScheduler(syncSchedulerId(accountId))).toBeTruthy();
    expect(await queues.tokenRefresh.getJobScheduler(refreshSchedulerId(accountId))).toBeTruthy();
  });

  it('without --repair nothing is touched: a feed object deleted stays deleted and is named', async () => {
    await deps.storage.delete(feedKey(accountId));
    const report = await runVerify(deps, { trigger: 'cli', accountId });
    expect(report.problems).toEqual([expect.objectContaining({ kind: 'feed-missing', key: feedKey(accountId) })]);
    expect(await deps.storage.head(feedKey(accountId))).toBeNull();
  });

  it('a sync notices its own feed object is missing (one HEAD) and publishes it again, though nothing changed', async () => {
    const r = await runSyncNow(deps, accountId);
    expect(r.sync.outcome === 'synced' && r.sync.feedMissing).toBe(true);
    expect(r.publish?.outcome).toBe('written');
    expect((await readFeed()).posts.length).toBe(postCount);
    expect((await runVerify(deps, { trigger: 'cli' })).ok).toBe(true);
  });

  it('a feed that is not what the database would publish now is stale; --repair publishes it again', async () => {
    const feed = await readFeed();
    const tampered = { ...feed, posts: feed.posts.slice(1) };
    await deps.storage.put(feedKey(accountId), Buffer.from(JSON.stringify(tampered)), {
      contentType: 'application/json',
      cacheControl: 'no-cache',
    });
    const report = await runVerify(deps, { trigger: 'cli', accountId });
    expect(report.problems).toEqual([
      expect.objectContaining({ kind: 'feed-stale', detail: expect.stringContaining(`1 post(s) missing from it`) }),
    ]);
    const repaired = await runVerify(deps, { trigger: 'cli', accountId, repair: true });
    expect(repaired.problems).toEqual([]);
    expect(repaired.ok).toBe(true);
    expect((await readFeed()).posts.length).toBe(postCount);
  });

  it('an object stored with the wrong type or size is named', async () => {
    const copy = (await listMediaCopies(db, accountId)).find((c) => c.variants.length > 0)!;
    const original = await deps.storage.get(copy.key);
    await deps.storage.put(copy.key, original!.body.subarray(0, 100), {
      contentType: 'text/plain',
      cacheControl: 'no-cache',
    });
    const report = await runVerify(deps, { trigger: 'cli', accountId });
    expect(report.problems.map((p) => `${p.kind} ${p.key}`).sort()).toEqual([
      `object-size ${copy.key}`,
      `object-type ${copy.key}`,
    ]);
    expect((await runVerify(deps, { trigger: 'cli', accountId, repair: true })).ok).toBe(true);
    expect(await deps.storage.head(copy.key)).toMatchObject({ size: copy.bytes, contentType: copy.contentType });
  });

  it('`media rebuild` does not count a copy whose objects are gone as up to date', async () => {
    const copy = (await listMediaCopies(db, accountId)).find((c) => c.variants.length > 0)!;
    await deps.storage.delete(copy.key);
    const r = await rebuildAccountMedia(deps, accountId);
    expect(r.missing).toBe(1);
    expect(r.upToDate).toBe((await listMediaCopies(db, accountId)).length - 1);
    expect((await runVerify(deps, { trigger: 'cli', accountId, repair: true })).ok).toBe(true);
  });

  it('a token or webhook secret the configured keys cannot open is named (never repaired: the key is needed)', async () => {
    await createEndpoint(db, cipher, {
      url: 'https://hooks.example.test/feedmirror',
      events: [],
      description: 'site rebuild',
      at: sim.clock.now(),
    });
    const other = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
    const report = await runVerify({ ...deps, cipher: other }, { trigger: 'worker', repair: true });
    expect(report.problems.map((p) => p.kind).sort()).toEqual(['token-undecryptable', 'webhook-secret-undecryptable']);
    expect(report.problems.find((p) => p.kind === 'token-undecryptable')).toMatchObject({ accountId });
    expect(report.ok).toBe(false);
    expect(await getLastVerify(db)).toMatchObject({ trigger: 'worker', ok: false, problemCount: 2, repair: true });
    expect((await runVerify(deps, { trigger: 'cli' })).ok).toBe(true);
  });
  it('a widget whose republication was missed is named (stale, fragment missing); --repair publishes it after the feeds (R-WID-5)', async () => {
    const widgets: WidgetDeps = { db, storage: deps.storage, clock: sim.clock, logger: silentLogger };
    const withWidgets: VerifyDeps = { ...deps, widgets };
    const id = newWidgetId();
    await insertWidget(
      db,
      { id, name: 'Shop wall', layout: 'grid', options: {}, accountIds: [accountId] },
      sim.clock.now(),
    );
    expect((await publishWidgetDocument(widgets, id)).outcome).toBe('written');
    await publishWidget(deps.storage); // as the worker does when it starts
    const readDoc = async () =>
      JSON.parse((await deps.storage.get(widgetDocumentKey(id)))!.body.toString('utf8')) as WidgetDocument;
    const clean = await runVerify(withWidgets, { trigger: 'cli' });
    expect(clean.problems).toEqual([]);
    expect(clean.counts.widgets).toBe(1);

    // A post hidden in the database whose republication never happened, and the fragment lost.
    const hidden = (await readDoc()).posts[0]!.id;
    await hideWidgetPost(db, id, hidden, sim.clock.now());
    await deps.storage.delete(widgetFragmentKey(id));
    const found = await runVerify(withWidgets, { trigger: 'cli', accountId });
    expect(found.ok).toBe(false);
    expect(found.counts.widgets).toBe(1);
    expect(found.problems.map((p) => `${p.kind} ${p.key}`).sort()).toEqual([
      `widget-missing ${widgetFragmentKey(id)}`,
      `widget-stale ${widgetDocumentKey(id)}`,
    ]);
    expect(found.problems.find((p) => p.kind === 'widget-stale')!.detail).toContain('differs in posts');
    expect((await readDoc()).posts.map((p) => p.id)).toContain(hidden); // nothing changed without --repair

    // The document deleted too: the repair publishes both objects again, without the hidden post.
    await deps.storage.delete(widgetDocumentKey(id));
    const repaired = await runVerify(withWidgets, { trigger: 'cli', repair: true });
    expect(repaired.found!.map((p) => p.kind)).toEqual(['widget-missing']);
    expect(repaired.repaired).toEqual([expect.objectContaining({ kind: 'republished', key: widgetDocumentKey(id) })]);
    expect(repaired.ok).toBe(true);
    expect((await readDoc()).posts.map((p) => p.id)).not.toContain(hidden);
    expect(await deps.storage.head(widgetFragmentKey(id))).not.toBeNull();

    // Not JSON at all: named as invalid.
    await deps.storage.put(widgetDocumentKey(id), Buffer.from('<html>'), {
      contentType: 'text/html',
      cacheControl: 'no-cache',
    });
    expect((await runVerify(withWidgets, { trigger: 'cli' })).problems.map((p) => p.kind)).toEqual(['widget-invalid']);
    expect((await runVerify(withWidgets, { trigger: 'cli', repair: true })).ok).toBe(true);
  });

  it('the widget script every embed loads: deleted, then another release of it, each named; --repair publishes it again', async () => {
    const withWidgets: VerifyDeps = {
      ...deps,
      widgets: { db, storage: deps.storage, clock: sim.clock, logger: silentLogger },
    };
    await publishWidget(deps.storage);
    expect((await runVerify(withWidgets, { trigger: 'cli' })).ok).toBe(true);

    await deps.storage.delete(WIDGET_KEY);
    const found = await runVerify(withWidgets, { trigger: 'cli' });
    expect(found.problems.map((p) => `${p.kind} ${p.key}`)).toEqual([`widget-script-missing ${WIDGET_KEY}`]);
    const repaired = await runVerify(withWidgets, { trigger: 'cli', repair: true });
    expect(repaired.repaired).toEqual([expect.objectContaining({ kind: 'republished', key: WIDGET_KEY })]);
    expect(repaired.ok).toBe(true);
    expect((await deps.storage.get(WIDGET_KEY))!.body.equals(await widgetSource())).toBe(true);

    // An older release left in place (or a truncated upload): not what publishWidget writes.
    await deps.storage.put(WIDGET_KEY, Buffer.from('/* feedmirror 0.9 */'), {
      contentType: WIDGET_CONTENT_TYPE,
      cacheControl: WIDGET_CACHE_CONTROL,
    });
    expect((await runVerify(withWidgets, { trigger: 'cli' })).problems.map((p) => p.kind)).toEqual([
      'widget-script-stale',
    ]);
    // Not per account: `--account` leaves it alone.
    expect((await runVerify(withWidgets, { trigger: 'cli', accountId })).ok).toBe(true);
    expect((await runVerify(withWidgets, { trigger: 'cli', repair: true })).ok).toBe(true);
    expect((await deps.storage.get(WIDGET_KEY))!.body.equals(await widgetSource())).toBe(true);
  });

  it('a deleted feed and a deleted image: the image is found from the records, and one --repair restores both', async () => {
    const copy = (await listMediaCopies(db, accountId)).find((c) => c.variants.length > 0)!;
    const before = await readFeed();
    await deps.storage.delete(feedKey(accountId));
    await deps.storage.delete(copy.variants[0]!.key);

    const found = await runVerify(deps, { trigger: 'cli' });
    expect(found.problems.map((p) => `${p.kind} ${p.key}`).sort()).toEqual(
      [`feed-missing ${feedKey(accountId)}`, `object-missing ${copy.variants[0]!.key}`].sort(),
    );
    const repaired = await runVerify(deps, { trigger: 'cli', repair: true });
    expect(repaired.repaired.map((r) => r.kind).sort()).toEqual(['recopied', 'republished']);
    expect(repaired.problems).toEqual([]);
    expect(repaired.ok).toBe(true);
    expect(await deps.storage.head(copy.variants[0]!.key)).not.toBeNull();
    expect((await readFeed()).posts.map((p) => p.id)).toEqual(before.posts.map((p) => p.id));
    expect((await runVerify(deps, { trigger: 'cli' })).ok).toBe(true);
  });

  it('R-OWN-16: status documents follow PUBLISH_STATUS: on, each account has a current one; off, none is left; none outlives its account', async () => {
    const on: VerifyDeps = { ...deps, publishStatus: true };
    const key = statusKey(accountId);
    const statusDeps = { db, storage: deps.storage, clock: sim.clock, logger: silentLogger };

    // On, and none written yet (the switch was just turned on): named missing, written by the repair.
    const missing = await runVerify(on, { trigger: 'cli' });
    expect(missing.problems.map((p) => `${p.kind} ${p.accountId} ${p.key}`)).toEqual([
      `status-missing ${accountId} ${key}`,
    ]);
    expect(missing.counts.statusDocuments).toBe(1);
    const written = await runVerify(on, { trigger: 'cli', repair: true });
    expect(written.repaired).toEqual([expect.objectContaining({ kind: 'republished', key })]);
    expect(written.ok).toBe(true);
    const doc = JSON.parse((await deps.storage.get(key))!.body.toString('utf8')) as Record<string, unknown>;
    const { generatedAt: _g, ...expected } = (await buildStatusDocument(statusDeps, accountId))!;
    expect(doc).toMatchObject(expected);

    // A day later its daysLeft is one more than today's count: it was true when made, not stale.
    sim.clock.advance(DAY);
    expect((await buildStatusDocument(statusDeps, accountId))!.daysLeft).toBe((doc.daysLeft as number) - 1);
    expect((await runVerify(on, { trigger: 'cli' })).ok).toBe(true);

    // Another state than the account's: stale, written again.
    await deps.storage.put(key, Buffer.from(JSON.stringify({ ...doc, state: 'needs_owner' })), {
      contentType: 'application/json',
      cacheControl: 'no-cache',
    });
    const stale = await runVerify(on, { trigger: 'cli', accountId });
    expect(stale.problems).toEqual([
      expect.objectContaining({ kind: 'status-stale', key, detail: expect.stringContaining('differs in state') }),
    ]);
    expect((await runVerify(on, { trigger: 'cli', accountId, repair: true })).ok).toBe(true);

    // One whose account is gone, and a key that is not ours (never touched).
    const gone = '17841499999999999';
    await publishAccountStatus(statusDeps, accountId);
    await deps.storage.put(statusKey(gone), (await deps.storage.get(key))!.body, {
      contentType: 'application/json',
      cacheControl: 'no-cache',
    });
    await deps.storage.put('status/notes.txt', Buffer.from('kept'), {
      contentType: 'text/plain',
      cacheControl: 'no-cache',
    });
    const stray = await runVerify(on, { trigger: 'cli' });
    expect(stray.problems.map((p) => `${p.kind} ${p.key}`)).toEqual([`status-stray ${statusKey(gone)}`]);
    const cleaned = await runVerify(on, { trigger: 'cli', repair: true });
    expect(cleaned.repaired).toEqual([expect.objectContaining({ kind: 'deleted-status', key: statusKey(gone) })]);
    expect(cleaned.ok).toBe(true);
    expect(await deps.storage.head(statusKey(gone))).toBeNull();
    expect(await deps.storage.head(key)).not.toBeNull();
    expect(await deps.storage.head('status/notes.txt')).not.toBeNull();

    // Off: the account's document is left behind; named (also with --account), deleted by the repair.
    const off: VerifyDeps = { ...deps, publishStatus: false };
    expect((await runVerify(off, { trigger: 'cli' })).problems.map((p) => `${p.kind} ${p.key}`)).toEqual([
      `status-stray ${key}`,
    ]);
    const one = await runVerify(off, { trigger: 'cli', accountId, repair: true });
    expect(one.found!.map((p) => `${p.kind} ${p.key}`)).toEqual([`status-stray ${key}`]);
    expect(one.ok).toBe(true);
    expect(await deps.storage.head(key)).toBeNull();
    expect((await runVerify(off, { trigger: 'cli' })).ok).toBe(true);
    await deps.storage.delete('status/notes.txt');
  });

  it('every account is checked, a page at a time; the repair reaches the broken one and leaves the healthy one alone', async () => {
    const acc = sim.createAccount({ username: 'verify.second', posts: 3 });
    await importSimAccount(db, cipher, sim, acc);
    await scheduleAccount(queues, acc.id, schedules);
    expect((await runSyncNow(deps, acc.id)).publish?.outcome).toBe('written');
    const broken = (await listMediaCopies(db, acc.id)).find((c) => c.variants.length > 0)!;
    await deps.storage.delete(broken.key);
    const healthyFeed = await deps.storage.head(feedKey(accountId));

    const phases: Array<{ phase: string; accounts: number }> = [];
    const repaired = await runVerify(deps, {
      trigger: 'cli',
      repair: true,
      onProgress: (p) => phases.push({ phase: p.phase, accounts: p.accounts }),
    });
    expect(repaired.found?.map((p) => `${p.kind} ${p.accountId} ${p.key}`)).toEqual([
      `object-missing ${acc.id} ${broken.key}`,
    ]);
    // Checked again: the repaired account alone; the counts still cover both, as a new check's do.
    expect(phases.filter((p) => p.phase === 're-check').map((p) => p.accounts)).toEqual([1]);
    expect(phases.filter((p) => p.phase === 'check').map((p) => p.accounts)).toEqual([2, 2]);
    expect(repaired.counts).toEqual((await runVerify(deps, { trigger: 'cli' })).counts);
    expect(repaired.repaired.map((r) => `${r.kind} ${r.accountId}`).sort()).toEqual(
      [`recopied ${acc.id}`, `republished ${acc.id}`].sort(),
    );
    expect(repaired.ok).toBe(true);
    expect(repaired.counts.accounts).toBe(2);
    expect(await deps.storage.head(broken.key)).toMatchObject({ size: broken.bytes });
    // The healthy account's feed was not written again.
    expect((await deps.storage.head(feedKey(accountId)))?.lastModified).toEqual(healthyFeed?.lastModified);
  });
});
