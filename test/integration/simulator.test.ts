import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import sharp from 'sharp';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { runSimulator } from '../../src/cli/start/simulator.ts';
import { DAY, HOUR, MINUTE } from '../../src/util/clock.ts';
import type { CliIO } from '../../src/cli/io.ts';

/**
 * The platform simulator over real HTTP: the fake every other test relies on must itself keep
 * the spec's rules, or those tests prove nothing.
 */

/** Answers are navigated freely in assertions; a wrong path fails the assertion anyway. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
type Json = Record<string, any>;

async function getJson(
  url: string | URL,
  init?: RequestInit,
): Promise<{ status: number; body: Json; headers: Headers }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {}, headers: res.headers };
}

function graph(sim: Simulator, path: string, params: Record<string, string>): URL {
  const u = new URL(`${sim.graphUrl}${path}`);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u;
}

function oeOf(link: string): number {
  return parseInt(new URL(link).searchParams.get('oe') ?? '', 16) * 1000;
}

function postForm(url: string, form: Record<string, string>): Promise<Response> {
  return fetch(url, { method: 'POST', body: new URLSearchParams(form), redirect: 'manual' });
}

describe('platform simulator', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ start: new Date('2026-03-01T00:00:00Z') });
  });
  afterAll(async () => {
    await sim.close();
  });

  describe('tokens', () => {
    it('exchange needs the app secret and an unexpired short-lived token (R-TOK-1, R-TOK-3)', async () => {
      const { id } = sim.createAccount({ posts: 1 });
      const short = sim.issueShortLivedToken(id);
      const bad = await getJson(
        graph(sim, '/access_token', { grant_type: 'ig_exchange_token', client_secret: 'wrong', access_token: short }),
      );
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe(101);
      const ok = await getJson(
        graph(sim, '/access_token', {
          grant_type: 'ig_exchange_token',
          client_secret: sim.appSecret,
          access_token: short,
        }),
      );
      expect(ok.status).toBe(200);
      expect(ok.body.token_type).toBe('bearer');
      expect(ok.body.access_token).not.toBe(short);
      expect(ok.body.expires_in).toBeGreaterThan(59 * 86400);
      expect(ok.body.expires_in).toBeLessThanOrEqual(60 * 86400);
      const unknown = await getJson(
        graph(sim, '/access_token', {
          grant_type: 'ig_exchange_token',
          client_secret: sim.appSecret,
          access_token: 'nope',
        }),
      );
      expect(unknown.body.error.code).toBe(190);
      expect(unknown.body.error.error_subcode).toBeUndefined();
    });

    it('a short-lived token dies after one hour: 190/463 (R-TOK-1)', async () => {
      const { id } = sim.createAccount();
      const short = sim.issueShortLivedToken(id);
      sim.clock.advance(HOUR);
      const r = await getJson(
        graph(sim, '/access_token', {
          grant_type: 'ig_exchange_token',
          client_secret: sim.appSecret,
          access_token: short,
        }),
      );
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'OAuthException', code: 190, error_subcode: 463 });
      expect(r.body.error.fbtrace_id).toBeTruthy();
    });

    it('refresh is refused before 24 hours, works after, returns a new token; the old one lives on (R-TOK-2, R-TOK-5, R-TOK-6)', async () => {
      const { id } = sim.createAccount();
      const long = sim.issueLongLivedToken(id);
      const young = await getJson(
        graph(sim, '/refresh_access_token', { grant_type: 'ig_refresh_token', access_token: long }),
      );
      expect(young.status).toBe(400);
      expect(young.body.error.message).toMatch(/too young/);
      sim.clock.advance(DAY);
      const ok = await getJson(
        graph(sim, '/refresh_access_token', { grant_type: 'ig_refresh_token', access_token: long }),
      );
      expect(ok.status).toBe(200);
      expect(ok.body.access_token).not.toBe(long);
      expect(ok.body.expires_in).toBeGreaterThan(59 * 86400);
      const old = await getJson(graph(sim, '/v25.0/me', { access_token: long }));
      expect(old.status).toBe(200);
      // 60 days after the first token's issue it is dead; the refreshed one (issued a day later) is not.
      sim.clock.advance(59 * DAY);
      expect((await getJson(graph(sim, '/v25.0/me', { access_token: long }))).body.error).toMatchObject({
        code: 190,
        error_subcode: 463,
      });
      expect((await getJson(graph(sim, '/v25.0/me', { access_token: ok.body.access_token as string }))).status).toBe(
        200,
      );
      const revive = await getJson(
        graph(sim, '/refresh_access_token', { grant_type: 'ig_refresh_token', access_token: long }),
      );
      expect(revive.body.error).toMatchObject({ code: 190, error_subcode: 463 });
    });

    it('refresh needs the business_basic scope (R-TOK-5)', async () => {
      const { id } = sim.createAccount();
      const long = sim.issueLongLivedToken(id, {
        issuedAt: new Date(sim.clock.now().getTime() - 2 * DAY),
        scopes: ['instagram_business_manage_messages'],
      });
      const r = await getJson(
        graph(sim, '/refresh_access_token', { grant_type: 'ig_refresh_token', access_token: long }),
      );
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe(10);
    });

    it('password change answers 190/460, revocation 190/467; a new login works again (R-TOK-10)', async () => {
      const { id } = sim.createAccount();
      const t = sim.issueLongLivedToken(id);
      sim.setPasswordChanged(id, true);
      expect((await getJson(graph(sim, '/v25.0/me/media', { access_token: t }))).body.error).toMatchObject({
        code: 190,
        error_subcode: 460,
      });
      const after = sim.issueLongLivedToken(id);
      expect((await getJson(graph(sim, '/v25.0/me', { access_token: after }))).status).toBe(200);
      sim.revokeTokens(id);
      expect((await getJson(graph(sim, '/v25.0/me', { access_token: after }))).body.error).toMatchObject({
        code: 190,
        error_subcode: 467,
      });
    });

    it('an account without the tester role answers "Insufficient developer role" (R-TOK-14)', async () => {
      const { id } = sim.createAccount({ tester: false });
      const r = await getJson(graph(sim, '/v25.0/me', { access_token: sim.issueLongLivedToken(id) }));
      expect(r.status).toBe(400);
      expect(r.body.error.message).toMatch(/insufficient developer role/i);
    });

    it('only the pinned versions answer data calls; token endpoints have none (R-MED-1)', async () => {
      const { id } = sim.createAccount();
      const t = sim.issueLongLivedToken(id);
      expect((await getJson(graph(sim, '/v26.0/me', { access_token: t }))).status).toBe(200);
      expect((await getJson(graph(sim, '/v19.0/me', { access_token: t }))).body.error.code).toBe(2635);
      expect((await getJson(graph(sim, '/me', { access_token: t }))).status).toBe(400);
    });

    it("v26.0 differs in one documented way: a reel's media_type is REELS, in the listing and the single read (R-MED-13)", async () => {
      const { id } = sim.createAccount({ posts: [{ kind: 'reel' }, { kind: 'video' }, { kind: 'image' }] });
      const t = sim.issueLongLivedToken(id);
      const [reel, video, image] = sim.posts(id).map((p) => p.id);
      const fields = 'media_type,media_product_type,caption,permalink,timestamp';
      const listed = async (v: string) =>
        (await getJson(graph(sim, `/${v}/me/media`, { access_token: t, fields }))).body.data as Array<
          Record<string, unknown>
        >;
      const v25 = await listed('v25.0');
      const v26 = await listed('v26.0');
      const typeOf = (items: Array<Record<string, unknown>>, mid: string | undefined) =>
        items.find((i) => i.id === mid)?.media_type;
      expect([reel, video, image].map((m) => typeOf(v25, m))).toEqual(['VIDEO', 'VIDEO', 'IMAGE']);
      expect([reel, video, image].map((m) => typeOf(v26, m))).toEqual(['REELS', 'VIDEO', 'IMAGE']);
      // Everything else is the same.
      const rest = (items: Array<Record<string, unknown>>) => items.map(({ media_type: _, ...r }) => r);
      expect(rest(v26)).toEqual(rest(v25));
      const single = async (v: string) =>
        (await getJson(graph(sim, `/${v}/${reel}`, { access_token: t, fields: 'media_type' }))).body.media_type;
      expect([await single('v25.0'), await single('v26.0')]).toEqual(['VIDEO', 'REELS']);
    });
  });

  describe('profile and media edge', () => {
    it('profile returns id plus only the requested fields (R-OWN-5)', async () => {
      const { id, username } = sim.createAccount({ username: 'profile_owner', accountType: 'MEDIA_CREATOR', posts: 3 });
      const t = sim.issueLongLivedToken(id);
      expect((await getJson(graph(sim, '/v25.0/me', { access_token: t }))).body).toEqual({ id });
      const r = await getJson(
        graph(sim, '/v25.0/me', {
          access_token: t,
          fields: 'user_id,username,account_type,profile_picture_url,media_count',
        }),
      );
      expect(r.body).toMatchObject({ id, user_id: id, username, account_type: 'MEDIA_CREATOR', media_count: 3 });
      expect(new URL(r.body.profile_picture_url as string).host).toBe(sim.imageHost);
      expect(Object.keys(r.body).sort()).toEqual([
        'account_type',
        'id',
        'media_count',
        'profile_picture_url',
        'user_id',
        'username',
      ]);
    });

    it('without fields each item holds only id; with fields only those named (R-MED-2)', async () => {
      const { id } = sim.createAccount({ posts: 4 });
      const t = sim.issueLongLivedToken(id);
      const bare = await getJson(graph(sim, '/v25.0/me/media', { access_token: t }));
      expect(bare.body.data).toHaveLength(4);
      for (const item of bare.body.data) expect(Object.keys(item)).toEqual(['id']);
      const some = await getJson(graph(sim, '/v25.0/me/media', { access_token: t, fields: 'media_type,timestamp' }));
      for (const item of some.body.data) {
        expect(Object.keys(item).sort()).toEqual(['id', 'media_type', 'timestamp']);
        expect(item.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/);
      }
      expect(some.headers.get('x-app-usage')).toMatch(/call_count/);
      expect(JSON.parse(some.headers.get('x-business-use-case-usage') ?? '{}')[id][0].type).toBe('instagram');
    });

    it('/me/media and /<own id>/media list the same posts; another account is refused (R-MED-12)', async () => {
      const a = sim.createAccount({ posts: 3 });
      const b = sim.createAccount({ posts: 1 });
      const t = sim.issueLongLivedToken(a.id);
      const me = await getJson(graph(sim, '/v25.0/me/media', { access_token: t }));
      const own = await getJson(graph(sim, `/v25.0/${a.id}/media`, { access_token: t }));
      expect(own.body.data).toEqual(me.body.data);
      const other = await getJson(graph(sim, `/v25.0/${b.id}/media`, { access_token: t }));
      expect(other.status).toBe(400);
      expect(other.body.error.code).toBe(100);
    });

    it('pages until paging.next is absent, some middle pages short; limit capped (R-MED-5, R-MED-6, R-OWN-3)', async () => {
      const { id } = sim.createAccount({ posts: 23 });
      const t = sim.issueLongLivedToken(id);
      let next: string | undefined = graph(sim, '/v25.0/me/media', {
        access_token: t,
        fields: 'id,caption',
        limit: '5',
      }).toString();
      const seen: string[] = [];
      const sizes: number[] = [];
      let shortWithNext = false;
      while (next) {
        const page = await getJson(next);
        expect(page.status).toBe(200);
        sizes.push(page.body.data.length);
        seen.push(...page.body.data.map((d: Json) => d.id as string));
        next = page.body.paging?.next as string | undefined;
        if (next) {
          expect(new URL(next).searchParams.get('access_token')).toBe(t);
          expect(new URL(next).searchParams.get('fields')).toBe('id,caption');
          if (page.body.data.length < 5) shortWithNext = true;
        }
      }
      expect(shortWithNext).toBe(true);
      expect(seen).toEqual(sim.posts(id).map((p) => p.id));
      expect(sizes.length).toBeGreaterThan(5);
      const big = await getJson(graph(sim, '/v25.0/me/media', { access_token: t, limit: '1000' }));
      expect(big.body.data).toHaveLength(23);
      expect(big.body.paging.next).toBeUndefined();
      const capped = await startSimulator({ maxLimit: 10, shortPages: false });
      try {
        const c = capped.createAccount({ posts: 12 });
        const page = await getJson(
          graph(capped, '/v25.0/me/media', { access_token: capped.issueLongLivedToken(c.id), limit: '50' }),
        );
        expect(page.body.data).toHaveLength(10);
        expect(page.body.paging.next).toBeTruthy();
      } finally {
        await capped.close();
      }
    });

    it('refused fields answer 100, omitted fields are silently left out (R-MED-4)', async () => {
      const refusing = sim.createAccount({ posts: 2, refuseFields: ['caption'] });
      const omitting = sim.createAccount({ posts: 2, omitFields: ['caption', 'media_product_type'] });
      const r = await getJson(
        graph(sim, '/v25.0/me/media', {
          access_token: sim.issueLongLivedToken(refusing.id),
          fields: 'id,caption,media_type',
        }),
      );
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe(100);
      expect(r.body.error.message).toContain('(#100) Tried accessing nonexisting field (caption)');
      const ok = await getJson(
        graph(sim, '/v25.0/me/media', { access_token: sim.issueLongLivedToken(refusing.id), fields: 'id,media_type' }),
      );
      expect(ok.status).toBe(200);
      const o = await getJson(
        graph(sim, '/v25.0/me/media', {
          access_token: sim.issueLongLivedToken(omitting.id),
          fields: 'id,caption,media_product_type,media_type',
        }),
      );
      expect(o.status).toBe(200);
      for (const item of o.body.data) {
        expect(item).not.toHaveProperty('caption');
        expect(item).not.toHaveProperty('media_product_type');
        expect(item).toHaveProperty('media_type');
      }
    });

    it('every shape: reel, video, copyright, carousel children, missing counts (R-MED-9, R-MED-10, R-MED-11, R-CNV-12)', async () => {
      const { id } = sim.createAccount({ posts: 10 });
      const t = sim.issueLongLivedToken(id);
      const fields =
        'id,caption,media_type,media_product_type,media_url,thumbnail_url,permalink,timestamp,username,like_count,comments_count,is_shared_to_feed,children{media_type,media_url,thumbnail_url}';
      const r = await getJson(graph(sim, '/v25.0/me/media', { access_token: t, fields, limit: '50' }));
      const items = r.body.data as Json[];
      const reel = items.find((i) => i.media_product_type === 'REELS');
      expect(reel).toMatchObject({ media_type: 'VIDEO' });
      expect(typeof reel?.is_shared_to_feed).toBe('boolean');
      expect(reel?.permalink).toMatch(/^http:\/\/.+\/reel\//);
      const video = items.find((i) => i.media_type === 'VIDEO' && i.media_product_type === 'FEED' && i.media_url);
      expect(video?.thumbnail_url).toBeTruthy();
      expect(video).not.toHaveProperty('is_shared_to_feed');
      const copyright = items.find((i) => i.media_type === 'VIDEO' && !i.media_url);
      expect(copyright).toBeDefined();
      expect(copyright).not.toHaveProperty('thumbnail_url');
      const noCounts = items.find((i) => i.media_type === 'IMAGE' && !('like_count' in i));
      expect(noCounts).not.toHaveProperty('comments_count');
      expect(noCounts).not.toHaveProperty('caption');
      const carousels = items.filter((i) => i.media_type === 'CAROUSEL_ALBUM');
      expect(carousels.length).toBeGreaterThanOrEqual(2);
      const slides = carousels.flatMap((c) => c.children.data as Json[]);
      const videoSlide = slides.find((s) => s.media_type === 'VIDEO');
      expect(videoSlide?.thumbnail_url).toBeTruthy();
      expect(slides.some((s) => s.media_type === 'IMAGE' && !s.media_url)).toBe(true);
      for (const s of slides) expect(s).not.toHaveProperty('permalink');
      const plain = await getJson(
        graph(sim, '/v25.0/me/media', { access_token: t, fields: 'media_type,children', limit: '50' }),
      );
      const album = (plain.body.data as Json[]).find((i) => i.media_type === 'CAROUSEL_ALBUM');
      for (const s of album?.children.data as Json[]) expect(Object.keys(s)).toEqual(['id']);
    });
  });

  describe('image host', () => {
    it('a link past its oe answers 403 "URL signature expired"; single media renews it (R-LNK-1, R-LNK-3, R-MED-8)', async () => {
      const { id } = sim.createAccount();
      const mediaId = sim.addPost(id, { kind: 'image', width: 800, height: 1000 });
      const t = sim.issueLongLivedToken(id);
      const list = await getJson(graph(sim, '/v25.0/me/media', { access_token: t, fields: 'media_url' }));
      const link = list.body.data[0].media_url as string;
      expect(oeOf(link)).toBe(sim.clock.now().getTime() + 5 * DAY);
      const ok = await fetch(link);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toBe('image/jpeg');
      const bytes = Buffer.from(await ok.arrayBuffer());
      expect(ok.headers.get('content-length')).toBe(String(bytes.length));
      expect(await sharp(bytes).metadata()).toMatchObject({ format: 'jpeg', width: 800, height: 1000 });

      const tampered = link.replace(/sig=([0-9a-f])/, (_m, c: string) => `sig=${c === '0' ? '1' : '0'}`);
      expect((await fetch(tampered)).status).toBe(403);
      const movedOe = new URL(link);
      movedOe.searchParams.set('oe', (parseInt(movedOe.searchParams.get('oe') ?? '0', 16) + 3600).toString(16));
      expect((await fetch(movedOe)).status).toBe(403);

      sim.clock.advance(5 * DAY);
      const dead = await fetch(link);
      expect(dead.status).toBe(403);
      expect(await dead.text()).toBe('URL signature expired');
      // Listing again does not renew the link; the single-media call does.
      const again = await getJson(graph(sim, '/v25.0/me/media', { access_token: t, fields: 'media_url' }));
      expect(again.body.data[0].media_url).toBe(link);
      const single = await getJson(
        graph(sim, `/v25.0/${mediaId}`, { access_token: t, fields: 'media_url,thumbnail_url' }),
      );
      expect(Object.keys(single.body).sort()).toEqual(['id', 'media_url']);
      const fresh = single.body.media_url as string;
      expect(oeOf(fresh)).toBe(sim.clock.now().getTime() + 5 * DAY);
      expect((await fetch(fresh)).status).toBe(200);
    });

    it('images are real JPEGs, distinct per media and slot; videos are served as video/mp4', async () => {
      const { id } = sim.createAccount();
      sim.addPost(id, { kind: 'image' });
      sim.addPost(id, { kind: 'image' });
      sim.addPost(id, { kind: 'video', width: 640, height: 360 });
      const t = sim.issueLongLivedToken(id);
      const r = await getJson(
        graph(sim, '/v25.0/me/media', { access_token: t, fields: 'media_type,media_url,thumbnail_url' }),
      );
      const [video, img2, img1] = r.body.data as Json[];
      const buffers: Buffer[] = [];
      for (const link of [img1?.media_url, img2?.media_url, video?.thumbnail_url] as string[]) {
        const res = await fetch(link);
        const b = Buffer.from(await res.arrayBuffer());
        expect((await sharp(b).metadata()).format).toBe('jpeg');
        buffers.push(b);
      }
      expect(new Set(buffers.map((b) => b.toString('base64'))).size).toBe(3);
      expect((await sharp(buffers[2]).metadata()).width).toBe(640);
      const mp4 = await fetch(video?.media_url as string);
      expect(mp4.headers.get('content-type')).toBe('video/mp4');
      expect(
        Buffer.from(await mp4.arrayBuffer())
          .subarray(4, 8)
          .toString(),
      ).toBe('ftyp');
    });

    it('a deleted post disappears from the listing and its files answer 404 (R-LNK-6)', async () => {
      const { id } = sim.createAccount();
      const mediaId = sim.addPost(id, { kind: 'image' });
      const t = sim.issueLongLivedToken(id);
      const link = (await getJson(graph(sim, '/v25.0/me/media', { access_token: t, fields: 'media_url' }))).body.data[0]
        .media_url as string;
      sim.deletePost(id, mediaId);
      expect((await getJson(graph(sim, '/v25.0/me/media', { access_token: t }))).body.data).toEqual([]);
      expect((await fetch(link)).status).toBe(404);
      expect((await getJson(graph(sim, `/v25.0/${mediaId}`, { access_token: t }))).body.error.code).toBe(100);
    });
  });

  describe('glitches', () => {
    it('a link without oe (R-LNK-1: unknown expiry) is served and never expires; a tampered one is still refused', async () => {
      const { id } = sim.createAccount();
      const mediaId = sim.addPost(id, { kind: 'image', linksWithoutOe: true });
      const t = sim.issueLongLivedToken(id);
      const link = (await getJson(graph(sim, '/v25.0/me/media', { access_token: t, fields: 'media_url' }))).body.data[0]
        .media_url as string;
      expect(new URL(link).searchParams.has('oe')).toBe(false);
      sim.clock.advance(30 * DAY); // six times a signed link's life, within the token's
      expect((await fetch(link)).status).toBe(200);
      expect(
        (await fetch(link.replace(/sig=([0-9a-f])/, (_m, c: string) => `sig=${c === '0' ? '1' : '0'}`))).status,
      ).toBe(403);
      sim.updatePost(id, mediaId, { linksWithoutOe: false });
      const signed = (await getJson(graph(sim, '/v25.0/me/media', { access_token: t, fields: 'media_url' }))).body
        .data[0].media_url as string;
      expect(new URL(signed).searchParams.has('oe')).toBe(true);
    });

    it('a post garbled by a glitch: unknown media_type, or no timestamp, until the glitch is cleared', async () => {
      const { id } = sim.createAccount();
      const mediaId = sim.addPost(id, { kind: 'image' });
      const t = sim.issueLongLivedToken(id);
      const read = async () =>
        (await getJson(graph(sim, '/v25.0/me/media', { access_token: t, fields: 'media_type,timestamp' }))).body
          .data[0] as Json;
      sim.updatePost(id, mediaId, { glitch: 'unknown-media-type' });
      expect((await read()).media_type).toBe('HOLOGRAM');
      sim.updatePost(id, mediaId, { glitch: 'no-timestamp' });
      expect(await read()).toEqual({ id: mediaId, media_type: 'IMAGE' });
      sim.updatePost(id, mediaId, { glitch: null });
      expect((await read()).timestamp).toMatch(/\+0000$/);
    });

    it("a 'json' fault answers an empty page without paging (or the body given)", async () => {
      const { id } = sim.createAccount({ posts: 3 });
      const t = sim.issueLongLivedToken(id);
      sim.injectFault({ path: '/me/media', kind: 'json' });
      const empty = await getJson(graph(sim, '/v25.0/me/media', { access_token: t }));
      expect(empty).toMatchObject({ status: 200, body: { data: [] } });
      expect((await getJson(graph(sim, '/v25.0/me/media', { access_token: t }))).body.data).toHaveLength(3);
    });
  });

  describe('faults', () => {
    it('fire the given number of times, then are gone', async () => {
      const { id } = sim.createAccount({ posts: 1 });
      const t = sim.issueLongLivedToken(id);
      sim.injectFault({ path: '/me/media', kind: 'status', status: 503, times: 2 });
      const url = graph(sim, '/v25.0/me/media', { access_token: t });
      expect((await fetch(url)).status).toBe(503);
      expect((await fetch(url)).status).toBe(503);
      expect((await fetch(url)).status).toBe(200);
    });

    it('rate limit: status, code and usage headers with a time to regain access (R-OWN-1)', async () => {
      const { id } = sim.createAccount({ posts: 1 });
      const t = sim.issueLongLivedToken(id);
      sim.injectFault({ path: /\/media$/, kind: 'rate-limit', status: 400, code: 17 });
      const r = await getJson(graph(sim, '/v25.0/me/media', { access_token: t }));
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe(17);
      const buc = JSON.parse(r.headers.get('x-business-use-case-usage') ?? '{}');
      expect(buc[id][0].estimated_time_to_regain_access).toBeGreaterThan(0);
    });

    it('match on the query fails only page 2; malformed JSON, HTML, huge, error, reset and timeout', async () => {
      const { id } = sim.createAccount({ posts: 6 });
      const t = sim.issueLongLivedToken(id);
      sim.injectFault({ match: (r) => r.path.endsWith('/media') && 'after' in r.query, kind: 'error', code: 2 });
      const first = await getJson(graph(sim, '/v25.0/me/media', { access_token: t, limit: '2' }));
      expect(first.status).toBe(200);
      const second = await getJson(first.body.paging.next as string);
      expect(second.body.error.code).toBe(2);

      const me = graph(sim, '/v25.0/me', { access_token: t });
      sim.injectFault({ path: '/me', kind: 'malformed-json' });
      const bad = await fetch(me);
      expect(bad.status).toBe(200);
      await expect(bad.json()).rejects.toThrow();
      sim.injectFault({ path: '/me', kind: 'html' });
      const page = await fetch(me);
      expect(page.status).toBe(502);
      expect(page.headers.get('content-type')).toMatch(/text\/html/);
      await page.text();
      sim.injectFault({ path: '/me', kind: 'huge', sizeBytes: 1024 * 1024 });
      const huge = await fetch(me);
      expect((await huge.arrayBuffer()).byteLength).toBe(1024 * 1024);
      sim.injectFault({ path: '/me', kind: 'reset' });
      await expect(fetch(me)).rejects.toThrow();
      sim.injectFault({ path: '/me', kind: 'timeout' });
      await expect(fetch(me, { signal: AbortSignal.timeout(150) })).rejects.toThrow();
      expect((await fetch(me)).status).toBe(200);
      sim.injectFault({ path: '/me', kind: 'status', times: Infinity });
      expect((await fetch(me)).status).toBe(500);
      expect((await fetch(me)).status).toBe(500);
      sim.clearFaults();
      expect((await fetch(me)).status).toBe(200);
    });
  });

  describe('login', () => {
    const redirectUri = 'http://127.0.0.1:9/callback';
    function authorize(scope = 'instagram_business_basic', extra: Record<string, string> = {}): URL {
      const u = new URL(sim.authorizeUrl);
      for (const [k, v] of Object.entries({
        client_id: sim.appId,
        redirect_uri: redirectUri,
        scope,
        response_type: 'code',
        state: 'st4te',
        ...extra,
      }))
        u.searchParams.set(k, v);
      return u;
    }

    it('authorize page -> Allow -> code -> short-lived token; the code is single-use (R-TOK-1)', async () => {
      const { id, username } = sim.createAccount({ username: 'login_owner' });
      const page = await fetch(authorize());
      const text = await page.text();
      expect(page.status).toBe(200);
      expect(text).toContain(`Allow as @${username}`);
      const allow = await postForm(`${sim.url}/oauth/authorize/decision`, {
        client_id: sim.appId,
        redirect_uri: redirectUri,
        scope: 'instagram_business_basic',
        state: 'st4te',
        decision: 'allow',
        account_id: id,
      });
      expect(allow.status).toBe(302);
      const location = new URL(allow.headers.get('location') ?? '');
      expect(location.origin + location.pathname).toBe(redirectUri);
      expect(location.searchParams.get('state')).toBe('st4te');
      const code = location.searchParams.get('code') ?? '';
      const form = {
        client_id: sim.appId,
        client_secret: sim.appSecret,
        grant_type: 'authorization_code',
        redirect_uri: redirectUri,
        code,
      };
      const ok = await getJson(sim.oauthTokenUrl, { method: 'POST', body: new URLSearchParams(form) });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ user_id: id, permissions: ['instagram_business_basic'] });
      const me = await getJson(
        graph(sim, '/v25.0/me', { access_token: ok.body.access_token as string, fields: 'username' }),
      );
      expect(me.body.username).toBe(username);
      const reused = await getJson(sim.oauthTokenUrl, { method: 'POST', body: new URLSearchParams(form) });
      expect(reused.status).toBe(400);
      expect(JSON.stringify(reused.body)).toContain('This authorization code has been used');
    });

    it('a code expires after one hour; the redirect_uri must match', async () => {
      const { id } = sim.createAccount();
      sim.autoApprove = id;
      try {
        const codeOf = async () =>
          new URL((await fetch(authorize(), { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get(
            'code',
          ) ?? '';
        const code = await codeOf();
        const form = {
          client_id: sim.appId,
          client_secret: sim.appSecret,
          grant_type: 'authorization_code',
          redirect_uri: `${redirectUri}/other`,
          code,
        };
        expect(
          JSON.stringify((await getJson(sim.oauthTokenUrl, { method: 'POST', body: new URLSearchParams(form) })).body),
        ).toMatch(/redirect_uri/);
        const code2 = await codeOf();
        sim.clock.advance(HOUR + MINUTE);
        const late = await getJson(sim.oauthTokenUrl, {
          method: 'POST',
          body: new URLSearchParams({ ...form, redirect_uri: redirectUri, code: code2 }),
        });
        expect(late.status).toBe(400);
        expect(JSON.stringify(late.body)).toContain('has expired');
      } finally {
        sim.autoApprove = null;
      }
    });

    it('the deprecated scope is refused; Deny redirects with access_denied (R-TOK-12)', async () => {
      const old = await fetch(authorize('business_basic'));
      expect(old.status).toBe(400);
      expect(await old.text()).toMatch(/Invalid scope/i);
      const deny = await postForm(`${sim.url}/oauth/authorize/decision`, {
        client_id: sim.appId,
        redirect_uri: redirectUri,
        scope: 'instagram_business_basic',
        state: 'st4te',
        decision: 'deny',
      });
      const location = new URL(deny.headers.get('location') ?? '');
      expect(location.searchParams.get('error')).toBe('access_denied');
      expect(location.searchParams.get('error_reason')).toBe('user_denied');
      expect(location.searchParams.get('state')).toBe('st4te');
    });

    it('the "data" answer shape', async () => {
      const other = await startSimulator({ codeResponseShape: 'data' });
      try {
        const { id } = other.createAccount();
        other.autoApprove = id;
        const u = new URL(other.authorizeUrl);
        u.search = new URLSearchParams({
          client_id: other.appId,
          redirect_uri: redirectUri,
          scope: 'instagram_business_basic',
          response_type: 'code',
          state: 's',
        }).toString();
        const code =
          new URL((await fetch(u, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ??
          '';
        const r = await getJson(other.oauthTokenUrl, {
          method: 'POST',
          body: new URLSearchParams({
            client_id: other.appId,
            client_secret: other.appSecret,
            grant_type: 'authorization_code',
            redirect_uri: redirectUri,
            code,
          }),
        });
        expect(r.body.data[0]).toMatchObject({ user_id: id, permissions: 'instagram_business_basic' });
        expect(typeof r.body.data[0].access_token).toBe('string');
      } finally {
        await other.close();
      }
    });
  });

  describe('request record and control endpoints', () => {
    it('records every request in order with host, path, query, form, sim time and status', async () => {
      const before = sim.requests.length;
      const { id } = sim.createAccount();
      const t = sim.issueLongLivedToken(id);
      await fetch(graph(sim, '/v25.0/me', { access_token: t, fields: 'username' }));
      await fetch(sim.oauthTokenUrl, { method: 'POST', body: new URLSearchParams({ client_id: 'x' }) });
      const [g, o] = sim.requests.slice(before);
      expect(g).toMatchObject({
        method: 'GET',
        host: 'graph',
        path: '/graph/v25.0/me',
        status: 200,
        query: { access_token: t, fields: 'username' },
      });
      expect(g?.at.getTime()).toBe(sim.clock.now().getTime());
      expect(o).toMatchObject({
        method: 'POST',
        host: 'oauth',
        path: '/oauth/access_token',
        status: 400,
        form: { client_id: 'x' },
      });
    });

    it('moves the clock and shows the record without tokens (R-TOK-11)', async () => {
      const { id } = sim.createAccount();
      const t = sim.issueLongLivedToken(id);
      await fetch(graph(sim, '/v25.0/me', { access_token: t }));
      const now = sim.clock.now().getTime();
      const auth = { authorization: `Bearer ${sim.controlSecret}` };
      const moved = await getJson(`${sim.url}/__sim/clock`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ advanceMs: 5000 }),
      });
      expect(moved.status).toBe(200);
      expect(sim.clock.now().getTime()).toBe(now + 5000);
      expect(
        (
          await getJson(`${sim.url}/__sim/clock`, {
            method: 'POST',
            headers: auth,
            body: JSON.stringify({ advanceMs: -1 }),
          })
        ).status,
      ).toBe(400);
      const rec = await fetch(`${sim.url}/__sim/requests`, { headers: auth });
      const text = await rec.text();
      expect(text).toContain('/graph/v25.0/me');
      expect(text).not.toContain(t);
      const state = await getJson(`${sim.url}/__sim/state`, { headers: auth });
      expect(state.body.accounts.some((a: Json) => a.id === id)).toBe(true);
    });
  });

  it('the simulator command prints the settings and a ready token, then stops', async () => {
    let out = '';
    const io: CliIO = {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (out += s) },
      stdin: new PassThrough(),
      env: { APP_SECRET: 'cli-secret-value' },
      cwd: process.cwd(),
    };
    let seen: Simulator | undefined;
    const code = await runSimulator({ accounts: '2', posts: '3', clock: 'manual' }, io, async (s) => {
      seen = s;
      expect(s.appSecret).toBe('cli-secret-value');
      const state = await fetch(`${s.url}/__sim/state`, { headers: { authorization: `Bearer ${s.controlSecret}` } });
      expect(s.posts(JSON.parse(await state.text()).accounts[0].id)).toHaveLength(3);
    });
    expect(code).toBe(0);
    expect(out).toContain(`GRAPH_URL=${seen?.graphUrl}`);
    expect(out).toContain(`MEDIA_ALLOWED_HOSTS=${seen?.imageHost}`);
    expect(out).not.toContain('cli-secret-value');
    const token = /\n {2}(IG\S+)\n/.exec(out)?.[1];
    expect(token).toBeTruthy();
    expect(await runSimulator({ accounts: 'many' }, io, async () => {})).toBe(2);
  });
});
