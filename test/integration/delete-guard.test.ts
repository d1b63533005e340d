import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mediaSweepJob, verifyJob, type MaintenanceDeps } from '../../jobs/maintenance.ts';
import { statusPublisher } from '../../src/accounts/status-document.ts';
import { main } from '../../src/cli/main.ts';
import { removeProbe } from '../../src/deletion/guard.ts';
import { claimAtStart, claimStorage } from '../../src/deletion/marker.ts';
import { demoFeed } from '../../src/demo/demo-feed.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { runMediaSweep } from '../../src/feeds/media-sweep.ts';
import { publishAccountFeed, publishDemoFeedIfNone } from '../../src/feeds/publish.ts';
import { contentHash } from '../../src/util/content-hash.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import { DEPLOYMENT_MARKER_KEY, feedKey, mediaKey, statusKey } from '../../src/storage/keys.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import type { StoredObject } from '../../src/storage/types.ts';
import { upsertAccount, removeAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { getDeployment } from '../../src/store/deployment.ts';
import { DEFAULT_MIGRATIONS_DIR, migrate } from '../../src/store/migrate.ts';
import { deletePosts, saveFeedPublication, saveMediaCopy, upsertPosts } from '../../src/store/posts.ts';
import { getLastVerify } from '../../src/store/verify-runs.ts';
import { DAY, ManualClock } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { runVerify } from '../../src/verify/verify.ts';
import { createWidget, removeWidget } from '../../src/widgets/widgets.ts';
import { closedPort } from '../support/closed-port.ts';
import { memoryIO } from '../support/memory-io.ts';
import { freshDatabase } from '../support/services.ts';
import { ownStorage } from '../support/storage-owner.ts';

/**
 * Nothing is deleted from storage that feedmirror cannot prove it wrote (R-DEL-1..4): the daily
 * verify --repair and media sweep against a folder that is not this deployment's, another
 * deployment's marker, no marker, the marker claimed at start and at the upgrade, the record read
 * again right before each delete, the cap per run and --force, and the normal prune of a post
 * deleted at the source (R-LNK-6). Real PostgreSQL and real folders; time is the injectable clock.
 */

/** Objects written now are three days old by this clock: well past verify's 24-hour grace. */
const clock = new ManualClock(Date.now() + 3 * DAY);
const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
/** Under the simulator's demo account id: a demo run anywhere has an account of this id. */
const DEMO = '17841400000000001';
const OTHER = '17841499999999999';
const dirs: string[] = [];
let db: pg.Pool;
let databaseUrl: string;
let drop: () => Promise<void>;
let platform: PlatformClient;

/** The log, as lines, for what the guard says. */
const lines: string[] = [];
const logger = createLogger({
  level: 'info',
  name: 'delete-guard',
  destination: new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  }),
});
const logged = (text: string) => lines.filter((l) => l.includes(text));

async function folder(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'fm-delguard-'));
  dirs.push(d);
  return d;
}

/** A file put there by anyone (not through feedmirror), as `cp` would. */
async function file(dir: string, key: string, body = 'not feedmirror'): Promise<string> {
  await mkdir(dirname(join(dir, key)), { recursive: true });
  await writeFile(join(dir, key), body);
  return key;
}

const exists = (dir: string, key: string) =>
  stat(join(dir, key)).then(
    () => true,
    () => false,
  );

/** A copy's name as the copy writes it: `<slot>-<16 hex>.jpg`, and a variant of it. */
const hex = (n: number) => n.toString(16).padStart(16, '0');
const original = (n: number) => `cover-${hex(n)}.jpg`;
const variant = (n: number, w: number) => `cover-${hex(n)}-w${w}.webp`;

function feedDeps(storage: LocalStorage): FeedDeps {
  return {
    db,
    cipher,
    platform,
    storage,
    limits: {
      allowedHosts: ['images.example.test'],
      maxBytes: 1e6,
      maxPixels: 1e7,
      timeoutMs: 1000,
      variantWidths: [],
    },
    clock,
    logger,
  };
}

