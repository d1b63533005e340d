import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertAccount } from '../../src/store/accounts.ts';
import { migrate } from '../../src/store/migrate.ts';
import { widgetDocumentSchema } from '../../src/schema/widget-document.ts';
import {
  DASHBOARD_USER,
  postLogin,
  sessionCookie,
  startServeForTest,
  type ServedForTest,
  stopServe,
  operatorSession,
} from '../security/support.ts';

/**
 * The widgets page of the dashboard as an operator uses it (R-WID-5, R-WID-6), served as in
 * production (0.0.0.0, the non-loopback address): create, edit with the preview beside the form,
 * hide and unhide, delete, each POST refused without the CSRF token; and the views beacon
 * (R-WID-7): counted per widget and day, capped per minute, no cookie, CORS for every site.
 */
let serve: ServedForTest;
const accountId = '17841400000000777';
const IP = '198.51.100.30';

beforeAll(async () => {
  serve = await startServeForTest('widgets-dash', {
    TRUST_PROXY: '1',
    WIDGET_VIEWS_URL: 'https://feeds.example.test',
    WIDGET_VIEWS_PER_MINUTE: '3',
    MEDIA_PUBLIC_URL: 'http://media.example.test/',
  });
  const db = await serve.ctx.migratedDb();
  await migrate(db);
  await upsertAccount(db, { id: accountId, username: 'dash.shop' }, new Date());
  // The account's feed as the worker publishes it.
  const feed = JSON.parse(await readFile(new URL('../fixtures/feed-v1-valid.json', import.meta.url), 'utf8'));
  feed.demo = false;
  feed.origin = { ...feed.origin, id: accountId, name: 'dash.shop', url: 'https://www.instagram.com/dash.shop/' };
  await serve.ctx.storage.put(`feeds/${accountId}.json`, Buffer.from(JSON.stringify(feed)), {
    contentType: 'application/json; charset=utf-8',
    cacheControl: 'public, max-age=300',
  });
}, 60_000);

afterAll(async () => {
  await stopServe(serve);
});

