import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { resolve, join, relative } from 'node:path';
import { createServer } from 'node:net';
import { EXIT, type CliIO } from '../io.ts';
import { AppContext } from '../context.ts';
import { configSchema } from '../../config.ts';
import { DEMO_OTHER_ACCOUNTS, DEMO_OWNER, demoPosts } from '../../simulator/demo-content.ts';
import { startSimulatorWithState, SimulatorPortTakenError } from '../../simulator/state-file.ts';
import type { Simulator } from '../../simulator/types.ts';
import { followWallClock } from '../../simulator/wall-clock.ts';
import { feedKey } from '../../storage/keys.ts';
import { createQueue, QUEUE } from '../../../jobs/queues.ts';
import { startServer } from './server.ts';
import { createInvitation } from '../../store/invitations.ts';
import { recreateDatabase } from '../../store/db.ts';
import { invitationUrl } from '../../http/connect.ts';
import { DAY } from '../../util/clock.ts';
import { startWorkerFromContext } from './worker.ts';
import { createWidget } from '../../widgets/widgets.ts';

/**
 * `npm run demo`: the real thing on embedded defaults. The simulator plays the platform (on the
 * wall clock), local Redis and Postgres hold the queues and state (a demo database and key prefix
 * of their own, reset on every run), the local folder holds the copies and feeds, and emails go to
 * the outbox folder. A demo account is connected through the real OAuth flow (/connect, the
 * platform's login, /callback), synced, mirrored and published by the real worker; the dashboard
 * runs until Ctrl-C (`--exit` stops once the feed is published).
 */
export interface DemoOptions {
  port?: number;
  posts?: number;
  exit?: boolean;
  /** Any free ports for the simulator (stored for the next run) instead of the ones it kept. */
  newSimulatorPorts?: boolean;
}

/**
 * Settings the demo runs with beyond the embedded defaults: owners get their alerts (R-OWN-11), so
 * a revoked account's owner finds the email with the reconnect link in the demo's outbox; video
 * files are mirrored, so the demo's reels play from its own storage. The tour's journey
 * (test/journeys/tour.test.ts) sets its stage up with the same.
 */
export const DEMO_SETTINGS = { OWNER_ALERTS: 'on', MIRROR_VIDEOS: 'on' } as const;

/** The name of the widget the demo creates for its account (demo.html embeds it by id). */
export const DEMO_WIDGET_NAME = 'Demo Bakery';

/** The file under data/demo that survives a restart: the simulator's identity and ports. */
export const SIMULATOR_STATE_FILE = 'simulator.json';

