import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { imageKeyOf, jpegFor } from '../../src/simulator/images.ts';
import { PHOTOS, PHOTOS_DIR, photoForCaption } from '../../src/simulator/photos.ts';
import { closestPhoto } from '../support/photo-match.ts';

/**
 * The demo's accounts (created with `photos: true`) post the bundled photographs, credited in
 * photos/CREDITS.md: photos, carousel slides and video covers, cropped to each post's size, with
 * the key in the EXIF description as for every simulated picture (R-SIM-3). Every other account
 * keeps its generated scenes, byte for byte.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are navigated freely in assertions
type Json = Record<string, any>;

/** Close to a bundled photo (a crop of it, re-encoded) vs. far from all of them (a scene), in 0..255 units. */
const SAME_PHOTO = 8;
const NOT_A_PHOTO = 20;

describe('simulator: photographs for the demo accounts', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator();
  });
  afterAll(async () => {
    await sim?.close();
  });

  async function pictures(accountId: string): Promise<Array<{ link: string; key: string; bytes: Buffer }>> {
    const token = sim.issueLongLivedToken(accountId);
    const fields = 'media_type,media_url,thumbnail_url,children{media_type,media_url,thumbnail_url}';
    const items = (
      (await (await fetch(`${sim.graphUrl}/v25.0/me/media?fields=${fields}&access_token=${token}`)).json()) as Json
    ).data as Json[];
    const links: string[] = [];
    for (const item of items) {
      if (item.children) {
        for (const c of item.children.data as Json[])
          links.push(c.media_type === 'VIDEO' ? c.thumbnail_url : c.media_url);
      } else links.push(item.media_type === 'VIDEO' ? item.thumbnail_url : item.media_url);
    }
    return Promise.all(
      links.map(async (link) => {
        const res = await fetch(link);
        expect(res.status).toBe(200);
        const m = /\/v\/\d+\/(\d+)\/([a-z0-9-]+)\.jpg/.exec(link)!;
        return { link, key: `${m[1]}/${m[2]}`, bytes: Buffer.from(await res.arrayBuffer()) };
      }),
    );
  }

  async function captions(accountId: string): Promise<string[]> {
    const token = sim.issueLongLivedToken(accountId);
    const res = await fetch(`${sim.graphUrl}/v25.0/me/media?fields=caption&access_token=${token}`);
    return ((await res.json()) as Json).data.map((item: Json) => item.caption);
  }

  it('a photo account shows bundled photos on photos, slides and video covers; keys intact; neighbours differ', async () => {
    const { id } = sim.createAccount({
      username: 'photo.bakery',
      photos: true,
      posts: [
        { kind: 'image', width: 1080, height: 1350 },
        { kind: 'carousel', slides: ['image', 'video', 'image'], width: 1080, height: 1080 },
        { kind: 'reel', width: 1080, height: 1920 },
        { kind: 'video', width: 1080, height: 1080 },
        { kind: 'image', width: 1080, height: 810 },
      ],
    });
    const got = await pictures(id);
    expect(got).toHaveLength(7); // 1 + 3 slides (a video slide's cover) + 2 covers + 1
    const matched: string[] = [];
    for (const p of got) {
      expect(await imageKeyOf(p.bytes), p.link).toBe(p.key);
      const meta = await sharp(p.bytes).metadata();
      expect(meta.format).toBe('jpeg');
      const closest = await closestPhoto(p.bytes);
      expect(closest.diff, `${p.key}: ${closest.file}`).toBeLessThan(SAME_PHOTO);
      matched.push(closest.file);
    }
    // Sizes as the posts say: the first post is 1080x1350, the reel's cover 1080x1920.
    expect(await sharp(got[0]!.bytes).metadata()).toMatchObject({ width: 1080, height: 1350 });
    expect(await sharp(got[4]!.bytes).metadata()).toMatchObject({ width: 1080, height: 1920 });
    // Seven pictures in a row, seven different photographs.
    expect(new Set(matched).size, matched.join(' ')).toBe(7);
    // Each post's caption is what its cover shows: the caption of the photo its cover matched.
    const covers = [matched[0], matched[1], matched[4], matched[5], matched[6]];
    expect(await captions(id)).toEqual(covers.map((file) => PHOTOS.find((p) => p.file === file)!.caption));
  });

  it('a post added later through the control API (`simulator post add`) is a photo too', async () => {
    const made = await fetch(`${sim.url}/__sim/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sim.controlSecret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'photo.cafe', photos: true }),
    });
    expect(made.status).toBe(200);
    const { id } = (await made.json()) as { id: string };
    const added = await fetch(`${sim.url}/__sim/accounts/${id}/posts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sim.controlSecret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'image' }),
    });
    expect(added.status).toBe(200);
    const [p] = await pictures(id);
    expect(await imageKeyOf(p!.bytes)).toBe(p!.key);
    const closest = await closestPhoto(p!.bytes);
    expect(closest.diff).toBeLessThan(SAME_PHOTO);
    expect(await captions(id)).toEqual([PHOTOS.find((x) => x.file === closest.file)!.caption]);
  });

  it('a post given its own caption shows the photo that caption talks about; each photo’s own caption is about it', async () => {
    // Every bundled photo's caption names its own subjects first (the demo pairs them).
    PHOTOS.forEach((p, i) => expect(photoForCaption(p.caption), p.file).toBe(i));
    expect(photoForCaption('Cinnamon rolls are back! #bakery #fresh')).toBeNull();
    const { id } = sim.createAccount({
      username: 'photo.captions',
      photos: true,
      posts: [
        { kind: 'image', caption: 'Fig tarts are back! #bakery #fresh', width: 1080, height: 1080 },
        { kind: 'image', caption: 'Say hello to our shop dogs 🐶', width: 1080, height: 1350 },
        { kind: 'reel', caption: 'Wine and drums this Friday #livemusic', width: 1080, height: 1920 },
      ],
    });
    const covers = await Promise.all((await pictures(id)).map(async (p) => (await closestPhoto(p.bytes)).file));
    expect(covers).toEqual(['fig.jpg', 'dogs.jpg', 'table.jpg']);
    // `simulator post add --caption` (the control API) too.
    const added = await fetch(`${sim.url}/__sim/accounts/${id}/posts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sim.controlSecret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'image', caption: 'A fresh espresso to start the day #coffee' }),
    });
    expect(added.status).toBe(200);
    const [newest] = await pictures(id);
    expect((await closestPhoto(newest!.bytes)).file).toBe('coffee.jpg');
  });

  it('any other account keeps its generated scenes, unchanged', async () => {
    const { id } = sim.createAccount({
      posts: [
        { kind: 'image', width: 1080, height: 1350 },
        { kind: 'reel', width: 1080, height: 1920 },
      ],
    });
    const got = await pictures(id);
    expect(got).toHaveLength(2);
    for (const p of got) {
      expect(await imageKeyOf(p.bytes)).toBe(p.key);
      expect((await closestPhoto(p.bytes)).diff, p.key).toBeGreaterThan(NOT_A_PHOTO);
      // The same bytes as a scene rendered directly for that key and size.
      const { width, height } = await sharp(p.bytes).metadata();
      expect((await jpegFor(p.key, width, height)).equals(p.bytes)).toBe(true);
    }
  });

  it('every bundled photo is listed, credited, at most 1080 px on its longer side; about 1.2 MB in all', async () => {
    const dir = fileURLToPath(PHOTOS_DIR);
    const files = readdirSync(dir).filter((f) => f.endsWith('.jpg'));
    expect(files.sort()).toEqual(PHOTOS.map((p) => p.file).sort());
    const credits = readFileSync(`${dir}CREDITS.md`, 'utf8');
    let total = 0;
    for (const f of files) {
      const row = credits.split('\n').find((l) => l.startsWith(`| ${f} |`));
      expect(row, f).toMatch(
        /\| \[CC(0-1\.0|-BY-4\.0|-BY-SA-[34]\.0)\]\(https:\/\/creativecommons\.org\/[^)]+\) \| Debian `/,
      );
      const bytes = readFileSync(`${dir}${f}`);
      total += bytes.length;
      const { width, height } = await sharp(bytes).metadata();
      expect(Math.max(width, height), f).toBeLessThanOrEqual(1080);
    }
    expect(total).toBeLessThan(2.5 * 1024 * 1024);
  });
});