/** What the worker's maintenance queue hands the daily jobs (VERIFY_DAILY=repair, the default). */
function maintenance(storage: LocalStorage): MaintenanceDeps {
  return {
    db,
    clock,
    logger,
    storage,
    eventRetentionDays: 30,
    verify: { deps: feedDeps(storage), repair: true, orphanGraceMs: DAY },
  } as unknown as MaintenanceDeps;
}

async function dailyJobs(storage: LocalStorage) {
  const m = maintenance(storage);
  const verified = await verifyJob.process(m, {}, undefined as unknown as Parameters<typeof verifyJob.process>[2]);
  // With the daily verify on, the media sweep rides on its listing: the sweep job lists nothing.
  expect(
    await mediaSweepJob.process(m, {}, undefined as unknown as Parameters<typeof mediaSweepJob.process>[2]),
  ).toMatchObject({ byVerify: true, accounts: 0 });
  const swept = verified.sweep!;
  return { verified, swept, report: (await getLastVerify(db))! };
}

async function account(id: string, username = `shop.${id.slice(-4)}`) {
  await upsertAccount(db, { id, username }, clock.now());
}

beforeAll(async () => {
  const fresh = await freshDatabase('delguard');
  drop = fresh.drop;
  databaseUrl = fresh.url;
  db = createPool(fresh.url, { max: 5 });
  await migrate(db);
  // Nothing here calls the platform: a client of a closed port, so a call would fail loudly.
  const port = await closedPort();
  platform = new PlatformClient({
    graphUrl: `http://127.0.0.1:${port}`,
    oauthTokenUrl: `http://127.0.0.1:${port}/oauth/access_token`,
    apiVersion: 'v25.0',
    clock,
    maxRetries: 0,
    sleep: async () => undefined,
  });
});

