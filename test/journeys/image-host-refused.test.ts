import { describe, expect, it } from 'vitest';
import type { Feed } from '../../src/schema/v1.ts';
import { HOUR } from '../../src/util/clock.ts';
import { useStage, type Stage, type StageProcess } from './stage.ts';

/**
 * docs "Feeds" and "Operating": the image host stops matching MEDIA_ALLOWED_HOSTS after the feed was
 * published (the platform moved its images, or the setting was edited), then is allowed again.
 * Meanwhile the platform changes: two posts get new pictures (one a new caption too), a post is
 * added. The feed a site reads never loses a post or an image (R-OWN-6): the changed posts keep
 * their copies, the new post waits; the account is not "ok" while copies are refused; once the
 * host is allowed, the new pictures and the new post arrive.
 */
describe('journey: the image host refused, then allowed again', () => {
  let stage: Stage;
  useStage('hostrefused', (s) => (stage = s));

  const ids = (f: Feed | null) => (f ? f.posts.map((p) => p.id) : []);
  const keyOf = (url: string) => url.slice(stage.env.MEDIA_PUBLIC_URL!.length);
  async function health(id: string): Promise<string | undefined> {
    const list = await stage.cli(['accounts', 'list', '--json']);
    const row = (JSON.parse(list.stdout) as Array<{ id: string; health?: { verdict: string } }>).find(
      (a) => a.id === id,
    );
    return row?.health?.verdict;
  }

  it('the published feed never shrinks and the account is not ok while refused; allowed again, the changes arrive', async () => {
    let worker: StageProcess = await stage.startWorker();
    const acc = await stage.connect({ username: 'lakeside.studio', posts: 5 });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    await stage.until(async () => (await stage.feed(acc.id))?.demo === false, 'the first real feed', 60_000);
    const before = (await stage.feed(acc.id))!;
    const seen: Feed[] = [];
    const sample = async () => {
      const f = await stage.feed(acc.id);
      if (f) seen.push(f);
      return f;
    };

    // The image host no longer matches the setting the worker runs with.
    await worker.stop();
    worker = await stage.startWorker({ env: { MEDIA_ALLOWED_HOSTS: 'images.elsewhere.example' } });
    const [edited, repictured] = before.posts.filter((p) => p.type === 'image');
    expect(edited && repictured, 'two photo posts in the mix').toBeTruthy();
    stage.sim.updatePost(acc.id, edited!.id, { caption: 'new caption, new picture', width: 720, height: 720 });
    stage.sim.updatePost(acc.id, repictured!.id, { width: 640, height: 640 });
    const added = stage.sim.addPost(acc.id, { kind: 'image', caption: 'a new post' });
    await stage.advance(HOUR);
    expect((await stage.cli(['sync', acc.id])).code).toBe(0);
    await stage.until(
      async () => (await sample())?.posts.find((p) => p.id === edited!.id)?.text === 'new caption, new picture',
      'the new caption published while the pictures are refused',
      60_000,
    );
    const during = (await stage.feed(acc.id))!;
    expect(ids(during)).toEqual(ids(before)); // the new post waits for its picture
    expect(during.posts.find((p) => p.id === edited!.id)!.thumbnailUrl).toBe(edited!.thumbnailUrl);
    expect(during.posts.find((p) => p.id === repictured!.id)!.thumbnailUrl).toBe(repictured!.thumbnailUrl);
    for (const p of during.posts) expect((await stage.fetchPublic(keyOf(p.thumbnailUrl!))).status, p.id).toBe(200);
    await stage.until(
      async () => (await health(acc.id)) !== undefined && (await health(acc.id)) !== 'ok',
      'a health that is not ok',
      30_000,
    );
    expect(worker.output()).toMatch(/MEDIA_ALLOWED_HOSTS|not allowed|refus/i);

    // Allowed again.
    await worker.stop();
    await stage.startWorker(); // stopped by stage.close()
    await stage.advance(HOUR);
    expect((await stage.cli(['sync', acc.id])).code).toBe(0);
    await stage.until(
      async () => {
        const f = await sample();
        return (
          ids(f).includes(added) &&
          f!.posts.find((p) => p.id === repictured!.id)!.thumbnailUrl !== repictured!.thumbnailUrl
        );
      },
      'the new post and the new pictures published',
      60_000,
    );
    const after = (await stage.feed(acc.id))!;
    expect(ids(after)).toEqual([added, ...ids(before)]);
    for (const p of after.posts) expect((await stage.fetchPublic(keyOf(p.thumbnailUrl!))).status, p.id).toBe(200);
    for (const f of seen) {
      expect(f.demo).toBe(false);
      for (const id of ids(before)) expect(ids(f), 'a post left the feed').toContain(id);
    }
  }, 240_000);
});
