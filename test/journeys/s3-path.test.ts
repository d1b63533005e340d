import { DeleteObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3RVER_CREDENTIALS } from '../support/s3.ts';
import { openStage, type Stage } from './stage.ts';
import { imageUrls } from '../support/feed-images.ts';

/**
 * docs/getting-started.md "Running with S3", steps 4 to 9, as written: `init --storage s3://…`,
 * the credentials and MEDIA_PUBLIC_URL filled in, `doctor`, an account added from the CLI,
 * `sync --wait`, the feed read from the bucket as browsers read it and with `feeds get`, then
 * `verify`. Objects deleted from the bucket behind feedmirror's back (`aws s3 rm`): verify names
 * them and exits 1, `verify --repair` restores them; the feed object deleted: the next sync
 * publishes it again.
 */

describe('journey: running with S3', () => {
  let stage: Stage;
  let s3: S3Client;
  beforeAll(async () => {
    stage = await openStage('s3path', { storage: 's3' });
    s3 = new S3Client({
      endpoint: stage.s3!.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    });
  });
  afterAll(async () => {
    s3?.destroy();
    await stage?.close();
  });

  it('init, doctor, add, sync --wait, read from the bucket, verify; deleted objects named and repaired', async () => {
    expect(stage.env.STORAGE_URL).toBe(`s3://${stage.s3!.bucket}/feedmirror`);
    const doctor = await stage.cli(['doctor']);
    expect(doctor.stdout, doctor.stdout + doctor.stderr).toMatch(/^ready/m);
    const acc = await stage.connect({ username: 'bucket.bakery', posts: 5 });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    const sync = await stage.cli(['sync', acc.id, '--wait']);
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    expect(sync.stdout).toContain('feed written');

    // Read from the bucket as browsers do (MEDIA_PUBLIC_URL), and with feeds get.
    const feed = (await stage.feed(acc.id))!;
    expect(feed.demo).toBe(false);
    expect(feed.posts).toHaveLength(5);
    const got = await stage.cli(['feeds', 'get', acc.id, '--json']);
    expect(JSON.parse(got.stdout)).toMatchObject({ demo: false });
    const urls = imageUrls(feed);
    for (const url of urls) {
      expect(url.startsWith(stage.env.MEDIA_PUBLIC_URL!), url).toBe(true);
      expect((await fetch(url)).status, url).toBe(200);
    }

    const clean = await stage.cli(['verify']);
    expect(clean.code, clean.stdout + clean.stderr).toBe(0);
    expect(clean.stdout).toMatch(new RegExp(`checked 1 account\\(s\\), 1 feed\\(s\\), ${urls.length} object\\(s\\)`));

    // `aws s3 rm` of a cover and of one size of another photo.
    const keyOf = (url: string) => url.slice(stage.env.MEDIA_PUBLIC_URL!.length);
    const cover = keyOf(feed.posts[0]!.thumbnailUrl!);
    const size = keyOf(feed.posts[2]!.thumbnailSizes![0]!.url);
    for (const key of [cover, size])
      await s3.send(new DeleteObjectCommand({ Bucket: stage.s3!.bucket, Key: `feedmirror/${key}` }));
    expect((await fetch(feed.posts[0]!.thumbnailUrl!)).status).toBe(404);

    const found = await stage.cli(['verify']);
    expect(found.code, found.stdout + found.stderr).toBe(1);
    expect(found.stdout).toMatch(new RegExp(`object-missing .*${cover}`));
    expect(found.stdout).toMatch(new RegExp(`object-missing .*${size}`));

    const repaired = await stage.cli(['verify', '--repair', '--json']);
    expect(repaired.code, repaired.stdout + repaired.stderr).toBe(0);
    const report = JSON.parse(repaired.stdout) as {
      ok: boolean;
      found: Array<{ kind: string; key: string }>;
      repaired: Array<{ kind: string }>;
    };
    expect(report.ok).toBe(true);
    expect(report.found.map((p) => p.key).sort()).toEqual([cover, size].sort());
    expect(report.repaired.map((r) => r.kind)).toContain('recopied');
    for (const url of imageUrls((await stage.feed(acc.id))!)) expect((await fetch(url)).status, url).toBe(200);

    // The feed object itself deleted from the bucket: the next sync publishes it again.
    await s3.send(new DeleteObjectCommand({ Bucket: stage.s3!.bucket, Key: `feedmirror/feeds/${acc.id}.json` }));
    expect(await stage.feed(acc.id)).toBeNull();
    const again = await stage.cli(['sync', acc.id, '--wait']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain('feed written');
    expect((await stage.feed(acc.id))!.posts).toHaveLength(5);
    expect((await stage.cli(['verify'])).code).toBe(0);
  }, 180_000);
});
