import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useStage, type Stage } from './stage.ts';
import { imageUrls } from '../support/feed-images.ts';

/**
 * docs/operating.md "Checking that the stores agree", with a worker running and the copies in a
 * local folder: files deleted from storage behind feedmirror's back (the operator's `rm`). The
 * feed kept pointing at them and nothing noticed; `feedmirror verify` names each one and exits 1,
 * `verify --repair` copies them again and exits 0, and a site reading the feed gets every image.
 * The feed object itself deleted: the next sync publishes it again.
 */

describe('journey: objects deleted from storage behind feedmirror back', () => {
  let stage: Stage;
  useStage('behindback', (s) => (stage = s));

  it('verify names each deleted copy (exit 1), --repair restores them (exit 0), the site gets every image; a deleted feed comes back with the next sync', async () => {
    const acc = await stage.connect({ username: 'harbour.deli', posts: 5 });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    const worker = await stage.startWorker();
    await stage.until(async () => (await stage.feed(acc.id))?.demo === false, 'the first real feed', 60_000);
    const serve = await stage.startServe();
    const feed = (await stage.feed(acc.id))!;
    const urls = imageUrls(feed);
    for (const url of urls) expect((await fetch(url)).status, url).toBe(200);

    const clean = await stage.cli(['verify']);
    expect(clean.code, clean.stdout + clean.stderr).toBe(0);
    expect(clean.stdout).toContain('all well');

    // The operator (or a cleanup script) deletes a cover and one size of another photo.
    const keyOf = (url: string) => url.slice(stage.env.MEDIA_PUBLIC_URL!.length);
    const cover = keyOf(feed.posts[0]!.thumbnailUrl!);
    const size = keyOf(feed.posts[1]!.thumbnailSizes![0]!.url);
    await rm(join(stage.dir, 'data/storage', cover));
    await rm(join(stage.dir, 'data/storage', size));
    expect((await fetch(feed.posts[0]!.thumbnailUrl!)).status).toBe(404);

    const found = await stage.cli(['verify']);
    expect(found.code, found.stdout + found.stderr).toBe(1);
    expect(found.stdout).toMatch(new RegExp(`object-missing .*${cover}`));
    expect(found.stdout).toMatch(new RegExp(`object-missing .*${size}`));
    expect(found.stdout).toContain('feedmirror verify --repair');
    const json = await stage.cli(['verify', '--json']);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { ok: boolean; problems: Array<{ kind: string; key: string }> };
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => `${p.kind} ${p.key}`).sort()).toEqual(
      [`object-missing ${cover}`, `object-missing ${size}`].sort(),
    );

    const repaired = await stage.cli(['verify', '--repair']);
    expect(repaired.code, repaired.stdout + repaired.stderr).toBe(0);
    expect(repaired.stdout).toContain('all well after the repair');
    const after = (await stage.feed(acc.id))!;
    for (const url of imageUrls(after)) expect((await fetch(url)).status, url).toBe(200);
    expect(after.posts).toHaveLength(5);
    expect((await stage.cli(['verify'])).code).toBe(0);

    // The feed object itself: a site gets 404 until the next sync publishes it again.
    await rm(join(stage.dir, 'data/storage', `feeds/${acc.id}.json`));
    expect(await stage.feed(acc.id)).toBeNull();
    const sync = await stage.cli(['sync', acc.id]);
    expect(sync.code, sync.stderr).toBe(0);
    await stage.until(async () => (await stage.feed(acc.id)) !== null, 'the feed published again', 30_000);
    expect((await stage.feed(acc.id))!.posts).toHaveLength(5);
    expect((await fetch(`${serve.url}/feeds/${acc.id}.json`)).status).toBe(200);
    expect(worker.output()).toContain('the published feed is missing from storage');
  }, 180_000);
});
