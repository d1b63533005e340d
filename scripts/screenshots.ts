/**
 * The pictures of docs/accounts.md ("What the owner sees"): one email (its HTML part) and each
 * page an account owner meets, rendered by the real renderers with a sample brand, photographed
 * in Debian's Chromium (playwright-core, never a downloaded browser).
 *
 *   npm run docs:screenshots:owner        (writes docs/images/owner-*.png)
 */
import { mkdir, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { renderEmail } from '../src/alerts/templates.ts';
import { renderOwnerPage } from '../src/http/owner-pages.ts';
import { refusedLinkPage } from '../src/http/reconnect.ts';

const OUT = fileURLToPath(new URL('../docs/images/', import.meta.url));
const brand = { name: 'Northwind Studio', supportEmail: 'help@northwind.example', accentColor: '#0f766e' };
const now = new Date('2026-03-08T09:00:00Z');
const day = 86_400_000;
const retry = 'https://feeds.northwind.example/connect?invite=example';

const shots: Array<{ file: string; html: string; width: number }> = [
  {
    file: 'owner-email-expiry.png',
    width: 640,
    html: renderEmail('owner-expiry', {
      username: 'corner.bakery',
      daysLeft: 6,
      expiresAt: new Date(now.getTime() + 6 * day + 6 * 3_600_000),
      reconnectUrl: 'https://feeds.northwind.example/reconnect/6QfV2m-example',
      linkExpiresAt: new Date(now.getTime() + 14 * day),
      brand,
    }).html,
  },
  {
    file: 'owner-page-done.png',
    width: 720,
    html: renderOwnerPage('done', {
      username: 'corner.bakery',
      expiresAt: new Date(now.getTime() + 60 * day),
      feedUrl: 'https://feeds.northwind.example/feeds/17841400000000001.json',
      brand,
    }),
  },
  {
    file: 'owner-page-declined.png',
    width: 720,
    html: renderOwnerPage('declined', {
      lines: [
        'The login was cancelled or the permission was declined.',
        'Nothing was connected. To connect, log in again and approve the instagram_business_basic permission: it lets this service read your posts to show them on a website, nothing else.',
      ],
      retryUrl: retry,
      brand,
    }),
  },
  {
    file: 'owner-page-expired-link.png',
    width: 720,
    html: refusedLinkPage('expired', brand),
  },
  {
    file: 'owner-page-wrong-account.png',
    width: 720,
    html: renderOwnerPage('wrong-account', { expectedUsername: 'corner.bakery', retryUrl: retry, brand }),
  },
  {
    file: 'owner-page-status.png',
    width: 720,
    html: renderOwnerPage('status', {
      username: 'corner.bakery',
      connected: false,
      reason: 'the account password was changed',
      daysLeft: null,
      lastSyncAt: new Date(now.getTime() - 2 * day),
      linkExpiresAt: new Date(now.getTime() + 14 * day),
      reconnect: { url: 'https://feeds.northwind.example/reconnect/6QfV2m-example' },
      brand,
    }),
  },
];

await mkdir(OUT, { recursive: true });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
try {
  for (const s of shots) {
    const page = await browser.newPage({ viewport: { width: s.width, height: 400 }, deviceScaleFactor: 1 });
    // No network: the pages load nothing (the sample brand has no logo).
    await page.route('**/*', (route) => route.abort());
    await page.setContent(s.html, { waitUntil: 'load' });
    const path = `${OUT}${s.file}`;
    await page.screenshot({ path, fullPage: true });
    await page.close();
    const { size } = await stat(path);
    if (size > 150 * 1024)
      throw new Error(`${s.file} is ${Math.round(size / 1024)} KB (keep docs images under 150 KB)`);
    process.stdout.write(`docs/images/${s.file}  ${Math.round(size / 1024)} KB\n`);
  }
} finally {
  await browser.close();
}