export async function runDemo(values: DemoOptions, io: CliIO): Promise<number> {
  const say = (s: string) => io.stdout.write(`${s}\n`);
  const root = resolve(io.cwd, 'data', 'demo');
  mkdirSync(root, { recursive: true });
  // The simulator keeps its app id, secrets and ports across runs (R-SIM-2): a restarted demo keeps
  // its addresses, MEDIA_ALLOWED_HOSTS and the links saved from the last run.
  let sim: Simulator;
  try {
    ({ sim } = await startSimulatorWithState(join(root, SIMULATOR_STATE_FILE), {
      start: Date.now(),
      newPorts: values.newSimulatorPorts ?? false,
    }));
  } catch (err) {
    if (!(err instanceof SimulatorPortTakenError)) throw err;
    io.stderr.write(`feedmirror demo-run: ${err.message} (npm run demo -- --new-simulator-ports)\n`);
    return EXIT.failed;
  }
  // Everything else of the last run goes: the demo starts afresh.
  for (const entry of readdirSync(root))
    if (entry !== SIMULATOR_STATE_FILE) rmSync(join(root, entry), { recursive: true, force: true });

  // The demo's own database and key prefix, named after this checkout: they never collide with
  // the tests' (fm_*, fmtest:*) nor with a demo run from another checkout.
  const demoId = createHash('sha256').update(realpathSync(io.cwd)).digest('hex').slice(0, 8);
  const stopClock = followWallClock(sim);
  const port = await freePort(values.port ?? 8080);
  const publicUrl = `http://127.0.0.1:${port}`;
  // The server's maintenance database on the same server (DATABASE_URL may name the demo's own
  // database when demo.env is loaded in this shell: it cannot drop the database it is connected to).
  const admin = new URL(io.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  admin.pathname = '/postgres';
  const databaseUrl = await resetDemoDatabase(admin.toString(), `feedmirror_demo_${demoId}`);
  const password = randomBytes(9).toString('base64url');
  const env: NodeJS.ProcessEnv = {
    ...io.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: io.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `feedmirror-demo-${demoId}`,
    GRAPH_URL: sim.graphUrl,
    AUTHORIZE_URL: sim.authorizeUrl,
    OAUTH_TOKEN_URL: sim.oauthTokenUrl,
    APP_ID: sim.appId,
    APP_SECRET: sim.appSecret,
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    STORAGE_URL: join(root, 'storage'),
    OUTBOX_DIR: join(root, 'outbox'),
    MEDIA_ALLOWED_HOSTS: sim.imageHost,
    // serve maps storage keys onto /media, /widget and /feeds: feeds then carry http image URLs.
    MEDIA_PUBLIC_URL: `${publicUrl}/`,
    PUBLIC_URL: publicUrl,
    HOST: '127.0.0.1',
    PORT: String(port),
    DASHBOARD_USER: 'demo',
    DASHBOARD_PASSWORD: password,
    ...DEMO_SETTINGS,
    // The terminal is for the addresses below; what a sync skipped is on the dashboard (LOG_LEVEL=info for details).
    LOG_LEVEL: io.env.LOG_LEVEL || 'error',
  };
  delete env.SMTP_URL;
  // Its terminal is a person's: human lines there, as for any command (../log-setup.ts).
  const ctx = new AppContext(env, { logTo: { role: 'command', log: io.log } });
  // Start from empty queues: the demo's own prefix, emptied on every run.
  for (const name of Object.values(QUEUE)) {
    const q = createQueue(name, ctx.redis);
    await q.obliterate({ force: true });
    await q.close();
  }
  const worker = await startWorkerFromContext(ctx);
  const server = await startServer(ctx);
  try {
    say(`platform simulator: ${sim.url} (the platform's login and API), images at ${sim.imageBaseUrl}`);
    const now = sim.clock.now().getTime();
    const account = sim.createAccount({
      username: 'demo.bakery',
      name: 'Demo Bakery',
      posts: demoPosts(values.posts ?? 24, now),
      // Its pictures (and those of posts added later with `simulator post add`) are photographs.
      photos: true,
    });
    // Other accounts the same owner could connect: the consent page lists them all.
    DEMO_OTHER_ACCOUNTS.forEach((a, i) =>
      sim.createAccount({ ...a, posts: demoPosts(6, now, 3 * (i + 1)), photos: true }),
    );
    // The owner's side of the OAuth flow, as a browser would follow it.
    sim.autoApprove = account.id;
    // /connect is closed to anonymous visitors: the demo invites its owner, as an operator would,
    // with their address (R-OWN-10: the account gets its owner, who is told when it needs them).
    const invitation = await createInvitation(await ctx.migratedDb(), ctx.clock.now(), DAY, 'cli', DEMO_OWNER);
    const toLogin = await fetch(invitationUrl(publicUrl, invitation.token), { redirect: 'manual' });
    const toCallback = await fetch(toLogin.headers.get('location') ?? '', { redirect: 'manual' });
    const done = await fetch(toCallback.headers.get('location') ?? '');
    if (done.status !== 200) throw new Error(`connecting the demo account failed: HTTP ${done.status}`);
    // Only this first connect is approved automatically: "Connect an account" in the dashboard then
    // goes through the platform's consent page, as it would for a real owner.
    sim.autoApprove = null;
    say(
      `connected @${account.username} through an invitation (${publicUrl}/connect?invite=…), owner ${DEMO_OWNER.email}`,
    );

    const key = feedKey(account.id);
    const deadline = Date.now() + 120_000;
    let posts = 0;
    for (;;) {
      const obj = await ctx.storage.get(key);
      const feed = obj ? (JSON.parse(obj.body.toString('utf8')) as { demo: boolean; posts: unknown[] }) : undefined;
      if (feed && !feed.demo) {
        posts = feed.posts.length;
        break;
      }
      if (Date.now() > deadline)
        throw new Error('the demo feed was not published within 2 minutes; run with LOG_LEVEL=info to see why');
      await new Promise((r) => setTimeout(r, 250));
    }
    const feedPath = join(env.STORAGE_URL as string, key);
    // The account's widget, made as `feedmirror widgets add` makes it (published as widgets/<id>.json
    // and .html, republished by every sync), and a plain page embedding it by id as a site would.
    const { widget } = await createWidget(ctx.widgetDeps, { name: DEMO_WIDGET_NAME, accounts: [account.id] });
    const snippet = widget.embed;
    await ctx.storage.put(
      'widget/demo.html',
      Buffer.from(
        `<!doctype html>\n<meta charset="utf-8">\n<title>feedmirror widget demo</title>\n<h1>A site embedding the mirrored feed</h1>\n${snippet}\n`,
      ),
      {
        contentType: 'text/html; charset=utf-8',
        cacheControl: 'no-cache',
      },
    );
    say(`synced, mirrored and published ${posts} posts`);
    say('');
    say(`dashboard:       ${server.dashboardUrl}   (user: demo, password: ${password})`);
    say(`feed:            ${feedPath}`);
    say(`feed over HTTP:  ${publicUrl}/feeds/${account.id}.json`);
    say(`feed preview:    ${server.dashboardUrl}/accounts/${account.id}/preview   (in the dashboard)`);
    say(`widget:          ${widget.id}   (feedmirror widgets show ${widget.id})`);
    say(`widget document: ${widget.documentUrl}`);
    say(`widget preview:  ${publicUrl}/widget/demo.html   (a plain page embedding the widget by id, as a site would)`);
    say(`alert emails:    ${env.OUTBOX_DIR}   (the operator's, and with OWNER_ALERTS=on the owners')`);
    say(`validate it:     npx feedmirror validate ${feedPath}`);
    // Commands run by hand show warnings (the demo's own terminal shows errors only).
    const envFile = writeDemoEnv(
      join(root, 'demo.env'),
      { ...env, LOG_LEVEL: io.env.LOG_LEVEL || 'warn' },
      { SIMULATOR_URL: sim.url, SIMULATOR_CONTROL_SECRET: sim.controlSecret },
      { DEMO_WIDGET_ID: widget.id },
    );
    say(`demo settings:   ${envFile}   (every setting of this demo, its encryption key included)`);
    say(`try the CLI:     set -a; . ${relative(io.cwd, envFile) || envFile}; set +a; npx feedmirror accounts list`);
    say(
      `drive the platform: npx feedmirror simulator accounts   (then simulator post add|edit|delete, revoke, expire-token, rate-limit)`,
    );
    if (values.exit) return EXIT.ok;
    say('\nrunning; press Ctrl-C to stop');
    await new Promise<void>((r) => {
      process.once('SIGINT', () => r());
      process.once('SIGTERM', () => r());
    });
    return EXIT.ok;
  } finally {
    await server.close();
    await worker.close();
    await ctx.close();
    stopClock();
    await sim.close();
  }
}

/** The demo database, dropped and created afresh (it holds nothing but demo data). */
function resetDemoDatabase(adminUrl: string, name: string): Promise<string> {
  return recreateDatabase(adminUrl, name);
}

/**
 * data/demo/demo.env: every feedmirror setting this demo runs with, its encryption key and
 * dashboard password included (demo data only, mode 600), in the format of .env.example, so
 * `set -a; . data/demo/demo.env; set +a` points every CLI command at the running demo.
 */
function writeDemoEnv(
  file: string,
  env: NodeJS.ProcessEnv,
  simulator: Record<string, string>,
  demo: Record<string, string>,
): string {
  const keys = Object.keys(configSchema.shape).filter((k) => env[k] !== undefined && env[k] !== '');
  const quote = (v: string) => (/^[A-Za-z0-9_@%+=:,./-]*$/.test(v) ? v : `"${v.replace(/(["\\$`])/g, '\\$1')}"`);
  const lines = [
    '# Written by `npm run demo` for this run of the demo (its database and keys are reset on the next run).',
    '# Load it to point the CLI at the running demo: set -a; . data/demo/demo.env; set +a',
    ...keys.map((k) => `${k}=${quote(String(env[k]))}`),
    '# The platform simulator of this demo: `feedmirror simulator …` reaches it with these (not feedmirror settings).',
    ...Object.entries(simulator).map(([k, v]) => `${k}=${quote(v)}`),
    "# What the demo made, for the tour's commands: its widget's id.",
    ...Object.entries(demo).map(([k, v]) => `${k}=${quote(v)}`),
    '',
  ];
  writeFileSync(file, lines.join('\n'), { mode: 0o600 });
  return file;
}

/** `preferred` when free, else any free port. */
async function freePort(preferred: number): Promise<number> {
  const tryPort = (p: number) =>
    new Promise<number | null>((resolvePort) => {
      const s = createServer();
      s.once('error', () => resolvePort(null));
      s.listen(p, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolvePort(port));
      });
    });
  return (await tryPort(preferred)) ?? ((await tryPort(0)) as number);
}
