import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SETTINGS, DEMO_WIDGET_NAME } from '../../src/cli/start/demo.ts';
import { DEMO_OTHER_ACCOUNTS, DEMO_OWNER, demoPosts } from '../../src/simulator/demo-content.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { openStage, type DashboardClient, type Stage, type StageServer } from './stage.ts';
import { closestPhoto } from '../support/photo-match.ts';

/**
 * docs/getting-started.md "The five-minute tour", command by command, on a stage set up as
 * `npm run demo` leaves things: the demo account and three others on the platform (same ids as
 * the demo's), @demo.bakery connected with its owner recorded, the demo's widget of it, the demo's
 * settings (OWNER_ALERTS on, the outbox in data/demo/outbox), a worker, serve, and
 * data/demo/demo.env with the simulator's address and control secret and the widget's id. Every
 * command is taken from the doc's text (the test fails when the doc stops saying it) and run as
 * written; the test asserts what the operator and the owner see: the CLI's output, the consent
 * and owner pages, the widget's published document, the emails in the outbox, the dashboard.
 */
const TOUR = (() => {
  const doc = readFileSync(new URL('../../docs/getting-started.md', import.meta.url), 'utf8');
  const start = doc.indexOf('## The five-minute tour');
  return doc.slice(start, doc.indexOf('\n## ', start + 1));
})();

/** A command line of the tour, exactly as the doc writes it. */
function asWritten(line: string): string {
  expect(TOUR, `the tour no longer says: ${line}`).toContain(line);
  return line;
}

/** A command line's words as bash splits them (plain words and '…' quotes are all the tour uses). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The hidden fields of an HTML form, as a browser submits them. */
const hiddenFields = (form: string) =>
  Object.fromEntries(
    [...form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
      unescapeHtml(m[1]!),
      unescapeHtml(m[2]!),
    ]),
  );

