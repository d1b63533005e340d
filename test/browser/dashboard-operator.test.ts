import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimAccount } from '../../src/simulator/types.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import type { Db } from '../../src/store/db.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY } from '../../src/util/clock.ts';
import { importSimAccount } from '../support/accounts.ts';
import { recordCaptured } from '../support/capture.ts';
import {
  buttonLooks,
  flash,
  launchChromium,
  logIn,
  startOperatorStack,
  submit,
  watchContext,
  type CspWatch,
  type OperatorStack,
} from '../support/operator-browser.ts';
import { until } from '../support/wait.ts';

/**
 * Every page and form of the operator's dashboard, clicked in Chromium against `feedmirror serve`
 * and `feedmirror worker` as they run (test/support/operator-browser.ts): the login (and a wrong
 * password), an account's actions (sync now, refresh now, the owner, a held removal, the
 * reconnect link of an account waiting for its owner, remove), an invitation, the operator's own
 * Connect button up to the platform's consent page and back, bull-board, and logging out here and
 * everywhere. No page may log a Content-Security-Policy violation, and every form's POST and
 * redirects must be allowed by its page's form-action (submit()).
 */
let stack: OperatorStack;
let db: Db;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const watch: CspWatch = { violations: [], skipCapture: [/\/reconnect-link$/] };
let shop: SimAccount;
let bakery: SimAccount;
let studio: SimAccount;
const OWNER = 'jane.owner@example.com';
const SCREENSHOTS = path.resolve('test-artifacts/screenshots');

