import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_OTHER_ACCOUNTS, demoPosts } from '../../src/simulator/demo-content.ts';
import type { Feed } from '../../src/schema/v1.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { openStage, type DashboardClient, type Stage, type StageServer } from './stage.ts';

/**
 * docs/getting-started.md "The five-minute tour", command by command, on a stage set up as
 * `npm run demo` leaves things: the demo account and three others on the platform (same ids as
 * the demo's), @demo.bakery connected, a worker, serve, and data/demo/demo.env with the
 * simulator's address and control secret. Asserts what the operator sees: the consent page, the
 * CLI's output, the published feed, the accounts list and the dashboard.
 */
describe('journey: the five-minute tour', () => {
  let stage: Stage;
  let serve: StageServer;
  let dash: DashboardClient;
  let demoEnv: Record<string, string>;
  const DEMO = '17841400000000001';
  const HARBOUR = '17841400000000002';

  beforeAll(async () => {
    stage = await openStage('tour');
    // The platform as the demo fills it: @demo.bakery first, then the accounts its owner could also connect.
    const now = stage.sim.clock.now().getTime();
    const demo = stage.sim.createAccount({ username: 'demo.bakery', name: 'Demo Bakery', posts: demoPosts(8, now) });
    DEMO_OTHER_ACCOUNTS.forEach((a, i) => stage.sim.createAccount({ ...a, posts: demoPosts(4, now, 3 * (i + 1)) }));
    expect(demo.id).toBe(DEMO);
    const token = stage.sim.issueShortLivedToken(demo.id);
    registerSecretForAudit(token);
    const added = await stage.cli(['accounts', 'add'], { stdin: token });
    expect(added.code, added.stderr).toBe(0);
    demoEnv = stage.writeDemoEnv();
    await stage.startWorker();
    serve = await stage.startServe();
    dash = await serve.login();
    await stage.until(async () => (await stage.feed(DEMO))?.demo === false, 'the demo feed', 60_000);
  });
  afterAll(async () => {
    await stage?.close();
  });

  /** The tour's commands run with data/demo/demo.env loaded, from the demo's folder. */
  const run = (args: string[]) => stage.cli(args, { env: demoEnv });
  const captions = (f: Feed | null) => (f ? f.posts.map((p) => p.text) : []);
  const status = async (id: string) => {
    const list = await run(['accounts', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    return (JSON.parse(list.stdout) as Array<{ id: string; status: string }>).find((a) => a.id === id)?.status;
  };

  /** Dashboard, "Connect an account", then "Allow as @<username>" on the consent page; the done page's text. */
  async function connectFromDashboard(username: string): Promise<string> {
    const start = await dash.get('/dashboard/connect');
    expect(start.location, `GET /dashboard/connect: HTTP ${start.status}`).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?/,
    );
    const consent = await fetch(start.location!);
    const html = await consent.text();
    expect(consent.status).toBe(200);
    for (const name of ['Demo Bakery', 'Harbour Café', 'Hillside Photo Studio', 'Lakeview Flowers'])
      expect(html).toContain(name);
    // The form holding the button "Allow as @<username>", submitted as the browser would.
    const form = html.split('<form').find((f) => f.includes(`>Allow as @${username}</button>`));
    expect(form, `a form with "Allow as @${username}"`).toBeTruthy();
    const fields = Object.fromEntries(
      [...form!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
        m[1]!,
        m[2]!
          .replace(/&amp;/g, '&')
          .replace(/&quot;/g, '"')
          .replace(/&#39;/g, "'")
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>'),
      ]),
    );
    const decided = await fetch(`${stage.sim.url}/oauth/authorize/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
    expect(decided.status).toBe(302);
    const done = await fetch(decided.headers.get('location')!);
    const text = await done.text();
    expect(done.status, text).toBe(200);
    return text;
  }

  it('connect, post, see it, delete it, see it pruned, revoke, see the account need its owner, reconnect', async () => {
    // 2. Connect an account: pick @harbour.cafe on the consent page.
    const done = await connectFromDashboard('harbour.cafe');
    expect(done).toContain('harbour.cafe');
    expect(await status(HARBOUR)).toBe('active');
    expect((await dash.get('/dashboard')).html).toContain('harbour.cafe');

    // 3. Point the CLI at the demo and look at the platform.
    const accounts = await run(['simulator', 'accounts']);
    expect(accounts.code, accounts.stderr).toBe(0);
    expect(accounts.stdout).toContain(`${DEMO}  @demo.bakery  Demo Bakery`);
    expect(accounts.stdout).toContain(`${HARBOUR}  @harbour.cafe  Harbour Café`);

    // 4. Post something, sync, see it first in the feed.
    const caption = 'Cinnamon rolls are back! #bakery #fresh';
    const added = await run(['simulator', 'post', 'add', DEMO, '--caption', caption]);
    expect(added.code, added.stderr).toBe(0);
    const postId = /added image post (\d+) to account/.exec(added.stdout)?.[1];
    expect(postId, added.stdout).toBeTruthy();
    const sync = await run(['sync', DEMO, '--wait']);
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    const withPost = await stage.feed(DEMO);
    expect(captions(withPost)[0]).toBe(caption);
    expect(withPost!.posts[0]!.id).toBe(postId);
    const feedsGet = await run(['feeds', 'get', DEMO]);
    expect(feedsGet.stdout).toContain('Cinnamon rolls are back!');
    // The widget preview reads the same feed over HTTP, with the new post's copy.
    const overHttp = (await (await fetch(`${serve.url}/feeds/${DEMO}.json`)).json()) as Feed;
    expect(overHttp.posts[0]!.id).toBe(postId);
    expect((await fetch(overHttp.posts[0]!.thumbnailUrl!)).status).toBe(200);

    // 5. Delete it, sync, see it pruned.
    const deleted = await run(['simulator', 'post', 'delete', DEMO, postId!]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain('the next sync prunes it');
    const sync2 = await run(['sync', DEMO, '--wait']);
    expect(sync2.code, sync2.stdout + sync2.stderr).toBe(0);
    const pruned = await stage.feed(DEMO);
    expect(pruned!.posts.map((p) => p.id)).not.toContain(postId);
    expect(pruned!.posts.length).toBe(withPost!.posts.length - 1);

    // 6. Revoke @harbour.cafe's token: its sync fails and the account needs its owner.
    const revoked = await run(['simulator', 'revoke', HARBOUR]);
    expect(revoked.code, revoked.stderr).toBe(0);
    const refused = await run(['sync', HARBOUR, '--wait']);
    expect(refused.code).not.toBe(0);
    expect(await status(HARBOUR)).toBe('reauth_required');
    const list = await run(['accounts', 'list']);
    expect(list.stdout).toMatch(new RegExp(`^${HARBOUR}\\t@harbour\\.cafe\\treauth_required`, 'm'));
    const overview = await dash.get('/dashboard');
    expect(overview.html).toMatch(/harbour\.cafe[\s\S]*?Owner must log in again/);

    // 7. Reconnect it from the dashboard: active again, and it syncs.
    await connectFromDashboard('harbour.cafe');
    expect(await status(HARBOUR)).toBe('active');
    const sync3 = await run(['sync', HARBOUR, '--wait']);
    expect(sync3.code, sync3.stdout + sync3.stderr).toBe(0);
    expect((await stage.feed(HARBOUR))?.demo).toBe(false);
  }, 240_000);
});
