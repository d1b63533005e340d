import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, HOUR } from '../../src/util/clock.ts';
import { recordCaptured } from '../support/capture.ts';
import type { CapturedMessage } from '../support/smtp.ts';
import { openStage, type Stage, type StageServer } from './stage.ts';
import { CHROMIUM, launchChromium } from '../support/chromium.ts';

/**
 * The account owner's journey in Chromium (Debian's package through playwright-core; nothing
 * downloads a browser), by clicking, against real `feedmirror serve` and CLI processes, the
 * simulator's own consent page over real HTTP (another origin than serve, as the platform is) and
 * a real SMTP server. The owner is invited, connects; the platform refuses the token; the owner's
 * email is opened and its button followed; the status page's Reconnect button reaches the
 * consent page; a declined login, the wrong account, and the right one; the used, expired and
 * unknown link pages. No page may report a Content-Security-Policy violation: a form whose POST
 * redirects to another origin is blocked by Chromium unless the page's form-action allows it.
 */
const OWNER_EMAIL = 'jane@bakery.example';
const SCREENSHOTS = path.resolve('test-artifacts/screenshots');

describe('journey: the account owner in Chromium', () => {
  let stage: Stage;
  let serve: StageServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let simOrigin: string;
  /** Every Content-Security-Policy violation any page of the owner's reported. */
  const violations: string[] = [];
  let accountId = '';
  const USERNAME = 'janes.bakery';
  let otherId = '';
  /** The reconnect link as the owner's email carries it. */
  let link = '';

  const watch = (p: Page) => {
    p.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(`${p.url()}: ${m.text()}`);
    });
    p.on('response', (r) => {
      if ((r.headers()['content-type'] ?? '').startsWith('text/html'))
        void r
          .text()
          .then((t) => recordCaptured('http', t))
          .catch(() => undefined);
    });
  };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (this test never downloads a browser)`);
    stage = await openStage('ownerchromium', {
      smtp: true,
      env: { OWNER_ALERTS: 'on', BRAND_NAME: 'Northwind Feeds', BRAND_SUPPORT_EMAIL: 'help@northwind.example' },
    });
    simOrigin = new URL(stage.sim.authorizeUrl).origin;
    serve = await stage.startServe();
    expect(new URL(serve.url).origin).not.toBe(simOrigin); // the platform is another origin
    browser = await launchChromium();
    context = await browser.newContext();
    context.setDefaultTimeout(10_000); // a missing element fails in words, well before the test's limit
    page = await context.newPage();
    watch(page);
    await mkdir(SCREENSHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stage?.close();
  });

  const shoot = (name: string) =>
    page.screenshot({ path: path.join(SCREENSHOTS, `owner-journey-${name}.png`), fullPage: true });
  const heading = () => page.locator('h1').textContent();
  const mainText = async () => (await page.locator('main').innerText()).replace(/\s+/g, ' ');
  const accountShown = async (id: string) => {
    const shown = await stage.cli(['accounts', 'show', id, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    return JSON.parse(shown.stdout) as { status: string; owner: { email: string } | null };
  };
  /** Click, and wait for the page the click leads to (another document). */
  const clickTo = async (target: ReturnType<Page['locator']>, to: (url: URL) => boolean) => {
    try {
      await Promise.all([page.waitForURL(to, { timeout: 15_000 }), target.click()]);
    } catch (err) {
      // A blocked navigation: say what the browser said about it (its console line may follow).
      if (violations.length === 0) await page.waitForEvent('console', { timeout: 2_000 }).catch(() => undefined);
      throw new Error(`the click led nowhere from ${page.url()}; CSP: ${violations.join(' | ') || 'no violation'}`, {
        cause: err,
      });
    }
    await page.waitForLoadState('load');
  };
  /** A page's address opened once more, in another tab (what a reload or a restored tab does). */
  const openAgain = async (url: string) => {
    const tab = await context.newPage();
    watch(tab);
    try {
      await tab.goto(url);
      return {
        heading: await tab.locator('h1').textContent(),
        text: (await tab.locator('main').innerText()).replace(/\s+/g, ' '),
        tryAgain: await tab
          .getByRole('link', { name: 'Try again' })
          .getAttribute('href', { timeout: 1_000 })
          .catch(() => null),
      };
    } finally {
      await tab.close();
    }
  };
  const onConsent = (url: URL) => url.origin === simOrigin && url.pathname === '/oauth/authorize';
  const onServe = (path: string) => (url: URL) => url.origin === new URL(serve.url).origin && url.pathname === path;
  const allowAs = (username: string) => page.getByRole('button', { name: `Allow as @${username}`, exact: true });

  it('an invitation: the consent page, Deny, Try again, Allow as the owner: the account is connected with its owner', async () => {
    const acc = stage.sim.createAccount({ username: USERNAME, name: "Jane's Bakery", posts: 4 });
    accountId = acc.id;
    otherId = stage.sim.createAccount({ username: 'someone.else', name: 'Someone Else', posts: 2 }).id;
    const invite = await stage.cli(['accounts', 'invite', '--owner-email', OWNER_EMAIL, '--owner-name', 'Jane']);
    expect(invite.code, invite.stderr).toBe(0);
    const invitation = invite.stdout.split('\n')[0]!;
    expect(invitation).toMatch(new RegExp(`^${serve.url}/connect\\?invite=[A-Za-z0-9_-]{43}$`));

    await page.goto(invitation);
    expect(onConsent(new URL(page.url()))).toBe(true);
    expect(await heading()).toBe('Allow access to your account');
    await clickTo(page.getByRole('button', { name: 'Deny' }), onServe('/callback'));
    expect(await heading()).toBe('Account not connected');
    expect(await mainText()).toContain('The login was cancelled or the permission was declined.');
    // Try again: the same invitation, straight back to the platform's login.
    await clickTo(page.getByRole('link', { name: 'Try again' }), onConsent);
    await clickTo(allowAs(USERNAME), onServe('/callback'));
    expect(await heading()).toBe('Account connected');
    expect(await mainText()).toContain(`@${USERNAME} is connected.`);
    // Its address once more (a reload, a restored tab): done, not an error.
    const reloaded = await openAgain(page.url());
    expect(reloaded.heading).toBe('Nothing more to do');
    expect(reloaded.text).toContain('The invitation has been used: the account was connected');
    const shown = await accountShown(accountId);
    expect(shown.status).toBe('active');
    expect(shown.owner?.email).toBe(OWNER_EMAIL);
    expect(violations).toEqual([]);
  }, 120_000);

  it('R-OWN-11: the platform refuses the token; the owner gets an email whose button opens the status page', async () => {
    const first = await stage.cli(['sync', accountId, '--wait']);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    stage.sim.revokeTokens(accountId);
    const before = stage.smtp!.messages.length;
    const refused = await stage.cli(['sync', accountId, '--wait']);
    expect(refused.code).not.toBe(0);
    expect((await accountShown(accountId)).status).toBe('reauth_required');
    const mails = stage.smtp!.messages.slice(before);
    const toOwner = mails.filter((m: CapturedMessage) => m.to.includes(OWNER_EMAIL));
    expect(toOwner).toHaveLength(1);
    expect(toOwner[0]!.subject).toContain(`Please reconnect @${USERNAME}`);

    // The owner opens the email (its HTML part, as a mail client shows it) and presses its button.
    await page.setContent(toOwner[0]!.html);
    const button = page.getByRole('link', { name: `Reconnect @${USERNAME}` });
    link = (await button.getAttribute('href')) ?? '';
    expect(link).toMatch(new RegExp(`^${serve.url}/reconnect/[A-Za-z0-9_-]{43}$`));
    expect(toOwner[0]!.text).toContain(`\n${link}\n`); // the text part carries the same link
    await clickTo(button, (u) => u.href === link);
    expect(await heading()).toBe(`Your feed of @${USERNAME}`);
    const text = await mainText();
    expect(text).toContain('Not updating: needs you to reconnect');
    // Why it stopped and since when the website stands still; no days of validity for a token the
    // platform refuses (they would read as if the connection had weeks left).
    expect(await page.locator('dd[data-reason]').textContent()).toBe('The platform no longer accepts the connection.');
    expect(await page.locator('dd[data-last-sync]').textContent()).toMatch(/^\w+day, 1 April 2026, \d\d:\d\d UTC$/);
    expect(text).not.toContain('Validity left');
    expect(await page.locator('[data-days-left]').count()).toBe(0);
    expect(text).toContain('Your website keeps showing the posts of the last successful update');
    await shoot('status');
    expect(violations).toEqual([]);
  }, 120_000);

  it('R-OWN-15 / R-OWN-13: Reconnect reaches the consent page; the wrong account changes nothing; Deny; Try again goes back through the same link and reconnects', async () => {
    await stage.advance(3 * HOUR); // the owner reads the email later that day
    await page.goto(link);
    // A form whose POST answers 303 to the platform: the page's form-action must allow it.
    await clickTo(page.getByRole('button', { name: `Reconnect @${USERNAME}` }), onConsent);
    expect(await heading()).toBe('Allow access to your account');
    await shoot('consent');
    expect(violations).toEqual([]);

    await clickTo(allowAs('someone.else'), onServe('/callback'));
    expect(await heading()).toBe('Wrong account');
    expect(await mainText()).toContain(`This link is for @${USERNAME} only, so nothing was changed.`);
    expect((await accountShown(accountId)).status).toBe('reauth_required');
    expect((await stage.cli(['accounts', 'show', otherId, '--json'])).code).not.toBe(0); // nothing made of it
    await shoot('wrong-account');
    // The same page again (a reload, a restored tab): its login is spent, the link still works.
    const reloaded = await openAgain(page.url());
    expect(reloaded.heading).toBe('Login link not valid');
    expect(reloaded.text).toContain('This login link was already used.');
    expect(reloaded.tryAgain).toMatch(new RegExp(`^${simOrigin}/oauth/authorize\\?`));
    await clickTo(page.getByRole('link', { name: 'Try again' }), onConsent);

    await clickTo(page.getByRole('button', { name: 'Deny' }), onServe('/callback'));
    expect(await heading()).toBe('Account not connected');
    expect(await mainText()).toContain('The login was cancelled or the permission was declined.');
    await shoot('declined');
    const again = page.getByRole('link', { name: 'Try again' });
    // Not the operator's dashboard: a login bound to the owner's link.
    expect(await again.getAttribute('href')).toMatch(new RegExp(`^${simOrigin}/oauth/authorize\\?`));
    await clickTo(again, onConsent);
    expect((await accountShown(accountId)).status).toBe('reauth_required');
    await clickTo(allowAs(USERNAME), onServe('/callback'));
    expect(await heading()).toBe('Account reconnected');
    expect(await mainText()).toContain(`@${USERNAME} is connected again.`);
    await shoot('reconnected');
    const reloadedDone = await openAgain(page.url());
    expect(reloadedDone.heading).toBe('Nothing more to do');
    expect(reloadedDone.text).toContain('the account was reconnected');
    expect(reloadedDone.tryAgain).toBeNull();
    expect((await accountShown(accountId)).status).toBe('active');
    // It was the email's link that reconnected: used up now, its page says so.
    const res = await page.goto(link);
    expect(res?.status()).toBe(410);
    expect(await heading()).toBe('This link no longer works');
    expect(await mainText()).toContain('already used');
    expect(await mainText()).toContain('If you reconnected with it, there is nothing more to do');
    expect(violations).toEqual([]);
  }, 120_000);

  it('a newer link expires: its page says so; an unknown link is a 404 in words', async () => {
    stage.sim.revokeTokens(accountId);
    const before = stage.smtp!.messages.length;
    expect((await stage.cli(['sync', accountId, '--wait'])).code).not.toBe(0);
    const mail = stage.smtp!.messages.slice(before).find((m) => m.to.includes(OWNER_EMAIL));
    await page.setContent(mail!.html);
    const fresh = (await page.getByRole('link', { name: `Reconnect @${USERNAME}` }).getAttribute('href')) ?? '';
    expect(fresh).not.toBe(link);
    await stage.advance(15 * DAY); // RECONNECT_LINK_TTL is 14 days
    const res = await page.goto(fresh);
    expect(res?.status()).toBe(410);
    expect(await heading()).toBe('This link no longer works');
    expect(await mainText()).toContain('This reconnect link has expired.');
    // A link from an automatic email: whom to ask is the brand's support address, not "whoever sent it".
    expect(await mainText()).toContain('Ask help@northwind.example for a new link.');
    await shoot('expired');
    const unknown = await page.goto(fresh.slice(0, -4) + 'AAAA');
    expect(unknown?.status()).toBe(404);
    expect(await mainText()).toContain('This reconnect link is not valid here.');
    expect(violations).toEqual([]);
  }, 120_000);
});
