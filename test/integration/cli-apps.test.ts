import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createPool } from '../../src/store/db.ts';
import { getApp } from '../../src/store/apps.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { memoryIO } from '../support/memory-io.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';

/**
 * `feedmirror apps` and the bad input around it: an unknown app name, a duplicate app id, an app
 * removed while an account uses it, and a secret the platform refuses at first use (a clear line
 * naming the app, recorded against the app, never against the account's owner). Each account is
 * connected through its own app: `accounts list --json` names it.
 */
describe('feedmirror apps', () => {
  let sim: Simulator;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let pool: ReturnType<typeof createPool>;
  let env: NodeJS.ProcessEnv;
  const key = randomBytes(32).toString('base64');

  beforeAll(async () => {
    registerSecretForAudit(key);
    sim = await startSimulator();
    db = await freshDatabase('cli_apps');
    pool = createPool(db.url);
    const redis = redisForTest('cli-apps');
    env = {
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: redis.prefix,
      LOG_LEVEL: 'silent',
      TOKEN_ENCRYPTION_KEY: key,
      APP_ID: sim.appId,
      APP_SECRET: sim.appSecret,
      GRAPH_URL: sim.graphUrl,
      OAUTH_TOKEN_URL: sim.oauthTokenUrl,
      AUTHORIZE_URL: sim.authorizeUrl,
      STORAGE_URL: mkdtempSync(join(tmpdir(), 'fm-cli-apps-')),
    };
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
    await sim?.close();
  });

  const run = async (argv: string[], stdin?: string) => {
    const io = memoryIO({ env, ...(stdin !== undefined ? { stdin } : {}) });
    const code = await main(argv, io);
    return { code, out: io.out(), err: io.err() };
  };

  it('adds, lists and shows an app (never its secret); refuses a duplicate id, an unknown name, the default name', async () => {
    const acme = sim.addApp();
    registerSecretForAudit(acme.appSecret);
    const added = await run(['apps', 'add', 'acme', '--app-id', acme.appId, '--json'], `${acme.appSecret}\n`);
    expect(added.code, added.err).toBe(0);
    expect(JSON.parse(added.out)).toMatchObject({ name: 'acme', appId: acme.appId, accounts: 0, fault: null });

    const dup = await run(['apps', 'add', 'acme2', '--app-id', acme.appId], 'another-secret\n');
    expect(dup.code).toBe(2);
    expect(dup.err.trim()).toBe(`app id ${acme.appId} is already added as app acme`);
    const dupDefault = await run(['apps', 'add', 'acme3', '--app-id', sim.appId], 'another-secret\n');
    expect(dupDefault.code).toBe(2);
    expect(dupDefault.err).toContain("is already the default app's (APP_ID)");
    const reserved = await run(['apps', 'add', 'default', '--app-id', '123'], 'x\n');
    expect(reserved.code).toBe(2);

    const unknown = await run(['apps', 'show', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.err.trim()).toMatch(/^no app named nope \(apps: default, acme\)/);
    const invite = await run(['accounts', 'invite', '--app', 'nope']);
    expect(invite.code).toBe(2);
    expect(invite.err).toContain('no app named nope');

    const list = JSON.parse((await run(['apps', 'list', '--json'])).out) as { apps: Array<{ name: string }> };
    expect(list.apps.map((a) => a.name)).toEqual(['default', 'acme']);
    for (const r of [added, dup, unknown, invite]) expect(r.out + r.err).not.toContain(acme.appSecret);
  });

  it('an account connected through an app names it, and the app cannot be removed while it does', async () => {
    const acme = (await getApp(pool, 'acme'))!;
    const account = sim.createAccount({ username: 'acme.shop', posts: 0 });
    const token = sim.issueShortLivedToken(account.id, { appId: acme.appId });
    registerSecretForAudit(token);
    const add = await run(['accounts', 'add', '--app', 'acme', '--json'], token);
    expect(add.code, add.err).toBe(0);
    const listed = JSON.parse((await run(['accounts', 'list', '--json'])).out) as Array<{ id: string; app: string }>;
    expect(listed.find((a) => a.id === account.id)?.app).toBe('acme');

    const remove = await run(['apps', 'remove', 'acme']);
    expect(remove.code).toBe(2);
    expect(remove.err.trim()).toBe(
      `app acme is used by 1 account (${account.id} (@acme.shop)); remove or reconnect them first`,
    );
    // A token obtained by one app is not exchanged with another app's secret.
    const other = sim.createAccount({ username: 'not.acme', posts: 0 });
    const wrongApp = await run(['accounts', 'add', '--app', 'acme'], sim.issueShortLivedToken(other.id));
    expect(wrongApp.code).toBe(1);
  });

  it('a secret the platform refuses at first use: one line naming the app, recorded against the app', async () => {
    const beta = sim.addApp();
    const stale = randomBytes(16).toString('hex');
    registerSecretForAudit(stale);
    expect((await run(['apps', 'add', 'beta', '--app-id', beta.appId], stale)).code).toBe(0);
    const account = sim.createAccount({ username: 'beta.shop', posts: 0 });
    const r = await run(
      ['accounts', 'add', '--app', 'beta'],
      sim.issueShortLivedToken(account.id, { appId: beta.appId }),
    );
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      'the platform refuses the secret of app beta: give feedmirror its current secret with feedmirror apps set beta --secret-file <file>',
    );
    expect(r.err).not.toContain(stale);
    expect((await getApp(pool, 'beta'))!.fault).toMatchObject({ kind: 'app_secret_refused' });
    const shown = await run(['apps', 'show', 'beta']);
    expect(shown.out).toMatch(/fault \(app_secret_refused/);

    // The right secret: the fault is cleared and the account connects through beta.
    registerSecretForAudit(beta.appSecret);
    expect((await run(['apps', 'set', 'beta'], beta.appSecret)).code).toBe(0);
    expect((await getApp(pool, 'beta'))!.fault).toBeNull();
    const again = await run(
      ['accounts', 'add', '--app', 'beta'],
      sim.issueShortLivedToken(account.id, { appId: beta.appId }),
    );
    expect(again.code, again.err).toBe(0);
  });
});
