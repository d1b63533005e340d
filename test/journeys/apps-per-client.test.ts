import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSecretForAudit } from '../support/capture.ts';
import { launchChromium } from '../support/chromium.ts';
import { openStage, type Stage, type StageProcess, type StageServer } from './stage.ts';

/**
 * One app per client (Standard Access), as an operator runs it: a second app added with
 * `feedmirror apps add` (its secret on standard input), an owner invited through each app who
 * connects in Chromium on the platform's consent page, both accounts synced by a real worker. An
 * app-wide rate limit (code 4) on the second app holds only its account: the default app's
 * account syncs at once. The second app's secret reset on the platform (the simulator's control
 * API) stops only that app: connecting through it is refused, while the default app connects;
 * the operator is mailed naming the app, and the app's accounts' health names it and the fix.
 */
interface Listed {
  id: string;
  app: string;
  health: { verdict: string; reasons: Array<{ kind: string; text: string }> };
}

describe('journey: one app per client', () => {
  let stage: Stage;
  let serve: StageServer;
  let worker: StageProcess;
  let browser: Browser;
  let page: Page;
  let acmeAppId = '';
  let shopId = '';
  let acmeId = '';

  /** The simulator's control API, as an operator's script would call it. */
  const control = async (path: string, body: unknown) => {
    const res = await fetch(`${stage.sim.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stage.sim.controlSecret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status, path).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  };
  const listed = async (id: string): Promise<Listed> => {
    const r = await stage.cli(['accounts', 'list', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const found = (JSON.parse(r.stdout) as Listed[]).find((a) => a.id === id);
    if (!found) throw new Error(`${id} is not listed`);
    return found;
  };
  /** An invitation through `app`, opened in Chromium and allowed as `username`: the page it ends on. */
  const connectInChromium = async (app: string, username: string) => {
    const invite = await stage.cli(['accounts', 'invite', '--app', app]);
    expect(invite.code, invite.stderr).toBe(0);
    const link = invite.stdout.split('\n')[0]!;
    await page.goto(link);
    expect(await page.locator('h1').textContent()).toBe('Allow access to your account');
    await Promise.all([
      page.waitForURL((u) => u.pathname === '/callback', { timeout: 15_000 }),
      page.getByRole('button', { name: `Allow as @${username}`, exact: true }).click(),
    ]);
    return { heading: await page.locator('h1').textContent(), text: await page.locator('main').innerText() };
  };
  const postsOf = async (id: string) => (await stage.feed(id))?.posts.length ?? 0;

  beforeAll(async () => {
    stage = await openStage('appsperclient', { smtp: true });
    serve = await stage.startServe();
    worker = await stage.startWorker();
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(10_000);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stage?.close();
  });

  it('a second app added with `feedmirror apps add`; an owner of each app connects by invitation in Chromium; the worker syncs both', async () => {
    const acme = await control('/__sim/apps', {});
    acmeAppId = String(acme.appId);
    registerSecretForAudit(String(acme.appSecret));
    const add = await stage.cli(['apps', 'add', 'acme', '--app-id', acmeAppId], {
      stdin: `${String(acme.appSecret)}\n`,
    });
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout + add.stderr).not.toContain(String(acme.appSecret));

    shopId = stage.sim.createAccount({ username: 'harbour.shop', posts: 3 }).id;
    acmeId = stage.sim.createAccount({ username: 'acme.bakery', posts: 4 }).id;
    expect((await connectInChromium('default', 'harbour.shop')).heading).toBe('Account connected');
    expect((await connectInChromium('acme', 'acme.bakery')).heading).toBe('Account connected');
    expect((await listed(shopId)).app).toBe('default');
    expect((await listed(acmeId)).app).toBe('acme');
    await stage.until(async () => (await postsOf(shopId)) === 3, 'the shop feed', 60_000);
    await stage.until(async () => (await postsOf(acmeId)) === 4, 'the acme feed', 60_000);
    // Each owner's login went through their own app: the platform saw acme's id for acme's code.
    const codeExchanges = stage.sim.requests.filter((r) => r.form?.code !== undefined);
    expect(codeExchanges.map((r) => r.form?.client_id)).toEqual([stage.sim.appId, acmeAppId]);
  }, 180_000);

  it('a rate limit (code 4) on app acme holds only its account: the default app’s account syncs at once', async () => {
    await control('/__sim/rate-limit', { seconds: 3600, appId: acmeAppId });
    stage.sim.addPost(shopId, { kind: 'image', caption: 'new at the shop' });
    stage.sim.addPost(acmeId, { kind: 'image', caption: 'new at acme' });
    expect((await stage.cli(['sync', acmeId])).code).toBe(0);
    expect((await stage.cli(['sync', shopId])).code).toBe(0);
    await stage.until(async () => (await postsOf(shopId)) === 4, 'the shop synced past the other app’s limit', 60_000);
    expect(await postsOf(acmeId)).toBe(4);
    // acme's account waits out the stated hour (held in Redis for the app, not failed), and a
    // limit is not a fault of the app: its health does not blame the app.
    const held = await stage.cli(['sync', acmeId, '--wait']);
    expect(held.stdout + held.stderr).toMatch(/rate.limit/i);
    expect(await postsOf(acmeId)).toBe(4);
    const acme = await listed(acmeId);
    expect(acme.health.reasons.map((r) => r.kind)).not.toContain('app_fault');
  }, 180_000);

  it('acme’s secret reset on the platform stops only acme: its connections are refused, the operator is mailed naming it, its health names it', async () => {
    const reset = await control(`/__sim/apps/${acmeAppId}/secret`, {});
    registerSecretForAudit(String(reset.appSecret));
    const before = stage.smtp!.messages.length;
    stage.sim.createAccount({ username: 'acme.florist', posts: 2 });
    const refused = await connectInChromium('acme', 'acme.florist');
    expect(refused.heading).not.toBe('Account connected');
    expect(refused.text).not.toContain(String(reset.appSecret));
    // The default app is not touched: its owners still connect.
    stage.sim.createAccount({ username: 'corner.cafe', posts: 2 });
    expect((await connectInChromium('default', 'corner.cafe')).heading).toBe('Account connected');

    await stage.until(
      () => stage.smtp!.messages.slice(before).some((m) => /acme/.test(m.subject)),
      'the operator alert',
      30_000,
    );
    const alert = stage.smtp!.messages.slice(before).find((m) => /acme/.test(m.subject))!;
    expect(alert.to).toContain('ops@example.test'); // the operator, not an owner
    expect(alert.text).toContain('acme');
    expect(alert.text).toContain('/dashboard/apps');
    expect(alert.text).not.toContain(String(reset.appSecret));

    const acme = await listed(acmeId);
    expect(acme.health.verdict).toBe('fail');
    const reason = acme.health.reasons.find((r) => r.kind === 'app_fault')!;
    expect(reason.text).toMatch(
      /the platform refuses the secret of app acme since .*feedmirror apps set acme --secret-file FILE/,
    );
    const shop = await listed(shopId);
    expect(shop.health.reasons.map((r) => r.kind)).not.toContain('app_fault');
    // The default app's account still syncs.
    stage.sim.addPost(shopId, { kind: 'image', caption: 'after acme broke' });
    expect((await stage.cli(['sync', shopId, '--wait'])).code).toBe(0);
    expect(await postsOf(shopId)).toBe(5);
    expect(serve.output() + worker.output()).not.toContain(String(reset.appSecret));
  }, 180_000);
});
