import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium: the browser tests drive it through playwright-core and never download one. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless Chromium as every browser test starts it: no sandbox (tests may run as root), no GPU,
 * and nothing of its own on the network (updates, sync, first-run pages) that could slow a page or
 * show up in a page's requests. Shared so that each test's browser is the same browser.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (this test never downloads a browser)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