/** An .eml file of the outbox: its headers, and its text with quoted-printable undone. */
function readEmail(file: string): { to: string; subject: string; text: string } {
  const raw = readFileSync(file, 'utf8');
  const head = raw.slice(0, raw.indexOf('\n\n')).replace(/\n[ \t]+/g, ' ');
  const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(head)?.[1] ?? '';
  const text = raw
    .replace(/=\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return { to: header('To'), subject: header('Subject'), text };
}

describe('journey: the five-minute tour', () => {
  let stage: Stage;
  let serve: StageServer;
  let dash: DashboardClient;
  let demoEnv: Record<string, string>;
  let widgetId: string;
  const DEMO = '17841400000000001';
  const HARBOUR = '17841400000000002';
  const OUTBOX = 'data/demo/outbox';

  beforeAll(async () => {
    // The demo's settings: owners get their alerts, emails go to data/demo/outbox.
    stage = await openStage('tour', { env: { ...DEMO_SETTINGS }, outboxDir: OUTBOX });
    // The platform as the demo fills it: @demo.bakery first, then the accounts its owner could also connect.
    const now = stage.sim.clock.now().getTime();
    // As `npm run demo` makes them: photo accounts (their pictures are the bundled photographs).
    const demo = stage.sim.createAccount({
      username: 'demo.bakery',
      name: 'Demo Bakery',
      posts: demoPosts(8, now),
      photos: true,
    });
    DEMO_OTHER_ACCOUNTS.forEach((a, i) =>
      stage.sim.createAccount({ ...a, posts: demoPosts(4, now, 3 * (i + 1)), photos: true }),
    );
    expect(demo.id).toBe(DEMO);
    const token = stage.sim.issueShortLivedToken(demo.id);
    registerSecretForAudit(token);
    const added = await stage.cli(['accounts', 'add'], { stdin: token });
    expect(added.code, added.stderr).toBe(0);
    // The demo's account has its owner (the demo's invitation carries the address).
    const owner = await stage.cli(['accounts', 'set', DEMO, '--owner-email', DEMO_OWNER.email]);
    expect(owner.code, owner.stderr).toBe(0);
    await stage.startWorker();
    serve = await stage.startServe();
    dash = await serve.login();
    await stage.until(async () => (await stage.feed(DEMO))?.demo === false, 'the demo feed', 60_000);
    // The demo's widget of its account, made through the same code path as `widgets add`.
    const widget = await stage.cli(['widgets', 'add', '--name', DEMO_WIDGET_NAME, '--account', DEMO, '--json']);
    expect(widget.code, widget.stderr).toBe(0);
    widgetId = (JSON.parse(widget.stdout) as { id: string }).id;
    demoEnv = stage.writeDemoEnv({ DEMO_WIDGET_ID: widgetId });
  }, 180_000);
  afterAll(async () => {
    await stage?.close();
  });

  /** A `npx feedmirror …` line of the tour, run with data/demo/demo.env loaded from the demo's folder. */
  const run = (line: string, fill: Record<string, string> = {}) => {
    let filled = asWritten(line);
    for (const [placeholder, value] of Object.entries(fill)) filled = filled.replace(placeholder, value);
    const [npx, feedmirror, ...args] = words(filled);
    expect(`${npx} ${feedmirror}`).toBe('npx feedmirror');
    return stage.cli(args, { env: demoEnv });
  };
  /** A shell line of the tour (curl, sed, grep), run by bash with data/demo/demo.env loaded. */
  const shell = (line: string) => stage.shell(asWritten(line), demoEnv);
  const status = async (id: string) => {
    const list = await stage.cli(['accounts', 'list', '--json'], { env: demoEnv });
    expect(list.code, list.stderr).toBe(0);
    return (JSON.parse(list.stdout) as Array<{ id: string; status: string }>).find((a) => a.id === id)?.status;
  };
  /** The widget's document as a site's page loads it (serve's /widgets/<id>.json). */
  const widgetDocument = async () => {
    const res = await fetch(`${serve.url}/widgets/${widgetId}.json`);
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string; posts: Array<{ id: string; text: string }> };
  };

  /**
   * The platform's consent page at `authorizeUrl` (it lists every account of the owner), then
   * "Allow as @<username>", as the browser submits it; the page the callback answers with.
   */
  async function allowAs(authorizeUrl: string, username: string): Promise<{ status: number; html: string }> {
    expect(authorizeUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?/);
    const consent = await fetch(authorizeUrl);
    const html = await consent.text();
    expect(consent.status).toBe(200);
    for (const name of ['Demo Bakery', 'Harbour Café', 'Hillside Photo Studio', 'Lakeview Flowers'])
      expect(html).toContain(name);
    const form = html.split('<form').find((f) => f.includes(`>Allow as @${username}</button>`));
    expect(form, `a form with "Allow as @${username}"`).toBeTruthy();
    const decided = await fetch(`${stage.sim.url}/oauth/authorize/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(hiddenFields(form!)),
    });
    expect(decided.status).toBe(302);
    const page = await fetch(decided.headers.get('location')!, { redirect: 'manual' });
    return { status: page.status, html: await page.text() };
  }

  it('connect with the owner, post and see it in the widget, delete it, revoke, the owner’s email, reconnect through its link', async () => {
    // 1. Point the CLI at the demo and look at the platform.
    asWritten('set -a; . data/demo/demo.env; set +a');
    const accounts = await run('npx feedmirror simulator accounts');
    expect(accounts.code, accounts.stderr).toBe(0);
    expect(accounts.stdout).toContain(`${DEMO}  @demo.bakery  Demo Bakery`);
    expect(accounts.stdout).toContain(`${HARBOUR}  @harbour.cafe  Harbour Café`);

    // 2. Connect another account, with its owner: the invitation, the consent page, "Allow as @harbour.cafe".
    const invite = await run('npx feedmirror accounts invite --owner-email owner@harbour-cafe.example');
    expect(invite.code, invite.stderr).toBe(0);
    const invitation = invite.stdout.split('\n')[0]!;
    expect(invitation).toMatch(new RegExp(`^${serve.url}/connect\\?invite=`));
    const toLogin = await fetch(invitation, { redirect: 'manual' });
    expect(toLogin.status).toBe(302);
    const connected = await allowAs(toLogin.headers.get('location')!, 'harbour.cafe');
    expect(connected.status, connected.html).toBe(200);
    expect(connected.html).toContain('Account connected');
    expect(connected.html).toContain('@harbour.cafe');
    expect(await status(HARBOUR)).toBe('active');
    expect((await dash.get('/dashboard')).html).toContain('harbour.cafe');
    const shown = await run('npx feedmirror accounts show 17841400000000002');
    expect(shown.code, shown.stderr).toBe(0);
    // The owner line as the tour prints it, word for word.
    const ownerLine = /^ {3}(owner: .*)$/m.exec(TOUR)?.[1];
    expect(ownerLine).toBe(
      'owner:     owner@harbour-cafe.example; gets the expiry and reauth alerts with a reconnect link',
    );
    expect(shown.stdout.split('\n')).toContain(ownerLine);

    // 3. Post something, sync, see it first in the widget's published document.
    const caption = 'Fig tarts are back! #bakery #fresh';
    const added = await run(
      "npx feedmirror simulator post add 17841400000000001 --caption 'Fig tarts are back! #bakery #fresh'",
    );
    expect(added.code, added.stderr).toBe(0);
    const postId = /added image post (\d+) to account/.exec(added.stdout)?.[1];
    expect(postId, added.stdout).toBeTruthy();
    const sync = await run('npx feedmirror sync 17841400000000001 --wait');
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    const firstText = `curl -s "$PUBLIC_URL/widgets/$DEMO_WIDGET_ID.json" | grep -o '"text":"[^"]*"' | head -n 1`;
    const seen = await shell(firstText);
    expect(seen.code, seen.stderr).toBe(0);
    expect(seen.stdout).toBe(`"text":"${caption}"\n`);
    const withPost = await widgetDocument();
    expect(withPost.id).toBe(widgetId);
    expect(withPost.posts[0]!.id).toBe(postId);
    // The widget shows what the account's feed publishes, the new post's copy included.
    const feed = (await stage.feed(DEMO))!;
    expect(feed.posts[0]!.id).toBe(postId);
    const cover = await fetch(feed.posts[0]!.thumbnailUrl!);
    expect(cover.status).toBe(200);
    // Its picture is the one its caption talks about: the demo's photo of figs.
    expect((await closestPhoto(Buffer.from(await cover.arrayBuffer()))).file).toBe('fig.jpg');
    // The widget preview embeds that widget by id.
    expect(TOUR).toContain('$PUBLIC_URL/widget/demo.html');

    // 4. Delete it, sync, see it pruned: the widget's first post is the one before it again.
    const deleted = await run('npx feedmirror simulator post delete 17841400000000001 <post id printed by post add>', {
      '<post id printed by post add>': postId!,
    });
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain('the next sync prunes it');
    const sync2 = await run('npx feedmirror sync 17841400000000001 --wait');
    expect(sync2.code, sync2.stdout + sync2.stderr).toBe(0);
    const pruned = await widgetDocument();
    expect(pruned.posts.map((p) => p.id)).not.toContain(postId);
    expect(pruned.posts.map((p) => p.id)).toEqual(withPost.posts.slice(1).map((p) => p.id));
    const again = await shell(firstText);
    expect(again.stdout).toBe(`"text":"${JSON.stringify(pruned.posts[0]!.text).slice(1, -1)}"\n`);
    expect(again.stdout).not.toContain('Fig tarts are back');

    // 5. Revoke @harbour.cafe's token: its sync fails and the account needs its owner.
    const revoked = await run('npx feedmirror simulator revoke 17841400000000002');
    expect(revoked.code, revoked.stderr).toBe(0);
    const refused = await run('npx feedmirror sync 17841400000000002 --wait');
    expect(refused.code).not.toBe(0);
    expect(await status(HARBOUR)).toBe('reauth_required');
    const list = await run('npx feedmirror accounts list');
    expect(list.stdout).toMatch(new RegExp(`^${HARBOUR}\\t@harbour\\.cafe\\treauth_required`, 'm'));
    const overview = await dash.get('/dashboard');
    expect(overview.html).toMatch(/harbour\.cafe[\s\S]*?Owner must log in again/);

    // 6. The owner's email in the outbox, with the one-time link; the operator's copy says the owner was told.
    const printed = await shell(
      String.raw`sed ':a;/=$/{N;s/=\n//;ba;}' data/demo/outbox/*.eml | grep -o 'http[^ "<>]*/reconnect/[A-Za-z0-9_-]*' | tail -n 1`,
    );
    expect(printed.code, printed.stderr).toBe(0);
    const link = printed.stdout.trim();
    expect(link).toMatch(new RegExp(`^${serve.url}/reconnect/[A-Za-z0-9_-]{43}$`));
    const emails = readdirSync(join(stage.dir, OUTBOX))
      .filter((f) => f.endsWith('.eml'))
      .map((f) => readEmail(join(stage.dir, OUTBOX, f)));
    const toOwner = emails.filter((e) => e.to === 'owner@harbour-cafe.example');
    expect(toOwner).toHaveLength(1);
    expect(toOwner[0]!.subject).toContain('Please reconnect @harbour.cafe');
    expect(toOwner[0]!.text).toContain(`Reconnect @harbour.cafe:\n${link}\n`);
    const operatorCopy = emails.find(
      (e) => e.to !== 'owner@harbour-cafe.example' && e.subject.includes('harbour.cafe'),
    );
    expect(operatorCopy?.subject).toContain('@harbour.cafe must log in again');
    expect(operatorCopy!.text).toContain('The owner (o***@harbour-cafe.example) was told');
    expect(operatorCopy!.text).not.toContain('/reconnect/');
    // The demo account's owner was told nothing: nothing is wrong with it.
    expect(emails.filter((e) => e.to === DEMO_OWNER.email)).toHaveLength(0);

    // 7. The link: the owner's status page says the account needs them; Reconnect.
    const statusPage = await fetch(link);
    const statusHtml = await statusPage.text();
    expect(statusPage.status).toBe(200);
    expect(statusHtml).toContain('Your feed of @harbour.cafe');
    expect(statusHtml).toContain('Not updating: needs you to reconnect');
    const reconnectForm = /<form class="actions" method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(statusHtml);
    expect(reconnectForm?.[2]).toContain('>Reconnect @harbour.cafe</button>');
    const pressed = await fetch(new URL(unescapeHtml(reconnectForm![1]!), link), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: serve.url },
      body: new URLSearchParams(hiddenFields(reconnectForm![2]!)),
    });
    expect(pressed.status).toBe(303);
    // Another account through the link is refused: nothing changes, "Try again" goes back.
    const wrong = await allowAs(pressed.headers.get('location')!, 'demo.bakery');
    expect(wrong.status).toBe(403);
    expect(wrong.html).toContain('Wrong account');
    expect(wrong.html).toContain('This link is for @harbour.cafe only, so nothing was changed.');
    expect(await status(HARBOUR)).toBe('reauth_required');
    expect(await status(DEMO)).toBe('active');
    const tryAgain = /<a class="button" href="([^"]+)">Try again<\/a>/.exec(wrong.html)?.[1];
    expect(tryAgain, 'a "Try again" button').toBeTruthy();
    const done = await allowAs(unescapeHtml(tryAgain!), 'harbour.cafe');
    expect(done.status, done.html).toBe(200);
    expect(done.html).toContain('Account reconnected');
    expect(done.html).toContain('@harbour.cafe is connected again');
    // Once used, the link no longer works.
    const used = await fetch(link);
    expect(used.status).toBe(410);
    expect(await used.text()).toContain('already used');

    const active = await run('npx feedmirror accounts list');
    expect(active.stdout).toMatch(new RegExp(`^${HARBOUR}\\t@harbour\\.cafe\\tactive`, 'm'));
    const posted = await run("npx feedmirror simulator post add 17841400000000002 --caption 'Open again from Monday!'");
    expect(posted.code, posted.stderr).toBe(0);
    const newPost = /added image post (\d+) to account/.exec(posted.stdout)?.[1];
    const resumed = await run('npx feedmirror sync 17841400000000002 --wait');
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    const harbourFeed = (await stage.feed(HARBOUR))!;
    expect(harbourFeed.demo).toBe(false);
    expect(harbourFeed.posts[0]!.id).toBe(newPost);
    expect(harbourFeed.posts[0]!.text).toBe('Open again from Monday!');
  }, 360_000);
});