afterAll(async () => {
  await db?.end();
  await drop?.();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('R-DEL-1: a storage that is not this deployment’s loses nothing', () => {
  it('a folder holding a README, a cover-shaped file under the demo account and one under another account, 3 days old: the first start does not claim it, the daily verify --repair and media sweep delete nothing and say why', async () => {
    const dir = await folder();
    const theirs = [
      await file(dir, 'README.txt', 'Backups of our shop pictures. Please do not delete.'),
      await file(dir, mediaKey(DEMO, '1790000000000001', original(1)), 'a picture'),
      await file(dir, mediaKey(OTHER, '1790000000000002', original(2)), 'another picture'),
    ];
    const storage = new LocalStorage(dir);
    await account(DEMO, 'demo.bakery');

    // The worker's start: the folder already holds copies, and none of this deployment's feeds.
    const start = await claimAtStart({ db, storage, clock, logger });
    expect(start).toMatchObject({ state: 'unclaimed' });
    expect(start.claimed).toBeUndefined();
    expect(await exists(dir, DEPLOYMENT_MARKER_KEY)).toBe(false);
    expect(logged('the storage has no deployment marker').length).toBeGreaterThan(0);
    // Its first sync writes the demo feed there (writing is not what the guard is about).
    expect(await publishDemoFeedIfNone(feedDeps(storage), DEMO)).toBe(true);

    const { verified, swept, report } = await dailyJobs(storage);
    for (const key of theirs) expect(await exists(dir, key), key).toBe(true);
    // verify names the orphan and says why it stays; the sweep refused it too.
    expect(verified.ok).toBe(false);
    expect(report.problems.map((p) => `${p.kind} ${p.key}`)).toEqual([
      `orphan ${theirs[1]}`,
      `storage-unclaimed ${DEPLOYMENT_MARKER_KEY}`,
    ]);
    expect(report.repaired).toEqual([
      // The repair does not claim it either: it holds copies and none of this deployment's feeds.
      expect.objectContaining({
        kind: 'repair-failed',
        key: DEPLOYMENT_MARKER_KEY,
        detail: expect.stringContaining('doctor --create'),
      }),
      expect.objectContaining({
        kind: 'delete-refused',
        accountId: DEMO,
        detail: expect.stringContaining('no deployment marker'),
      }),
    ]);
    expect(swept).toMatchObject({
      removedMedia: 0,
      refused: 1,
      storageRefused: expect.stringContaining('no deployment marker'),
    });
    expect(logged('deletes refused: the storage has no deployment marker').length).toBeGreaterThanOrEqual(2);
  });

  it('another deployment’s marker: nothing deleted, both ids named; neither a start nor the operator overwrites it', async () => {
    const dir = await folder();
    const storage = new LocalStorage(dir);
    const theirMarker = JSON.stringify({ feedmirror: 'deployment-marker', deploymentId: 'their-deployment-0001' });
    await file(dir, DEPLOYMENT_MARKER_KEY, theirMarker);
    const id = '17841400000000101';
    await account(id);
    await publishDemoFeedIfNone(feedDeps(storage), id);
    const orphan = await file(dir, mediaKey(id, '1790000000000003', original(3)));

    const { report, swept } = await dailyJobs(storage);
    expect(await exists(dir, orphan)).toBe(true);
    const ours = (await getDeployment(db)).id;
    const refused = report.repaired.find((r) => r.accountId === id)!;
    expect(refused).toMatchObject({ kind: 'delete-refused' });
    expect(refused.detail).toContain(`carries deployment their-deployment-0001, not this deployment (${ours})`);
    expect(swept.storageRefused).toContain('their-deployment-0001');

    expect(await claimStorage({ db, storage, clock })).toMatchObject({
      state: 'foreign',
      markerId: 'their-deployment-0001',
    });
    expect(await claimStorage({ db, storage, clock }, { operator: true })).toMatchObject({ state: 'foreign' });
    expect(await readFile(join(dir, DEPLOYMENT_MARKER_KEY), 'utf8')).toBe(theirMarker);
  });

  it('no marker: nothing deleted; the operator’s `doctor --create` writes it, and then the orphans go, never a file feedmirror did not write nor another account’s', async () => {
    const dir = await folder();
    const storage = new LocalStorage(dir);
    const id = '17841400000000102';
    await account(id);
    await publishDemoFeedIfNone(feedDeps(storage), id);
    const orphan = await file(dir, mediaKey(id, '1790000000000004', original(4)));
    const notOurs = [
      await file(dir, mediaKey(id, '1790000000000004', 'cover.jpg')), // not a name the copy writes
      await file(dir, `media/${id}/notes.v2/${original(5)}`), // not a media id
      await file(dir, `media/${id}/README.md`),
      await file(dir, mediaKey(OTHER, '1790000000000005', original(5))), // not this deployment's account
    ];
    await dailyJobs(storage);
    expect(await exists(dir, orphan)).toBe(true);

    const claimed = await claimStorage({ db, storage, clock }, { operator: true });
    expect(claimed).toMatchObject({ state: 'ours', claimed: 'operator' });
    const { swept, report } = await dailyJobs(storage);
    expect(await exists(dir, orphan)).toBe(false);
    for (const key of notOurs) expect(await exists(dir, key), key).toBe(true);
    // The orphan's folder has no post: the media sweep on verify's listing deleted it (through the
    // same guard); what it could not delete verify's repair refused, naming why.
    expect(report.problems.map((p) => p.key)).not.toContain(orphan);
    expect(report.repaired).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'delete-refused',
          detail: expect.stringContaining('not a name feedmirror writes'),
        }),
      ]),
    );
    expect(swept.removedMedia).toBe(0); // verify got there first
  });

  it('a widget’s and a status document’s removal leave their objects in a storage that is not this deployment’s', async () => {
    const dir = await folder();
    const storage = new LocalStorage(dir);
    const id = '17841400000000103';
    await account(id);
    await publishDemoFeedIfNone(feedDeps(storage), id);
    const wdeps = { db, storage, clock, logger };
    const { widget } = await createWidget(wdeps, { name: 'Shop wall', accounts: [id] });
    await removeWidget(wdeps, widget.id);
    expect(await exists(dir, `widgets/${widget.id}.json`)).toBe(true);
    expect(await exists(dir, `widgets/${widget.id}.html`)).toBe(true);

    const status = statusPublisher(wdeps);
    await status.publish(id);
    await removeAccount(db, id, clock.now());
    await status.remove(id);
    expect(await exists(dir, statusKey(id))).toBe(true);
    // Marked as this deployment's: the status document of the removed account goes.
    await ownStorage(db, storage);
    await status.remove(id);
    expect(await exists(dir, statusKey(id))).toBe(false);
  });
});

