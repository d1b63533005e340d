import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  flash,
  launchChromium,
  logIn,
  OPERATOR,
  submit,
  watchContext,
  type CspWatch,
} from '../support/operator-browser.ts';
import { parseMessage, type CapturedMessage } from '../support/smtp.ts';
import { openStage, type Stage, type StageServer } from './stage.ts';

/**
 * An invitation emailed by feedmirror, followed by its owner in their real clients: the operator
 * invites with `feedmirror accounts invite --owner-email … --send` (a real process) or with the
 * dashboard's form (clicked in Chromium, logged in); a real SMTP server receives the email; the
 * owner's mail is parsed as a MIME message and its HTML part opened in Chromium, where the owner
 * presses its button, approves on the simulator's consent page ("Allow as @…", another origin)
 * and lands on the done page: the account is connected with its owner recorded (R-OWN-10). No
 * page reports a Content-Security-Policy violation.
 */
const BRAND = 'Northwind Feeds';
let stage: Stage;
let serve: StageServer;
let browser: Browser;
/** The operator's browser and the owners' (another person, another profile). */
let operator: BrowserContext;
let owners: BrowserContext;
const watch: CspWatch = { violations: [], skipCapture: [] };
let simOrigin: string;

beforeAll(async () => {
  stage = await openStage('invitemail', {
    smtp: true,
    env: { DASHBOARD_USER: OPERATOR, BRAND_NAME: BRAND, BRAND_SUPPORT_EMAIL: 'help@northwind.example' },
  });
  serve = await stage.startServe();
  simOrigin = new URL(stage.sim.authorizeUrl).origin;
  expect(new URL(serve.url).origin).not.toBe(simOrigin); // the platform is another origin
  browser = await launchChromium();
  operator = await browser.newContext();
  owners = await browser.newContext();
  for (const c of [operator, owners]) {
    c.setDefaultTimeout(10_000);
    watchContext(c, watch);
  }
}, 120_000);