describe('widgets in the dashboard', () => {
  it('create, edit (preview beside the form, embed snippet), hide and unhide a post, delete; every POST needs the CSRF token', async () => {
    const cookie = await operatorSession(serve, IP);
    const get = (path: string) => fetch(`${serve.url}${path}`, { headers: { cookie, 'x-forwarded-for': IP } });
    const post = (path: string, fields: Array<[string, string]>) =>
      fetch(`${serve.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie,
          origin: serve.url,
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-for': IP,
        },
        body: new URLSearchParams(fields),
      });
    const list = await (await get('/dashboard/widgets')).text();
    expect(list).toContain('<a href="/dashboard/widgets">Widgets</a>');
    expect(list).not.toMatch(/<script(?![^>]*\bsrc=)|\sstyle="/);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(list)![1]!;

    // Without the token: refused, nothing created.
    const forged = await post('/dashboard/widgets', [
      ['name', 'Forged'],
      ['accounts', accountId],
    ]);
    expect(forged.status).toBe(403);
    expect(await (await get('/dashboard/widgets')).text()).not.toContain('Forged');

    const created = await post('/dashboard/widgets', [
      ['_csrf', csrf],
      ['name', 'Homepage'],
      ['layout', 'carousel'],
      ['accounts', accountId],
    ]);
    expect(created.status).toBe(303);
    const at = created.headers.get('location')!;
    const id = /\/dashboard\/widgets\/(w_[a-z2-7]{10})$/.exec(at)![1]!;
    const page = await (await get(at)).text();
    // The script sends no cookie: the preview reads the document at an address signed for it.
    const src = new RegExp(
      `data-feedmirror-widget="${id}" data-src="(/dashboard/widgets/${id}/document\\.json\\?k=[\\w-]{43})"`,
    ).exec(page)?.[1];
    expect(src).toBeTruthy();
    const unsigned = await fetch(`${serve.url}${src!.replace(/\?k=.*/, '')}`, {
      headers: { accept: 'application/json', 'x-forwarded-for': IP },
    });
    expect(unsigned.status).toBe(401);
    const wrong = await fetch(`${serve.url}${src!.replace(/k=[\w-]{43}/, `k=${'A'.repeat(43)}`)}`, {
      headers: { accept: 'application/json', 'x-forwarded-for': IP },
    });
    expect(wrong.status).toBe(401);
    const signed = await fetch(`${serve.url}${src}`, { headers: { 'x-forwarded-for': IP } });
    expect(signed.status).toBe(200);
    expect(await signed.json()).toMatchObject({ id, viewsUrl: null });
    expect(page).toContain('<script defer src="/dashboard/widget.js"></script>');
    expect(page).toContain(`&lt;div data-feedmirror-widget=&quot;${id}&quot;&gt;&lt;/div&gt;`);
    expect(page).toContain('id="copy-embed"');
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)|\sstyle="/);
    expect((await get('/dashboard/widgets/copy.js')).status).toBe(200);

    // The preview's document: the published one, without its views address.
    const preview = await (await get(`/dashboard/widgets/${id}/document.json`)).json();
    expect(preview).toMatchObject({ id, layout: 'carousel', viewsUrl: null });
    const published = widgetDocumentSchema.parse(
      JSON.parse((await serve.ctx.storage.get(`widgets/${id}.json`))!.body.toString('utf8')),
    );
    expect(published.viewsUrl).toBe(`https://feeds.example.test/w/${id}/view`);
    expect(published.posts.length).toBeGreaterThan(1);

    // Edit: layout and options, published at once.
    const editFields: Array<[string, string]> = [
      ['name', 'Homepage'],
      ['layout', 'grid'],
      ['theme', 'dark'],
      ['captions', 'show'],
      ['accounts', accountId],
      ['limit', '6'],
      ['maxPosts', '30'],
      ['columnsPhone', '1'],
      ['columnsTablet', '2'],
      ['columnsDesktop', '5'],
      ['radius', '0'],
      ['gap', '4'],
      ['date', 'on'],
      ['includeTags', ''],
      ['excludeTags', 'nope'],
    ];
    expect((await post(`/dashboard/widgets/${id}`, editFields)).status).toBe(403);
    expect((await post(`/dashboard/widgets/${id}`, [['_csrf', csrf], ...editFields])).status).toBe(303);
    const edited = (await (await get(`/dashboard/widgets/${id}/document.json`)).json()) as {
      layout: string;
      options: Record<string, unknown>;
      posts: Array<{ id: string }>;
    };
    expect(edited.layout).toBe('grid');
    expect(edited.options).toMatchObject({
      theme: 'dark',
      limit: 6,
      header: false,
      badges: false,
      date: true,
      columns: { phone: 1, tablet: 2, desktop: 5 },
    });
    // A bad value is a flash naming it, nothing saved.
    const bad = await post(`/dashboard/widgets/${id}`, [
      ['_csrf', csrf],
      ...editFields.filter(([k]) => k !== 'gap'),
      ['gap', '999'],
    ]);
    expect(bad.status).toBe(303);
    const flash = bad.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const flashed = await fetch(`${serve.url}${bad.headers.get('location')!}`, {
      headers: { cookie: `${cookie}; ${flash}`, 'x-forwarded-for': IP },
    });
    expect(await flashed.text()).toContain('gap must be at most 64');
    expect(
      ((await (await get(`/dashboard/widgets/${id}/document.json`)).json()) as { options: { gap: number } }).options
        .gap,
    ).toBe(4);

    // Hide and unhide from the post list.
    const target = edited.posts[0]!.id;
    expect((await post(`/dashboard/widgets/${id}/hide`, [['postId', target]])).status).toBe(403);
    expect(
      (
        await post(`/dashboard/widgets/${id}/hide`, [
          ['_csrf', csrf],
          ['postId', target],
        ])
      ).status,
    ).toBe(303);
    const hidden = (await (await get(`/dashboard/widgets/${id}/document.json`)).json()) as {
      posts: Array<{ id: string }>;
    };
    expect(hidden.posts.map((p) => p.id)).not.toContain(target);
    expect(await (await get(`/dashboard/widgets/${id}`)).text()).toMatch(
      new RegExp(`data-post-id="${target}">.*?hidden.*?Unhide`, 's'),
    );
    expect(
      (
        await post(`/dashboard/widgets/${id}/unhide`, [
          ['_csrf', csrf],
          ['postId', target],
        ])
      ).status,
    ).toBe(303);
    const back = (await (await get(`/dashboard/widgets/${id}/document.json`)).json()) as {
      posts: Array<{ id: string }>;
    };
    expect(back.posts.map((p) => p.id)).toContain(target);

    // Delete: refused without the token, then gone with its objects.
    expect((await post(`/dashboard/widgets/${id}/remove`, [])).status).toBe(403);
    expect((await post(`/dashboard/widgets/${id}/remove`, [['_csrf', csrf]])).status).toBe(303);
    expect(await serve.ctx.storage.head(`widgets/${id}.json`)).toBeNull();
    expect((await get(`/dashboard/widgets/${id}`)).status).toBe(404);
  });

  it('R-WID-7: views are counted per widget and day without cookies, capped per minute, and shown on the widgets page', async () => {
    const { createWidget } = await import('../../src/widgets/widgets.ts');
    const { widget } = await createWidget(serve.ctx.widgetDeps, { name: 'Counted', accounts: [accountId] });
    const beacon = (method: 'POST' | 'GET') =>
      fetch(`${serve.url}/w/${widget.id}/view`, { method, headers: { origin: 'https://client-site.example' } });
    const first = await beacon('POST');
    expect(first.status).toBe(204);
    expect(first.headers.get('access-control-allow-origin')).toBe('*');
    expect(first.headers.get('set-cookie')).toBeNull();
    // Five more: only the first three of the minute count (WIDGET_VIEWS_PER_MINUTE=3).
    for (let i = 0; i < 5; i++) expect((await beacon(i % 2 ? 'GET' : 'POST')).status).toBe(204);
    const { rows } = await serve.ctx.db.query<{ count: string }>(
      'SELECT count FROM widget_views WHERE widget_id = $1',
      [widget.id],
    );
    expect(rows.map((r) => Number(r.count))).toEqual([3]);
    // An unknown widget counts nothing; a malformed id is a 404 too.
    expect((await fetch(`${serve.url}/w/w_aaaaaaaaaa/view`, { method: 'POST' })).status).toBe(404);
    expect((await fetch(`${serve.url}/w/..%2Fx/view`, { method: 'POST' })).status).toBe(404);

    const login = await postLogin(serve.url, IP, DASHBOARD_USER, serve.env.DASHBOARD_PASSWORD!);
    const page = await (
      await fetch(`${serve.url}/dashboard/widgets`, {
        headers: { cookie: sessionCookie(login), 'x-forwarded-for': IP },
      })
    ).text();
    expect(page).toContain(`data-views-7="3" data-views-30="3"`);
  });
});