const accountUrl = (id: string) => `${stack.url}/dashboard/accounts/${id}`;
const when = (d: Date) => `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
const links = async (accountId: string) =>
  (
    await db.query<{ created_at: Date; expires_at: Date; delivery: string; revoked_at: Date | null }>(
      'SELECT created_at, expires_at, delivery, revoked_at FROM reconnect_links WHERE account_id = $1 ORDER BY created_at',
      [accountId],
    )
  ).rows;
/** The reconnect links mailed to the owner so far, oldest first. */
const ownerLinks = () =>
  stack.smtp.messages
    .filter((m) => m.to.includes(OWNER))
    .map((m) => /\/reconnect\/[A-Za-z0-9_-]{43}/.exec(m.text)?.[0])
    .filter((l): l is string => l !== undefined)
    .map((l) => `${stack.url}${l}`);
const statusOf = async (url: string) => {
  const res = await fetch(url);
  recordCaptured('http', await res.text());
  return res.status;
};

beforeAll(async () => {
  stack = await startOperatorStack('dash-operator', { worker: true });
  db = await stack.ctx.migratedDb();
  const { sim } = stack;
  // A shop whose token is two days old, so "Refresh now" renews it for real (R-TOK-5: 24 hours).
  shop = sim.createAccount({ username: 'harbour.shop', posts: 6 });
  const twoDaysAgo = new Date(Date.now() - 2 * DAY);
  await upsertAccount(db, { id: shop.id, username: shop.username }, twoDaysAgo);
  await saveToken(
    db,
    stack.ctx.cipher,
    {
      accountId: shop.id,
      accessToken: sim.issueLongLivedToken(shop.id, { issuedAt: twoDaysAgo }),
      obtainedAt: twoDaysAgo,
      expiresAt: new Date(twoDaysAgo.getTime() + 60 * DAY),
    },
    'imported',
  );
  bakery = sim.createAccount({ username: 'janes.bakery', posts: 3 });
  await importSimAccount(db, stack.ctx.cipher, sim, bakery);
  studio = sim.createAccount({ username: 'old.studio', posts: 2 });
  await importSimAccount(db, stack.ctx.cipher, sim, studio);
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  watchContext(context, watch);
  page = await context.newPage();
  await mkdir(SCREENSHOTS, { recursive: true });
}, 90_000);

afterEach(() => {
  // Every page of every test: the browser reported no CSP violation (a blocked script, style,
  // image, fetch or form submission would each say so in the console).
  expect(watch.violations.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe("the operator's dashboard, clicked in Chromium", () => {
  it('a wrong password is refused on the login page; the right one opens the accounts', async () => {
    await page.goto(`${stack.url}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    await page.fill('#user', 'operator');
    await page.fill('#password', 'not-the-password');
    const refused = await submit(page, page.locator('button', { hasText: 'Log in' }));
    expect(refused.status()).toBe(401);
    expect(await page.locator('.error').textContent()).toBe('Wrong user name or password.');
    await logIn(page, stack);
    for (const a of [shop, bakery, studio])
      expect(await page.locator(`tr[data-account-id="${a.id}"]`).count(), a.username).toBe(1);
  });

  it('"Sync now" on an account page: back on that page, and once the worker ran it the sync and the feed show', async () => {
    await page.locator(`tr[data-account-id="${shop.id}"] a`, { hasText: '@harbour.shop' }).click();
    await page.waitForURL(accountUrl(shop.id));
    // The worker may have run a first sync already (its reconciler schedules every account).
    const syncs = () => page.locator('#syncs [data-sync-outcome]').count();
    const before = await syncs();
    await submit(page, page.locator('main button', { hasText: 'Sync now' }));
    expect(page.url()).toBe(accountUrl(shop.id)); // the outcome is shown where the button was
    const f = await flash(page);
    expect(f.kind).toBe('ok');
    expect(f.text).toMatch(/^Sync of @harbour\.shop queued \(job manual-sync-\d+-/);
    await until(
      async () => {
        await page.reload();
        return (await syncs()) > before;
      },
      'the worker to run the sync',
      30_000,
    );
    expect(await page.locator('#syncs [data-sync-outcome]').first().getAttribute('data-sync-outcome')).toBe('complete');
    expect(Number(await page.locator('[data-feed-posts]').getAttribute('data-feed-posts'))).toBeGreaterThan(0);
  });

  it('"Refresh now" renews the token and says so; the new expiry shows', async () => {
    await page.goto(accountUrl(shop.id));
    const before = await page.locator('#token').textContent();
    await submit(page, page.locator('main button', { hasText: 'Refresh now' }));
    expect(page.url()).toBe(accountUrl(shop.id));
    const f = await flash(page);
    expect(f).toMatchObject({ kind: 'ok' });
    expect(f.text).toMatch(/^@harbour\.shop: refreshed; the token is now valid until \d{4}-/);
    expect(await page.locator('#token').textContent()).not.toBe(before);
  });

  it('"Refresh now" on a token not due yet (under 24 hours old, R-TOK-5) says so as information, not as an error', async () => {
    // The studio's token was imported a moment ago: the platform refreshes none before 24 hours.
    await page.goto(accountUrl(studio.id));
    const before = await page.locator('#token').textContent();
    await submit(page, page.locator('main button', { hasText: 'Refresh now' }));
    expect(page.url()).toBe(accountUrl(studio.id));
    const f = await flash(page);
    expect(f.kind).toBe('info');
    expect(f.text).toMatch(
      /^@old\.studio: not refreshed: the platform refreshes tokens only once they are 24 hours old; possible from \d{4}-/,
    );
    // Shown in the information colour, not the error's red.
    const colours = await page
      .locator('main .flash')
      .evaluate((el) => [getComputedStyle(el).backgroundColor, getComputedStyle(el).color]);
    expect(colours).toEqual(['rgb(221, 244, 255)', 'rgb(10, 48, 105)']);
    expect(await page.locator('#token').textContent()).toBe(before);
  });

  it('the owner: saved from the form, then forgotten', async () => {
    await page.goto(accountUrl(shop.id));
    await page.fill('input[name=owner_email]', 'shop.owner@example.com');
    await page.fill('input[name=owner_name]', 'Sam Shop');
    await submit(page, page.locator('button', { hasText: 'Save owner' }));
    expect(page.url()).toBe(`${accountUrl(shop.id)}#owner`);
    expect(await flash(page)).toEqual({ kind: 'ok', text: 'The owner of @harbour.shop is saved.' });
    expect(await page.locator('#owner [data-owner]').getAttribute('data-owner')).toBe('shop.owner@example.com');
    expect(await page.locator('#owner').textContent()).toContain('Sam Shop');
    await submit(page, page.locator('button', { hasText: 'Forget the owner' }));
    expect(await flash(page)).toEqual({
      kind: 'ok',
      text: '@harbour.shop has no owner recorded now: alerts go to you only.',
    });
    expect(await page.locator('#owner [data-owner]').getAttribute('data-owner')).toBe('none');
  });

  it('R-OWN-7: a held removal shows on the account page; Confirm removes the posts and publishes', async () => {
    const posts = stack.sim.posts(shop.id);
    for (const p of posts.slice(1)) stack.sim.deletePost(shop.id, p.id);
    await page.goto(accountUrl(shop.id));
    const published = Number(await page.locator('[data-feed-posts]').getAttribute('data-feed-posts'));
    await submit(page, page.locator('main button', { hasText: 'Sync now' }));
    await until(
      async () => {
        await page.reload();
        return (await page.locator('#feed .removal-held').count()) === 1;
      },
      'the listing to be held',
      30_000,
    );
    const removing = Number(await page.locator('#feed [data-removal-held]').getAttribute('data-removal-held'));
    expect(removing).toBe(published - 1);
    await submit(page, page.locator('#feed button', { hasText: `Confirm: remove ${removing} posts` }));
    expect(page.url()).toBe(accountUrl(shop.id));
    expect(await flash(page)).toEqual({
      kind: 'ok',
      text: `Removed ${removing} posts of @harbour.shop; feed written.`,
    });
    expect(await page.locator('#feed .removal-held').count()).toBe(0);
    expect(await page.locator('[data-feed-posts]').getAttribute('data-feed-posts')).toBe('1');
  });

  it('R-TOK-10 / R-OWN-11: a revoked account says the owner was emailed a link and until when, never days left; a new link is emailed or shown to copy', async () => {
    await page.goto(accountUrl(bakery.id));
    await page.fill('input[name=owner_email]', OWNER);
    await page.fill('input[name=owner_name]', 'Jane Doe');
    await submit(page, page.locator('button', { hasText: 'Save owner' }));
    expect((await flash(page)).kind).toBe('ok');

    // The platform refuses the token; the next sync meets code 190 and the alert mails the owner.
    stack.sim.revokeTokens(bakery.id);
    await page.goto(accountUrl(bakery.id));
    await submit(page, page.locator('main button', { hasText: 'Sync now' }));
    await until(() => ownerLinks().length === 1, 'the alert to mail the owner', 30_000);
    await until(async () => {
      await page.reload();
      return (await page.locator('#reconnect').count()) === 1;
    }, 'the account page to show the reconnect state');
    const [emailed] = await links(bakery.id);
    expect(emailed).toMatchObject({ delivery: 'email', revoked_at: null });
    const section = (await page.locator('#reconnect').textContent()) ?? '';
    expect(section).toContain(
      `The owner (${OWNER}) was emailed a reconnect link on ${when(emailed!.created_at)}. It works once, until ${when(emailed!.expires_at)}`,
    );
    expect(await page.locator('#reconnect').getAttribute('data-link-state')).toBe('ok');
    // What happened, not advice to do it again: no invitation, no days left for a refused token.
    // The health's own sentence (the owner masked, as doctor's line takes it into logs), in plain
    // words: no literal backtick on the page.
    const health = (await page.locator('#health').textContent()) ?? '';
    expect(health).toContain(
      `the owner (j***@example.com) was emailed a reconnect link on ${when(emailed!.created_at).slice(0, 16)} UTC, valid until ${when(emailed!.expires_at).slice(0, 16)} UTC`,
    );
    expect(health).not.toMatch(/invitation|send one|`/i);
    expect(await page.locator('#token [data-token]').getAttribute('data-token')).toBe('refused');
    expect(await page.locator('main').textContent()).not.toMatch(/\d+ days? left/);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'account-reconnect.png'), fullPage: true });
    await page.goto(`${stack.url}/dashboard`);
    const row = page.locator(`tr[data-account-id="${bakery.id}"]`);
    expect(await row.locator('[data-token]').textContent()).toBe('refused by the platform');
    expect(await row.textContent()).not.toMatch(/days? left|invitation/);
    expect(await row.locator('[data-reason="reauth_required"]').textContent()).toContain(
      'was emailed a reconnect link',
    );
    expect(await row.textContent()).not.toContain('`');

    // The owner lost the email: a new one, and the first link stops working (R-OWN-12).
    await page.goto(accountUrl(bakery.id));
    await submit(page, page.locator('#reconnect button', { hasText: `Email ${OWNER} a new link` }));
    expect(page.url()).toBe(`${accountUrl(bakery.id)}#reconnect`);
    const resent = await flash(page);
    expect(resent.kind).toBe('ok');
    expect(resent.text).toMatch(
      new RegExp(`^A new reconnect link was emailed to ${OWNER.replace(/\./g, '\\.')}; it works until \\d{4}-`),
    );
    expect(ownerLinks()).toHaveLength(2);
    const [first, second] = ownerLinks();
    expect(await statusOf(first!)).toBe(410);
    expect(await statusOf(second!)).toBe(200);
    const latest = (await links(bakery.id)).at(-1)!;
    expect(await page.locator('#reconnect').textContent()).toContain(`until ${when(latest.expires_at)}`);

    // Or a link to pass on another way: shown once, and the emailed one stops working.
    await submit(page, page.locator('#reconnect button', { hasText: 'Make a new link to copy' }));
    expect(await page.locator('h1').textContent()).toBe('Reconnect link for @janes.bakery');
    const copied = await page.locator('#reconnect-link').inputValue();
    expect(copied).toMatch(new RegExp(`^${stack.url.replace(/[.]/g, '\\.')}/reconnect/[A-Za-z0-9_-]{43}$`));
    expect(await statusOf(second!)).toBe(410);
    expect(await statusOf(copied)).toBe(200);
    await page.locator('a.button', { hasText: 'Back to @janes.bakery' }).click();
    await page.waitForURL(`${accountUrl(bakery.id)}#reconnect`);
    expect(await page.locator('#reconnect').getAttribute('data-link-delivery')).toBe('copy');
    const copyState = (await page.locator('#reconnect').textContent()) ?? '';
    expect(copyState).toContain('A reconnect link was made here on');
    expect(copyState).toContain('for you to pass on');
    expect(copyState).toMatch(/The link emailed to the owner on [\d-]+ [\d:]+ UTC no longer works\./);
  });

  it('"Invite an owner" on the accounts page makes a one-time link that carries the owner', async () => {
    await page.goto(`${stack.url}/dashboard`);
    await page.selectOption('select[name=expires]', '1d');
    await page.fill('form[action="/dashboard/invitations"] input[name=owner_email]', 'new.owner@example.com');
    await page.fill('form[action="/dashboard/invitations"] input[name=owner_name]', 'New Owner');
    const before = Date.now();
    await submit(page, page.locator('button', { hasText: 'Invite an owner' }));
    expect(await page.locator('h1').textContent()).toBe('Invitation created');
    const link = await page.locator('#invitation').inputValue();
    expect(link.startsWith(`${stack.url}/`)).toBe(true);
    const until1d = /until (\d{4}-\d\d-\d\d \d\d:\d\d) UTC/.exec((await page.locator('main').textContent()) ?? '')![1]!;
    const expires = Date.parse(`${until1d.replace(' ', 'T')}:00Z`);
    expect(Math.abs(expires - (before + DAY))).toBeLessThan(2 * 60_000);
    const owners = await db.query<{ owner_email: string | null }>('SELECT owner_email FROM invitations');
    expect(owners.rows.map((r) => r.owner_email)).toContain('new.owner@example.com');
    // Not ticked "email it": the list of invitations says it was only shown.
    await page.locator('a.button', { hasText: 'Back to the accounts' }).click();
    await page.waitForURL(`${stack.url}/dashboard`);
    const made = page.locator('table.invitations tbody tr', { hasText: 'new.owner@example.com' });
    expect(await made.getAttribute('data-invitation-state')).toBe('ok');
    expect(await made.textContent()).toContain('not emailed: the link was shown to copy');
  });

  it('"Remove…" asks on a page of its own, then removes the account', async () => {
    await page.goto(accountUrl(studio.id));
    await page.locator('main a.button', { hasText: 'Remove…' }).click();
    await page.waitForURL(`${accountUrl(studio.id)}/remove`);
    expect(await page.locator('h1').textContent()).toBe('Remove @old.studio?');
    await submit(page, page.locator('button', { hasText: 'Yes, remove @old.studio' }));
    expect(new URL(page.url()).pathname).toBe('/dashboard');
    expect(await flash(page)).toEqual({
      kind: 'ok',
      text: '@old.studio was removed. Its published feed and copies stay in storage.',
    });
    expect(await page.locator(`tr[data-account-id="${studio.id}"]`).count()).toBe(0);
  });

  it("the operator's own Connect button leads to the platform's consent page, and allowing there connects the account", async () => {
    const cafe = stack.sim.createAccount({ username: 'corner.cafe', posts: 2 });
    await page.goto(`${stack.url}/dashboard`);
    await page.locator('header a', { hasText: 'Connect an account' }).click();
    await page.waitForURL((u) => u.href.startsWith(stack.sim.authorizeUrl));
    expect(await page.locator('h1').textContent()).toBe('Allow access to your account');
    const allow = page.locator(`button[data-account="${cafe.id}"]`);
    expect(await allow.textContent()).toBe('Allow as @corner.cafe');
    await Promise.all([page.waitForURL((u) => u.pathname === '/callback'), allow.click()]);
    expect(await page.locator('body').textContent()).toContain('@corner.cafe');
    await page.goto(`${stack.url}/dashboard`);
    expect(await page.locator(`tr[data-account-id="${cafe.id}"]`).count()).toBe(1);
  });

  it('bull-board (Queues) renders under the CSP', async () => {
    await page.goto(`${stack.url}/dashboard`);
    await page.locator('header a', { hasText: 'Queues' }).click();
    await page.getByText('feed-sync', { exact: false }).first().waitFor({ timeout: 15_000 });
  });

  it('every button of the accounts, account and remove pages looks alike (plain, primary, danger)', async () => {
    const seen = new Map<string, string[]>();
    for (const url of [
      `${stack.url}/dashboard`,
      accountUrl(shop.id),
      accountUrl(bakery.id),
      `${accountUrl(shop.id)}/remove`,
    ]) {
      await page.goto(url);
      for (const [look, labels] of await buttonLooks(page)) seen.set(look, [...(seen.get(look) ?? []), ...labels]);
    }
    // An account's actions sit in one row, as in the accounts table.
    await page.goto(accountUrl(shop.id));
    const tops = await page
      .locator('main .actions')
      .first()
      .evaluate((row) => [...row.querySelectorAll('button, a.button')].map((b) => b.getBoundingClientRect().top));
    expect(tops).toHaveLength(3);
    expect(new Set(tops).size, 'Sync now, Refresh now and Remove… side by side').toBe(1);
    const kinds = [...seen.keys()].map((k) => k.split(' | ')[0]);
    // One look per kind: every plain button like "Sync now", however deep in the page it sits.
    expect(kinds.sort(), JSON.stringify([...seen], null, 1)).toEqual(['danger', 'plain', 'primary']);
    const plain = [...seen].find(([k]) => k.startsWith('plain'))!;
    expect(plain[0]).toContain('bg rgb(246, 248, 250) | 1px | solid | 4px');
    expect(plain[1]).toEqual(expect.arrayContaining(['Sync now', 'Forget the owner', 'Make a new link to copy']));
  });

  it('"Log out" ends this session; "Log out everywhere" ends the other browser\'s too', async () => {
    const a = await browser.newContext();
    const b = await browser.newContext();
    watchContext(a, watch);
    watchContext(b, watch);
    const pa = await a.newPage();
    const pb = await b.newPage();
    await logIn(pa, stack);
    await logIn(pb, stack);
    await submit(pa, pa.locator('header button', { hasText: 'Log out (operator)' }));
    expect(new URL(pa.url()).pathname).toBe('/dashboard/login');
    await pa.goto(`${stack.url}/dashboard`);
    expect(new URL(pa.url()).pathname).toBe('/dashboard/login'); // the session is gone on the server
    await pb.reload();
    expect(new URL(pb.url()).pathname).toBe('/dashboard'); // the other browser is still in

    await logIn(pa, stack);
    await submit(pb, pb.locator('header button', { hasText: 'Log out everywhere' }));
    expect(new URL(pb.url()).pathname).toBe('/dashboard/login');
    for (const p of [pa, page]) {
      await p.goto(`${stack.url}/dashboard`);
      expect(new URL(p.url()).pathname, 'every session of the operator ended').toBe('/dashboard/login');
    }
    await a.close();
    await b.close();
  });
});