describe('R-DEL-1: the marker is written at the first start to a new storage, and at the upgrade to this deployment’s own', () => {
  it('a folder with nothing under media/ (a README aside) is claimed at the first start; the README is never touched', async () => {
    const dir = await folder();
    await file(dir, 'README.txt');
    const storage = new LocalStorage(dir);
    const o = await claimAtStart({ db, storage, clock, logger });
    expect(o).toMatchObject({ state: 'ours', claimed: 'empty' });
    const marker = JSON.parse(await readFile(join(dir, DEPLOYMENT_MARKER_KEY), 'utf8')) as { deploymentId: string };
    expect(marker.deploymentId).toBe((await getDeployment(db)).id);
    // A second start finds it there and writes nothing.
    const before = (await stat(join(dir, DEPLOYMENT_MARKER_KEY))).mtimeMs;
    expect(await claimAtStart({ db, storage, clock, logger })).toEqual({
      state: 'ours',
      deploymentId: marker.deploymentId,
    });
    expect((await stat(join(dir, DEPLOYMENT_MARKER_KEY))).mtimeMs).toBe(before);
    await runMediaSweep({ db, storage, clock, logger });
    expect(await exists(dir, 'README.txt')).toBe(true);
  });

  it('an upgraded deployment: its storage holding a feed as recorded before the upgrade is claimed; a storage that does not, or a feed republished since, proves nothing', async () => {
    const upgrade = await freshDatabase('delguardup');
    const old = createPool(upgrade.url, { max: 2 });
    try {
      // The release before the marker: migrations up to 018.
      const before = await folder();
      await cp(DEFAULT_MIGRATIONS_DIR, before, {
        recursive: true,
        filter: (src) => !/\/0(19|[2-9]\d)_[^/]*\.sql$/.test(src),
      });
      expect((await migrate(old, { dir: before })).current).toBe('018_compact_posts_and_copies.sql');
      const id = '17841400000000201';
      const at = new Date(clock.now().getTime() - 5 * DAY);
      await upsertAccount(old, { id, username: 'harbour.shop' }, at);
      const feed = { ...demoFeed(at), demo: false };
      // As publish hashes it: the feed as JSON, without fetchedAt.
      const { fetchedAt: _f, ...content } = JSON.parse(JSON.stringify(feed)) as typeof feed;
      await saveFeedPublication(old, {
        accountId: id,
        feedHash: contentHash(content),
        publishedAt: at,
        postCount: feed.posts.length,
        demo: false,
        earliestOe: null,
      });
      const ownDir = await folder();
      await file(ownDir, feedKey(id), JSON.stringify(feed));
      await file(ownDir, mediaKey(id, '1790000000000006', original(6)));
      const elsewhere = await folder();
      await file(elsewhere, feedKey(id), JSON.stringify({ ...feed, posts: feed.posts.slice(1) }));
      await file(elsewhere, mediaKey(id, '1790000000000007', original(7)));

      // The upgrade: the deployment migration notes the feeds published so far.
      expect((await migrate(old)).applied).toContain('020_deployment.sql');
      expect((await getDeployment(old)).claimEvidence).toEqual([
        { accountId: id, feedHash: contentHash(content), publishedAt: at },
      ]);
      const start = (dir: string) => claimAtStart({ db: old, storage: new LocalStorage(dir), clock, logger });
      expect(await start(elsewhere)).toMatchObject({ state: 'unclaimed' });
      expect(await exists(elsewhere, DEPLOYMENT_MARKER_KEY)).toBe(false);
      expect(await start(ownDir)).toMatchObject({ state: 'ours', claimed: 'own-feeds' });

      // The same feed republished by this version (it may have gone to a wrong storage): no proof.
      await saveFeedPublication(old, {
        accountId: id,
        feedHash: contentHash(content),
        publishedAt: clock.now(),
        postCount: feed.posts.length,
        demo: false,
        earliestOe: null,
      });
      const copyOfIt = await folder();
      await file(copyOfIt, feedKey(id), JSON.stringify(feed));
      await file(copyOfIt, mediaKey(id, '1790000000000008', original(8)));
      expect(await start(copyOfIt)).toMatchObject({ state: 'unclaimed' });
    } finally {
      await old.end();
      await upgrade.drop();
    }
  });
});

