import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertAccount } from '../../src/store/accounts.ts';
import { getRemovalHold, saveRemovalHold } from '../../src/store/holds.ts';
import { startServeForTest, type ServedForTest, operatorSession, stopServe } from '../security/support.ts';

/**
 * R-OWN-7 in the dashboard: a held removal is shown on the accounts page with what it would do and
 * a Confirm button; the button (a POST with the CSRF token, like every dashboard form) runs the
 * same confirmHeldRemoval as `feedmirror feeds confirm-removal`, in `feedmirror serve`.
 */
let serve: ServedForTest;
const accountId = '17841400000000077';

beforeAll(async () => {
  serve = await startServeForTest('holddash');
  const db = await serve.ctx.migratedDb();
  const now = serve.ctx.clock.now();
  await upsertAccount(db, { id: accountId, username: 'held.shop' }, now);
  await saveRemovalHold(
    db,
    accountId,
    { since: now, removing: ['1790001', '1790002'], listedPosts: 0, publishedPosts: 3 },
    now,
  );
}, 60_000);

afterAll(async () => {
  await stopServe(serve);
});

describe('a held removal in the dashboard (R-OWN-7)', () => {
  it('shown with its Confirm button; the POST needs the CSRF token, then removes and publishes; the hold is gone', async () => {
    const ip = '198.51.100.30';
    const cookie = await operatorSession(serve, ip);
    const headers = { cookie, origin: serve.url, 'x-forwarded-for': ip };
    const page = await (await fetch(`${serve.url}/dashboard`, { headers })).text();
    expect(page).toContain('data-removal-held="2"');
    expect(page).toContain('would remove 2 of the 3 published posts');
    const action = `/dashboard/accounts/${accountId}/confirm-removal`;
    expect(page).toContain(`action="${action}"`);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const post = (body: Record<string, string>) =>
      fetch(`${serve.url}${action}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body),
      });
    expect((await post({})).status).toBe(403);
    expect(await getRemovalHold(serve.ctx.db, accountId)).not.toBeNull();
    const done = await post({ _csrf: csrf });
    expect(done.status).toBe(303);
    expect(await getRemovalHold(serve.ctx.db, accountId)).toBeNull();
    const flash = done.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .filter((c) => c.startsWith('fm_flash='));
    const after = await (
      await fetch(`${serve.url}/dashboard`, { headers: { ...headers, cookie: [cookie, ...flash].join('; ') } })
    ).text();
    expect(after).toContain('Removed 0 posts of @held.shop; feed written.');
    expect(after).not.toContain('data-removal-held=');
  });
});