afterEach(() => {
  expect(watch.violations.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await stage?.close();
});

/** The one email the owner received since `before`, parsed from its raw MIME message. */
function mailTo(owner: string, before: number): { message: CapturedMessage; text: string; html: string } {
  const mails = stage.smtp!.messages.slice(before).filter((m) => m.to.includes(owner));
  expect(mails).toHaveLength(1);
  const { text, html } = parseMessage(mails[0]!.raw);
  return { message: mails[0]!, text, html };
}

/**
 * The owner opens the email's HTML part (as their mail client shows it), checks what it says,
 * presses its button, approves as `username` on the consent page and lands on the done page.
 */
async function ownerFollows(mail: { message: CapturedMessage; text: string; html: string }, username: string) {
  const page: Page = await owners.newPage();
  try {
    await page.setContent(mail.html);
    const shown = (await page.locator('body').innerText()).replace(/\s+/g, ' ');
    expect(shown).toContain(`${BRAND} would like to show the posts of your account`);
    expect(shown).toMatch(/The link works once, until \w+day, \d{1,2} \w+ 2026, \d\d:\d\d UTC\./);
    const button = page.getByRole('link', { name: 'Connect your account', exact: true });
    const href = (await button.getAttribute('href')) ?? '';
    expect(href).toMatch(new RegExp(`^${serve.url}/connect\\?invite=[A-Za-z0-9_-]{43}$`));
    expect(mail.text).toContain(`\n${href}\n`); // the text part carries the same link
    await Promise.all([
      page.waitForURL((u) => u.origin === simOrigin && u.pathname === '/oauth/authorize'),
      button.click(),
    ]);
    expect(await page.locator('h1').textContent()).toBe('Allow access to your account');
    const allow = page.getByRole('button', { name: `Allow as @${username}`, exact: true });
    await Promise.all([page.waitForURL((u) => u.href.startsWith(`${serve.url}/callback`)), allow.click()]);
    await page.waitForLoadState('load');
    expect(await page.locator('h1').textContent()).toBe('Account connected');
    expect((await page.locator('main').innerText()).replace(/\s+/g, ' ')).toContain(`@${username} is connected.`);
    return shown;
  } finally {
    await page.close();
  }
}

async function accountShown(id: string) {
  const r = await stage.cli(['accounts', 'show', id, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { status: string; owner: { email: string; name: string | null } | null };
}

describe('journey: an invitation emailed by feedmirror, followed in Chromium', () => {
  it('from the CLI: `accounts invite --owner-email … --send`; the owner opens the email, presses its button, approves: connected with its owner', async () => {
    const owner = 'jane@bakery.example';
    const acc = stage.sim.createAccount({ username: 'janes.bakery', name: "Jane's Bakery", posts: 3 });
    const before = stage.smtp!.messages.length;
    const invite = await stage.cli(['accounts', 'invite', '--owner-email', owner, '--owner-name', 'Jane', '--send']);
    expect(invite.code, invite.stderr).toBe(0);
    expect(invite.stdout.split('\n')[1]).toContain(`emailed to ${owner}`);
    const mail = mailTo(owner, before);
    expect(mail.message.subject).toBe(`${BRAND}: connect your account to show your posts on your website`);
    const shown = await ownerFollows(mail, acc.username);
    expect(shown).toContain('Hello Jane,');
    expect(shown).toContain(`This invitation is for ${owner}.`);
    const account = await accountShown(acc.id);
    expect(account.status).toBe('active');
    expect(account.owner).toMatchObject({ email: owner, name: 'Jane' });
  }, 120_000);

  it('from the dashboard: the operator invites with "email it to the owner" ticked; the list says emailed; the owner\'s email leads to the done page', async () => {
    const owner = 'sam@harbour.example';
    const acc = stage.sim.createAccount({ username: 'harbour.shop', name: 'Harbour Shop', posts: 2 });
    const page = await operator.newPage();
    await logIn(page, { url: serve.url, password: stage.env.DASHBOARD_PASSWORD! });
    const form = page.locator('form[action="/dashboard/invitations"]');
    await form.locator('input[name=owner_email]').fill(owner);
    await form.locator('input[name=owner_name]').fill('Sam');
    await form.getByLabel('email it to the owner').check();
    const before = stage.smtp!.messages.length;
    await submit(page, form.getByRole('button', { name: 'Invite an owner' }));
    expect(await page.locator('h1').textContent()).toBe('Invitation created');
    const f = await flash(page);
    expect(f.kind).toBe('ok');
    expect(f.text).toMatch(new RegExp(`^Invitation emailed to ${owner.replace(/\./g, '\\.')}; it works once, until `));
    expect(await page.locator('[data-emailed="smtp"]').textContent()).toContain(owner);
    const link = await page.locator('#invitation').inputValue();

    const mail = mailTo(owner, before);
    await page.goto(`${serve.url}/dashboard`);
    // Its row in the list of invitations (the CLI's, made at the same instant of the stage's clock, is another).
    const row = page.locator('table.invitations tbody tr', { hasText: owner });
    expect(await row.count()).toBe(1);
    expect(await row.getAttribute('data-invitation-state')).toBe('ok');
    expect(await row.locator('[data-emailed="smtp"]').textContent()).toContain(`emailed to ${owner}`);

    const shown = await ownerFollows(mail, acc.username);
    expect(shown).toContain('Hello Sam,');
    expect(mail.html).toContain(link.replace(/&/g, '&amp;')); // the link the page showed is the emailed one
    const account = await accountShown(acc.id);
    expect(account.status).toBe('active');
    expect(account.owner).toMatchObject({ email: owner, name: 'Sam' });

    // The operator sees the account connected and the invitation used.
    await page.goto(`${serve.url}/dashboard`);
    expect(await page.locator(`tr[data-account-id="${acc.id}"]`).count()).toBe(1);
    expect(await row.getAttribute('data-invitation-state')).toBe('used');
    await page.close();
  }, 120_000);
});