/** A real folder whose reads can be told to do something first: the moment between a check and its delete. */
class HookedStorage extends LocalStorage {
  onGet?: ((key: string) => Promise<void>) | undefined;
  override async get(key: string): Promise<StoredObject | null> {
    const hook = this.onGet;
    if (hook) await hook(key);
    return super.get(key);
  }
}

describe('R-DEL-3: the record is read again right before each delete', () => {
  it('verify --repair keeps an orphan that became a recorded copy between its check and the delete', async () => {
    const dir = await folder();
    const storage = new HookedStorage(dir);
    await ownStorage(db, storage);
    const id = '17841400000000301';
    await account(id);
    await publishDemoFeedIfNone(feedDeps(storage), id);
    const orphan = await file(dir, mediaKey(id, '1790000000000009', original(9)));
    // The repair opens the guard after the check: a copy in flight records the object just then.
    storage.onGet = async (key) => {
      if (key !== DEPLOYMENT_MARKER_KEY) return;
      storage.onGet = undefined;
      await saveMediaCopy(db, {
        accountId: id,
        mediaId: '1790000000000009',
        slot: 'cover',
        sourceId: 'https://images.example.test/9.jpg',
        key: orphan,
        width: 100,
        height: 100,
        bytes: 14,
        contentType: 'image/jpeg',
        variants: [],
        placeholder: null,
        copiedAt: clock.now(),
      });
    };
    const report = await runVerify(feedDeps(storage), { trigger: 'cli', accountId: id, repair: true });
    expect(report.found?.map((p) => `${p.kind} ${p.key}`)).toEqual([`orphan ${orphan}`]);
    expect(await exists(dir, orphan)).toBe(true);
    expect(report.repaired).toEqual([expect.objectContaining({ kind: 'orphan-kept', accountId: id })]);
    expect(report.ok).toBe(true); // referenced now: no orphan any more
  });

  it('the media sweep keeps the objects of a post listed again between its look and the delete', async () => {
    const dir = await folder();
    const storage = new HookedStorage(dir);
    await ownStorage(db, storage);
    const id = '17841400000000302';
    await account(id);
    await publishDemoFeedIfNone(feedDeps(storage), id);
    const back = await file(dir, mediaKey(id, '1790000000000010', original(10)));
    const gone = await file(dir, mediaKey(id, '1790000000000011', original(11)));
    // The guard reads the account's feed once it was handed the orphans: a sync stores the post then.
    storage.onGet = async (key) => {
      if (key !== feedKey(id)) return;
      storage.onGet = undefined;
      const post = { ...demoFeed(clock.now()).posts[0]!, id: '1790000000000010' };
      await upsertPosts(db, id, [{ mediaId: post.id, post, contentHash: 'h10', earliestOe: null }], clock.now());
    };
    const r = await runMediaSweep({ db, storage, clock, logger }, { accountId: id });
    expect(await exists(dir, back)).toBe(true);
    expect(await exists(dir, gone)).toBe(false);
    expect(r).toMatchObject({ accounts: 1, removedMedia: 1, held: 0, refused: 0 });
  });
});

