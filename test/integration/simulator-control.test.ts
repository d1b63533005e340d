import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { isLoopback, startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { imageKeyOf } from '../../src/simulator/images.ts';
import { readIdentity, SimulatorPortTakenError, startSimulatorWithState } from '../../src/simulator/state-file.ts';

/**
 * The simulator as a person drives it: its identity kept in a state file across restarts
 * (R-SIM-2), its control API behind the control secret (R-SIM-1), a consent page that offers
 * several accounts and connects the one picked, and pictures with no id drawn on them (R-SIM-3).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are navigated freely in assertions
type Json = Record<string, any>;

describe('simulator: state file, control API, consent page, pictures', () => {
  let sim: Simulator;
  let control: (
    method: string,
    path: string,
    body?: unknown,
    secret?: string | null,
  ) => Promise<{ status: number; body: Json }>;
  beforeAll(async () => {
    sim = await startSimulator();
    control = async (method, path, body, secret) => {
      const headers: Record<string, string> = {};
      if (secret !== null) headers.authorization = `Bearer ${secret ?? sim.controlSecret}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${sim.url}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
    };
  });
  afterAll(async () => {
    await sim?.close();
  });

  it('keeps its app id, secrets, link key and ports across a restart; a taken port is one sentence; new ports when asked (R-SIM-2)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fm-simstate-'));
    const file = join(dir, 'demo', 'simulator.json');
    try {
      const first = await startSimulatorWithState(file, { start: Date.UTC(2026, 0, 1) });
      expect(first.created).toBe(true);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const { id } = first.sim.createAccount({ posts: 1 });
      const token = first.sim.issueLongLivedToken(id);
      const link = (
        (await (
          await fetch(`${first.sim.graphUrl}/v25.0/me/media?fields=media_url&access_token=${token}`)
        ).json()) as Json
      ).data[0].media_url as string;
      const seen = {
        appId: first.sim.appId,
        appSecret: first.sim.appSecret,
        controlSecret: first.sim.controlSecret,
        url: first.sim.url,
        imageHost: first.sim.imageHost,
      };
      await first.sim.close();

      const again = await startSimulatorWithState(file, { start: Date.UTC(2026, 0, 1) });
      try {
        expect(again.created).toBe(false);
        expect({
          appId: again.sim.appId,
          appSecret: again.sim.appSecret,
          controlSecret: again.sim.controlSecret,
          url: again.sim.url,
          imageHost: again.sim.imageHost,
        }).toEqual(seen);
        // The same account and post ids come back when made in the same order; its old link still verifies.
        again.sim.createAccount({ posts: 1 });
        expect((await fetch(link)).status).toBe(200);

        // While it runs, a second start on the same file finds its port taken: an error naming the port and the file.
        const clash = await startSimulatorWithState(file).then(
          (r) => r.sim.close().then(() => 'started'),
          (e: unknown) => e,
        );
        expect(clash).toBeInstanceOf(SimulatorPortTakenError);
        expect((clash as Error).message).toContain(String(again.sim.port));
        expect((clash as Error).message).toContain(file);
        expect((clash as Error).message).not.toMatch(/\n/);
      } finally {
        await again.sim.close();
      }

      // Something else holds the port now: new ports only when asked, and those are kept.
      const holder: Server = createServer();
      await new Promise<void>((r) => holder.listen(readIdentity(file)!.port, '127.0.0.1', r));
      try {
        await expect(startSimulatorWithState(file)).rejects.toBeInstanceOf(SimulatorPortTakenError);
        const moved = await startSimulatorWithState(file, { newPorts: true });
        expect(moved.sim.appId).toBe(seen.appId);
        expect(moved.sim.url).not.toBe(seen.url);
        expect(readIdentity(file)!.port).toBe(moved.sim.port);
        await moved.sim.close();
      } finally {
        await new Promise<void>((r) => holder.close(() => r()));
      }
      // Not a state file: one sentence saying what to do.
      rmSync(file);
      const { writeFileSync } = await import('node:fs');
      writeFileSync(file, '{"appId": 1}');
      await expect(startSimulatorWithState(file)).rejects.toThrow(/not a simulator state file.*delete it/);
      expect(readFileSync(file, 'utf8')).toBe('{"appId": 1}');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('tests keep random ids and ports: two simulators without a state file share nothing', async () => {
    const other = await startSimulator();
    try {
      expect(other.appId).not.toBe(sim.appId);
      expect(other.controlSecret).not.toBe(sim.controlSecret);
      expect(other.port).not.toBe(sim.port);
    } finally {
      await other.close();
    }
  });

  it('the control API refuses a missing or wrong secret and changes nothing (R-SIM-1)', async () => {
    const { id } = sim.createAccount({ posts: 2 });
    const before = sim.posts(id).length;
    for (const secret of [null, 'wrong-secret', `${sim.controlSecret}x`]) {
      for (const [method, path, body] of [
        ['GET', '/__sim/state', undefined],
        ['GET', '/__sim/accounts', undefined],
        ['POST', `/__sim/accounts/${id}/posts`, { type: 'image' }],
        ['POST', `/__sim/accounts/${id}/revoke`, undefined],
        ['POST', '/__sim/rate-limit', { seconds: 60 }],
        ['POST', '/__sim/clock', { advanceMs: 1000 }],
      ] as const) {
        const r = await control(method, path, body, secret);
        expect(r.status, `${method} ${path} with ${secret === null ? 'no' : 'a wrong'} secret`).toBe(401);
        expect(r.body.error).toMatch(/control secret/);
      }
    }
    expect(sim.posts(id)).toHaveLength(before);
    const token = sim.issueLongLivedToken(id);
    expect((await fetch(`${sim.graphUrl}/v25.0/me?access_token=${token}`)).status).toBe(200);
    expect(isLoopback('127.0.0.1')).toBe(true);
    expect(isLoopback('::ffff:127.0.0.1')).toBe(true);
    expect(isLoopback('::1')).toBe(true);
    expect(isLoopback('192.168.1.20')).toBe(false);
    expect(isLoopback('::ffff:10.0.0.1')).toBe(false);
  });

  it('adds, edits and deletes posts, revokes and expires tokens, starts and ends a rate limit, lists accounts', async () => {
    const { id } = sim.createAccount({ username: 'control.shop', name: 'Control Shop', posts: 1 });
    const added = await control('POST', `/__sim/accounts/${id}/posts`, { type: 'carousel', caption: 'Three #loaves' });
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ accountId: id, type: 'carousel', caption: 'Three #loaves' });
    const postId = added.body.id as string;
    expect(sim.posts(id)[0]).toMatchObject({ id: postId, kind: 'carousel' });
    expect(sim.posts(id)[0]!.slides).toHaveLength(3);
    const generated = await control('POST', `/__sim/accounts/${id}/posts`, {});
    expect(generated.body.type).toBe('image');
    expect(generated.body.caption).toMatch(/#\w+/); // a generated caption, with hashtags
    const reel = await control('POST', `/__sim/accounts/${id}/posts`, { type: 'video' });
    expect(reel.body.type).toBe('video');

    const edited = await control('PATCH', `/__sim/accounts/${id}/posts/${postId}`, { caption: 'Sold out' });
    expect(edited.body.caption).toBe('Sold out');
    expect(sim.posts(id).find((p) => p.id === postId)?.caption).toBe('Sold out');
    const listed = await control('GET', '/__sim/accounts');
    const mine = (listed.body.accounts as Json[]).find((a) => a.id === id)!;
    expect(mine).toMatchObject({ username: 'control.shop', name: 'Control Shop' });
    expect(mine.posts.map((p: Json) => p.id)).toEqual(sim.posts(id).map((p) => p.id));
    expect((await control('DELETE', `/__sim/accounts/${id}/posts/${postId}`)).body).toMatchObject({ deleted: true });
    expect(sim.posts(id).some((p) => p.id === postId)).toBe(false);
    expect((await control('DELETE', `/__sim/accounts/${id}/posts/${postId}`)).status).toBe(404);
    expect((await control('POST', '/__sim/accounts/99999/posts', {})).body.error).toMatch(/no account 99999/);
    expect((await control('POST', `/__sim/accounts/${id}/posts`, { type: 'hologram' })).status).toBe(400);

    const me = (t: string) =>
      fetch(`${sim.graphUrl}/v25.0/me?access_token=${t}`).then(async (r) => r.json() as Promise<Json>);
    const t1 = sim.issueLongLivedToken(id);
    expect((await control('POST', `/__sim/accounts/${id}/expire-token`)).body.expired).toBeGreaterThanOrEqual(1);
    expect((await me(t1)).error).toMatchObject({ code: 190, error_subcode: 463 });
    const t2 = sim.issueLongLivedToken(id);
    expect((await me(t2)).id).toBe(id);
    await control('POST', `/__sim/accounts/${id}/revoke`);
    expect((await me(t2)).error).toMatchObject({ code: 190, error_subcode: 467 });

    const t3 = sim.issueLongLivedToken(id);
    const window = await control('POST', '/__sim/rate-limit', { seconds: 120 });
    expect(window.body.rateLimitedUntil).toBe(new Date(sim.clock.now().getTime() + 120_000).toISOString());
    expect((await me(t3)).error).toMatchObject({ code: 4 });
    sim.clock.advance(121_000);
    expect((await me(t3)).id).toBe(id);
    await control('POST', '/__sim/rate-limit', { seconds: 600 });
    expect((await control('POST', '/__sim/rate-limit', { seconds: 0 })).body.rateLimitedUntil).toBeNull();
    expect((await me(t3)).id).toBe(id);
  });

  it('the consent page lists several accounts with name and picture; the one picked is connected', async () => {
    const a = sim.createAccount({ username: 'first.choice', name: 'First Choice' });
    const b = sim.createAccount({ username: 'second.choice', name: 'Second Choice' });
    const redirectUri = 'http://127.0.0.1:9/callback';
    const params = { client_id: sim.appId, redirect_uri: redirectUri, scope: 'instagram_business_basic', state: 's1' };
    const page = await fetch(`${sim.authorizeUrl}?${new URLSearchParams({ ...params, response_type: 'code' })}`);
    const html = await page.text();
    for (const [acc, name] of [
      [a, 'First Choice'],
      [b, 'Second Choice'],
    ] as const) {
      expect(html).toContain(name);
      expect(html).toContain(`Allow as @${acc.username}`);
      expect(html).toContain(`data-account="${acc.id}"`);
    }
    const avatars = [...html.matchAll(/<img alt="" src="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
    expect(avatars.length).toBeGreaterThanOrEqual(2);
    const avatar = await fetch(avatars[0]!);
    expect(avatar.headers.get('content-type')).toBe('image/jpeg');
    // Picking the second account: its form field account_id.
    const allow = await fetch(`${sim.url}/oauth/authorize/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...params, decision: 'allow', account_id: b.id }),
    });
    const code = new URL(allow.headers.get('location')!).searchParams.get('code')!;
    const exchanged = (await (
      await fetch(sim.oauthTokenUrl, {
        method: 'POST',
        body: new URLSearchParams({
          client_id: sim.appId,
          client_secret: sim.appSecret,
          grant_type: 'authorization_code',
          redirect_uri: redirectUri,
          code,
        }),
      })
    ).json()) as Json;
    expect(exchanged.user_id).toBe(b.id);
  });

  it('pictures carry their key in the EXIF description, not drawn; every post and slide differs (R-SIM-3)', async () => {
    const { id } = sim.createAccount({ posts: 0 });
    const mediaId = sim.addPost(id, { kind: 'image', width: 1080, height: 1350 });
    sim.addPost(id, { kind: 'carousel', slides: ['image', 'image'] });
    const token = sim.issueLongLivedToken(id);
    const items = (
      (await (
        await fetch(`${sim.graphUrl}/v25.0/me/media?fields=media_url,children{media_url}&access_token=${token}`)
      ).json()) as Json
    ).data as Json[];
    const links = [items[1]!.media_url, ...items[0]!.children.data.map((c: Json) => c.media_url)] as string[];
    const bytes = await Promise.all(links.map(async (l) => Buffer.from(await (await fetch(l)).arrayBuffer())));
    expect(await imageKeyOf(bytes[0]!)).toBe(`${mediaId}/media-r0`);
    expect(await sharp(bytes[0]).metadata()).toMatchObject({ format: 'jpeg', width: 1080, height: 1350 });
    // Not one flat colour: a scene has a sky above and land or water below that differ.
    const mean = async (top: number) =>
      (
        await sharp(await sharp(bytes[0]).extract({ left: 0, top, width: 1080, height: 200 }).png().toBuffer()).stats()
      ).channels.map((c) => c.mean);
    const [sky, ground] = [await mean(0), await mean(1150)];
    expect(sky.reduce((sum, v, i) => sum + Math.abs(v - ground[i]!), 0)).toBeGreaterThan(30);
    expect(new Set(bytes.map((b) => b.toString('base64'))).size).toBe(3);
  });
});
