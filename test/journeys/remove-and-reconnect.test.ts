import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Feed } from '../../src/schema/v1.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { openStage, type Stage } from './stage.ts';

/**
 * docs "Connecting an account": an account removed (`feedmirror accounts remove`) keeps its feed and
 * copies in storage; its owner connects it again (`feedmirror accounts add` with a new token). The
 * feed a site reads never turns into the demo feed or shrinks meanwhile, comes back with every
 * post, and no image is downloaded again: the copies already in storage are reused (R-OWN-6).
 * Before, the first sync wrote the demo feed over it and the worker downloaded every image again.
 */
describe('journey: remove an account, then connect it again', () => {
  let stage: Stage;
  beforeAll(async () => {
    stage = await openStage('reconnect');
  });
  afterAll(async () => {
    await stage?.close();
  });

  const ids = (f: Feed | null) => (f ? f.posts.map((p) => p.id) : []);

  it('the feed comes back with its posts, never the demo or fewer posts, reusing its copies (no image downloaded)', async () => {
    await stage.startWorker();
    const acc = await stage.connect({ username: 'harbour.bakery', posts: 8 });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    await stage.until(async () => (await stage.feed(acc.id))?.demo === false, 'the first real feed', 60_000);
    const before = (await stage.feed(acc.id))!;
    expect(before.posts.length).toBeGreaterThan(5);

    const removed = await stage.cli(['accounts', 'remove', acc.id]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(ids(await stage.feed(acc.id))).toEqual(ids(before)); // removal keeps the published feed

    const downloads = () =>
      stage.sim.requests.filter(
        (r) => r.host === 'cdn' && r.path.startsWith(`/v/${acc.id}/`) && r.path.endsWith('.jpg'),
      ).length;
    const downloadsBefore = downloads();
    const token = stage.sim.issueShortLivedToken(acc.id);
    registerSecretForAudit(token);
    const added = await stage.cli(['accounts', 'add'], { stdin: token });
    expect(added.code, added.stderr).toBe(0);

    // What a site reads, sampled until the worker's first sync after the reconnect has run.
    const seen: Feed[] = [];
    const sample = async () => {
      const f = await stage.feed(acc.id);
      if (f) seen.push(f);
    };
    await stage.until(
      async () => {
        await sample();
        const list = await stage.cli(['accounts', 'list', '--json']);
        const row = (JSON.parse(list.stdout) as Array<{ id: string; lastSyncAt: string | null }>).find(
          (a) => a.id === acc.id,
        );
        return Boolean(row?.lastSyncAt);
      },
      'the first sync after the reconnect',
      60_000,
    );
    // The operator's own look: a sync by hand copies nothing and finds the feed as it is.
    const sync = await stage.cli(['sync', acc.id, '--wait']);
    await sample();
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    expect(sync.stdout).toMatch(/images copied 0, reused 0/);
    for (const f of seen) {
      expect(f.demo).toBe(false);
      expect(ids(f)).toEqual(ids(before));
    }
    const after = (await stage.feed(acc.id))!;
    expect(ids(after)).toEqual(ids(before));
    expect(after.posts.map((p) => p.thumbnailUrl)).toEqual(before.posts.map((p) => p.thumbnailUrl));
    for (const p of after.posts)
      expect((await stage.fetchPublic(p.thumbnailUrl!.slice(stage.env.MEDIA_PUBLIC_URL!.length))).status).toBe(200);
    expect(downloads()).toBe(downloadsBefore);

    const list = await stage.cli(['accounts', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect(
      (JSON.parse(list.stdout) as Array<{ id: string; status: string }>).find((a) => a.id === acc.id)?.status,
    ).toBe('active');
  }, 180_000);
});