describe('R-DEL-4: a mass deletion is held until --force; a post deleted at the source still leaves (R-LNK-6)', () => {
  /** `media` media items of 10 objects each (an original, 8 variants, a manifest), as the copy names them. */
  async function copies(dir: string, id: string, from: number, media: number): Promise<string[]> {
    const keys: string[] = [];
    for (let m = from; m < from + media; m++) {
      const mediaId = `17900000000${String(m).padStart(5, '0')}`;
      keys.push(await file(dir, mediaKey(id, mediaId, original(m))));
      for (const w of [160, 240, 360, 540, 810, 1215, 1820, 2730])
        keys.push(await file(dir, mediaKey(id, mediaId, variant(m, w))));
      keys.push(await file(dir, mediaKey(id, mediaId, 'cover.json')));
    }
    return keys;
  }

  it('the media sweep holds 300 of 310 objects (over 200 and over half), says so and how to go on; `feedmirror media sweep --force` deletes them', async () => {
    const dir = await folder();
    const storage = new LocalStorage(dir);
    await ownStorage(db, storage);
    const id = '17841400000000401';
    await account(id);
    await publishDemoFeedIfNone(feedDeps(storage), id);
    const kept = await copies(dir, id, 100, 1);
    const post = { ...demoFeed(clock.now()).posts[0]!, id: '1790000000000100' };
    await upsertPosts(db, id, [{ mediaId: post.id, post, contentHash: 'h', earliestOe: null }], clock.now());
    const orphans = await copies(dir, id, 101, 30);

    const held = await runMediaSweep({ db, storage, clock, logger }, { accountId: id });
    expect(held).toMatchObject({ removedMedia: 0, held: 300, refused: 0 });
    for (const key of orphans) expect(await exists(dir, key), key).toBe(true);
    expect(logged(`deletes held: this run would delete 300 of the account's 310 objects`)[0]).toContain(
      `feedmirror media sweep --account ${id} --force`,
    );

    // The operator looks, then goes on (the CLI, in this process).
    const io = memoryIO({ env: { DATABASE_URL: databaseUrl, STORAGE_URL: dir, LOG_LEVEL: 'silent' } });
    expect(await main(['media', 'sweep', '--account', id, '--json'], io)).toBe(1);
    expect(JSON.parse(io.out())).toMatchObject({ held: 300 });
    const forced = memoryIO({ env: { DATABASE_URL: databaseUrl, STORAGE_URL: dir, LOG_LEVEL: 'silent' } });
    expect(await main(['media', 'sweep', '--account', id, '--force', '--json'], forced)).toBe(0);
    expect(JSON.parse(forced.out())).toMatchObject({ accounts: 1, removedMedia: 30, held: 0, refused: 0 });
    for (const key of orphans) expect(await exists(dir, key), key).toBe(false);
    for (const key of kept) expect(await exists(dir, key), key).toBe(true);
  });

  it('verify --repair holds them too (delete-held, naming the command); --repair --force deletes them; --force alone is a usage error', async () => {
    const dir = await folder();
    const storage = new LocalStorage(dir);
    await ownStorage(db, storage);
    const id = '17841400000000402';
    await account(id);
    await publishDemoFeedIfNone(feedDeps(storage), id);
    const orphans = await copies(dir, id, 200, 25);
    const deps = feedDeps(storage);
    const held = await runVerify(deps, { trigger: 'cli', accountId: id, repair: true });
    expect(held.ok).toBe(false);
    expect(held.repaired).toEqual([
      expect.objectContaining({
        kind: 'delete-held',
        accountId: id,
        detail: expect.stringContaining(`250 orphans (first media/${id}/`),
      }),
    ]);
    expect(held.repaired[0]!.detail).toContain(`feedmirror verify --account ${id} --repair --force`);
    for (const key of orphans) expect(await exists(dir, key), key).toBe(true);

    const forced = await runVerify(deps, { trigger: 'cli', accountId: id, repair: true, force: true });
    expect(forced.ok).toBe(true);
    expect(forced.repaired.filter((r) => r.kind === 'deleted-orphan')).toHaveLength(250);
    for (const key of orphans) expect(await exists(dir, key), key).toBe(false);

    const usage = memoryIO({ env: { DATABASE_URL: databaseUrl, STORAGE_URL: dir } });
    expect(await main(['verify', '--force'], usage)).toBe(2);
    expect(usage.err()).toContain('--force goes with --repair');
  });

  it('R-LNK-6: an account’s only post, deleted at the source, leaves with every one of its objects (all of the account’s: below the cap’s floor)', async () => {
    const dir = await folder();
    const storage = new LocalStorage(dir, 'http://media.example.test/');
    await ownStorage(db, storage);
    const id = '17841400000000403';
    await account(id);
    const deps = feedDeps(storage);
    const mediaId = '1790000000000500';
    const post = { ...demoFeed(clock.now()).posts.find((p) => p.type === 'image')!, id: mediaId };
    await upsertPosts(db, id, [{ mediaId, post, contentHash: contentHash(post), earliestOe: null }], clock.now());
    const objects = [
      await file(dir, mediaKey(id, mediaId, original(500)), 'jpeg'),
      await file(dir, mediaKey(id, mediaId, variant(500, 160)), 'webp'),
      await file(dir, mediaKey(id, mediaId, 'cover.json'), '{}'),
    ];
    await saveMediaCopy(db, {
      accountId: id,
      mediaId,
      slot: 'cover',
      sourceId: post.thumbnailUrl!,
      key: objects[0]!,
      width: 1080,
      height: 1080,
      bytes: 4,
      contentType: 'image/jpeg',
      variants: [{ key: objects[1]!, width: 160, height: 160, contentType: 'image/webp' }],
      placeholder: null,
      copiedAt: clock.now(),
    });
    expect(await publishAccountFeed(deps, id, { complete: true })).toMatchObject({ outcome: 'written', postCount: 1 });

    // A complete listing no longer has it: pruned from the store, then published.
    await deletePosts(db, id, [mediaId]);
    const out = await publishAccountFeed(deps, id, { complete: true });
    expect(out).toMatchObject({ outcome: 'written', postCount: 0, removedMedia: [mediaId] });
    for (const key of objects) expect(await exists(dir, key), key).toBe(false);
  });
});

describe('R-DEL-2: probes', () => {
  it('a probe is deleted by the process that wrote it while it holds the bytes written, and nothing but a probe', async () => {
    const dir = await folder();
    const storage = new LocalStorage(dir);
    const body = randomBytes(32);
    const opts = { contentType: 'application/octet-stream', cacheControl: 'no-store' };
    await storage.put('feeds/readiness-probe-0123456789ab.txt', body, opts);
    await storage.put('feeds/readiness-probe-ba9876543210.txt', randomBytes(32), opts);
    await storage.put('feeds/notes.txt', body, opts);
    expect(await removeProbe(storage, 'feeds/notes.txt', body)).toBe(false);
    expect(await removeProbe(storage, 'feeds/readiness-probe-ba9876543210.txt', body)).toBe(false);
    expect(await removeProbe(storage, 'feeds/readiness-probe-0123456789ab.txt', body)).toBe(true);
    expect(await exists(dir, 'feeds/notes.txt')).toBe(true);
    expect(await exists(dir, 'feeds/readiness-probe-ba9876543210.txt')).toBe(true);
    expect(await exists(dir, 'feeds/readiness-probe-0123456789ab.txt')).toBe(false);
  });
});
