import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertAccount } from '../../src/store/accounts.ts';
import { getOwner } from '../../src/store/owners.ts';
import { startServeForTest, type ServedForTest, operatorSession, stopServe } from '../security/support.ts';

/**
 * R-OWN-10 on the dashboard: the account page's Owner form sets and clears the owner (a POST with
 * the CSRF token, like every dashboard form; a bad address is refused in words and stores nothing),
 * and an invitation made on the dashboard carries the owner it names.
 */
let serve: ServedForTest;
const accountId = '17841400000000088';

beforeAll(async () => {
  // APP_ID and APP_SECRET make the dashboard offer invitations; no login is ever started here.
  serve = await startServeForTest('ownerdash', { APP_ID: '900000000000001', APP_SECRET: 'owner-dash-app-secret' });
  const db = await serve.ctx.migratedDb();
  await upsertAccount(db, { id: accountId, username: 'corner.bakery' }, serve.ctx.clock.now());
}, 60_000);

afterAll(async () => {
  await stopServe(serve);
});

describe('the owner on the dashboard (R-OWN-10)', () => {
  it('the Owner form sets the owner with the CSRF token only, refuses a bad address in words, and clears it', async () => {
    const ip = '198.51.100.41';
    const cookie = await operatorSession(serve, ip);
    const headers = { cookie, origin: serve.url, 'x-forwarded-for': ip };
    const pageUrl = `${serve.url}/dashboard/accounts/${accountId}`;
    const page = await (await fetch(pageUrl, { headers })).text();
    expect(page).toContain('<section id="owner">');
    const action = `/dashboard/accounts/${accountId}/owner`;
    expect(page).toContain(`action="${action}"`);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const post = (path: string, body: Record<string, string>) =>
      fetch(`${serve.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body),
      });
    const owner = { owner_email: 'jane@bakery.example', owner_name: 'Jane Baker', owner_alerts: 'on' };

    expect((await post(action, owner)).status).toBe(403);
    expect(await getOwner(serve.ctx.db, accountId)).toBeNull();

    const bad = await post(action, { _csrf: csrf, owner_email: 'not-an-address' });
    expect(bad.status).toBe(303);
    expect(await getOwner(serve.ctx.db, accountId)).toBeNull();
    const flash = bad.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .filter((c) => c.startsWith('fm_flash='));
    const refused = await (
      await fetch(`${serve.url}${bad.headers.get('location')}`, {
        headers: { ...headers, cookie: [cookie, ...flash].join('; ') },
      })
    ).text();
    expect(refused).toMatch(/Owner not saved: [^<]*email/i);

    expect((await post(action, { _csrf: csrf, ...owner })).status).toBe(303);
    expect(await getOwner(serve.ctx.db, accountId)).toMatchObject({
      email: 'jane@bakery.example',
      name: 'Jane Baker',
      alerts: true,
    });
    const shown = await (await fetch(pageUrl, { headers })).text();
    expect(shown).toContain('jane@bakery.example');

    expect((await post(`${action}/clear`, {})).status).toBe(403);
    expect(await getOwner(serve.ctx.db, accountId)).not.toBeNull();
    expect((await post(`${action}/clear`, { _csrf: csrf })).status).toBe(303);
    expect(await getOwner(serve.ctx.db, accountId)).toBeNull();
  });

  it('an invitation made on the dashboard carries the owner it names; a bad address makes none', async () => {
    const ip = '198.51.100.42';
    const cookie = await operatorSession(serve, ip);
    const headers = { cookie, origin: serve.url, 'x-forwarded-for': ip };
    const page = await (await fetch(`${serve.url}/dashboard`, { headers })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const invite = (body: Record<string, string>) =>
      fetch(`${serve.url}/dashboard/invitations`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, expires: '7d', ...body }),
      });
    const count = async () =>
      (await serve.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM invitations')).rows[0]!.n;

    expect((await invite({ owner_email: 'nope' })).status).toBe(303);
    expect(await count()).toBe(0);

    const made = await invite({ owner_email: 'sam@florist.example', owner_name: 'Sam' });
    expect(made.status).toBe(200);
    expect(await made.text()).toMatch(/\/connect\?invite=/);
    const { rows } = await serve.ctx.db.query<{ owner_email: string; owner_name: string }>(
      'SELECT owner_email, owner_name FROM invitations',
    );
    expect(rows).toEqual([{ owner_email: 'sam@florist.example', owner_name: 'Sam' }]);
  });
});
