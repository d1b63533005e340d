import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { closedPort } from '../support/closed-port.ts';
import { runCli } from '../support/cli.ts';

/**
 * `feedmirror simulator post add|edit|delete`, `revoke`, `expire-token`, `rate-limit`, `accounts`
 * against a running simulator found as the demo leaves it (data/demo/demo.env in the folder the
 * command runs from), or named with --simulator; with none running, one line and exit 3.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are navigated freely in assertions
type Json = Record<string, any>;

describe('feedmirror simulator verbs', () => {
  let sim: Simulator;
  let dir: string;
  let empty: string;
  let accountId: string;
  const run = (args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
    runCli(args, opts.env ?? {}, { cwd: opts.cwd ?? dir });

  beforeAll(async () => {
    sim = await startSimulator({ start: Date.UTC(2026, 3, 1) });
    accountId = sim.createAccount({ username: 'verbs.bakery', name: 'Verbs Bakery', posts: 3 }).id;
    dir = mkdtempSync(join(tmpdir(), 'fm-simverbs-'));
    empty = mkdtempSync(join(tmpdir(), 'fm-simverbs-none-'));
    mkdirSync(join(dir, 'data', 'demo'), { recursive: true });
    // As the demo writes it (other settings elided).
    writeFileSync(
      join(dir, 'data', 'demo', 'demo.env'),
      `APP_ID=${sim.appId}\n# The platform simulator of this demo\nSIMULATOR_URL=${sim.url}\nSIMULATOR_CONTROL_SECRET="${sim.controlSecret}"\n`,
      { mode: 0o600 },
    );
  });
  afterAll(async () => {
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(empty, { recursive: true, force: true });
  });

  it('accounts lists the accounts and their post ids, newest first; --json as data', async () => {
    const human = await run(['simulator', 'accounts']);
    expect(human.code, human.err).toBe(0);
    expect(human.out).toContain(`${accountId}  @verbs.bakery  Verbs Bakery  (3 posts`);
    for (const p of sim.posts(accountId)) expect(human.out).toContain(p.id);
    const json = await run(['simulator', 'accounts', '--json']);
    expect(json.code).toBe(0);
    const accounts = JSON.parse(json.out) as Json[];
    expect(accounts.find((a) => a.id === accountId)?.posts.map((p: Json) => p.id)).toEqual(
      sim.posts(accountId).map((p) => p.id),
    );
    expect(json.err).toBe('');
  });

  it('post add, edit and delete change the platform and say what they did', async () => {
    const added = await run(['simulator', 'post', 'add', accountId, '--caption', 'Rye is back #bread']);
    expect(added.code, added.err).toBe(0);
    const id = /added image post (\d+) to account/.exec(added.out)?.[1];
    expect(id).toBeTruthy();
    expect(added.out).toContain(`npx feedmirror sync ${accountId} --wait`);
    expect(sim.posts(accountId)[0]).toMatchObject({ id, kind: 'image', caption: 'Rye is back #bread' });

    const carousel = await run(['simulator', 'post', 'add', accountId, '--type', 'carousel', '--json']);
    expect(carousel.code).toBe(0);
    const c = JSON.parse(carousel.out) as Json;
    expect(c).toMatchObject({ accountId, type: 'carousel' });
    expect(c.caption).toMatch(/#/);
    const video = await run(['simulator', 'post', 'add', accountId, '--type', 'video', '--json']);
    expect(JSON.parse(video.out).type).toBe('video');

    const edited = await run(['simulator', 'post', 'edit', accountId, id!, '--caption', 'Sold out, thank you!']);
    expect(edited.code, edited.err).toBe(0);
    expect(edited.out).toContain('"Sold out, thank you!"');
    expect(sim.posts(accountId).find((p) => p.id === id)?.caption).toBe('Sold out, thank you!');

    const deleted = await run(['simulator', 'post', 'delete', accountId, id!]);
    expect(deleted.code, deleted.err).toBe(0);
    expect(deleted.out).toMatch(/deleted post \d+ .*the next sync prunes it/);
    expect(sim.posts(accountId).some((p) => p.id === id)).toBe(false);
    const again = await run(['simulator', 'post', 'delete', accountId, id!]);
    expect(again.code).toBe(1);
    expect(again.err).toBe(`account ${accountId} has no post ${id}\n`);
    const noCaption = await run(['simulator', 'post', 'edit', accountId, id!]);
    expect(noCaption.code).toBe(2);
    expect(noCaption.err).toMatch(/--caption/);
  });

  it('revoke, expire-token and rate-limit act on the platform', async () => {
    const me = async (t: string) => (await (await fetch(`${sim.graphUrl}/v25.0/me?access_token=${t}`)).json()) as Json;
    const t1 = sim.issueLongLivedToken(accountId);
    const expired = await run(['simulator', 'expire-token', accountId]);
    expect(expired.code, expired.err).toBe(0);
    expect(expired.out).toMatch(/expired 1 token of account/);
    expect((await me(t1)).error.error_subcode).toBe(463);

    const t2 = sim.issueLongLivedToken(accountId);
    const revoked = await run(['simulator', 'revoke', accountId, '--json']);
    expect(JSON.parse(revoked.out)).toEqual({ accountId, revoked: true });
    expect((await me(t2)).error.error_subcode).toBe(467);

    const t3 = sim.issueLongLivedToken(accountId);
    const limited = await run(['simulator', 'rate-limit', '--seconds', '90']);
    expect(limited.code, limited.err).toBe(0);
    expect(limited.out).toMatch(/code 4\) until 20\d\d-/);
    expect((await me(t3)).error.code).toBe(4);
    expect((await run(['simulator', 'rate-limit', '--seconds', '0'])).out).toMatch(/window is over/);
    expect((await me(t3)).id).toBe(accountId);
    expect((await run(['simulator', 'rate-limit'])).code).toBe(2);
  });

  it('--simulator names the address; the secret comes from the environment', async () => {
    const r = await run(['simulator', 'accounts', '--simulator', sim.url], {
      cwd: empty,
      env: { SIMULATOR_CONTROL_SECRET: sim.controlSecret },
    });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('@verbs.bakery');
  });

  it('with no simulator running, every verb is one line and exit 3; a wrong secret or account is one line and exit 1', async () => {
    const port = await closedPort();
    const verbs = [
      ['simulator', 'accounts'],
      ['simulator', 'post', 'add', accountId],
      ['simulator', 'post', 'edit', accountId, '1', '--caption', 'x'],
      ['simulator', 'post', 'delete', accountId, '1'],
      ['simulator', 'revoke', accountId],
      ['simulator', 'expire-token', accountId],
      ['simulator', 'rate-limit', '--seconds', '5'],
    ];
    for (const args of verbs) {
      const none = await run(args, { cwd: empty });
      expect(none.code, args.join(' ')).toBe(3);
      expect(none.err).toMatch(/^no simulator running here: start the demo \(npm run demo\).*--simulator <url>\n$/);
      expect(none.out).toBe('');
      const gone = await run([...args, '--simulator', `http://127.0.0.1:${port}`], {
        cwd: empty,
        env: { SIMULATOR_CONTROL_SECRET: 'whatever-secret' },
      });
      expect(gone.code, args.join(' ')).toBe(3);
      expect(gone.err).toMatch(/^no simulator answers at http:\/\/127\.0\.0\.1:\d+: is the demo running/);
      expect(gone.err.trim().split('\n')).toHaveLength(1);
    }
    const json = await run(['simulator', 'accounts', '--json'], { cwd: empty });
    expect(json.code).toBe(3);
    expect(JSON.parse(json.out).error.kind).toBe('unavailable');

    const wrong = await run(['simulator', 'accounts'], { env: { SIMULATOR_CONTROL_SECRET: 'not-the-secret' } });
    expect(wrong.code).toBe(1);
    expect(wrong.err).toMatch(/^the simulator at http:\/\/127\.0\.0\.1:\d+ refused the control secret/);
    const unknown = await run(['simulator', 'revoke', '12345', '--json']);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.out).error).toEqual({ kind: 'not_found', message: 'the simulator has no account 12345' });
  });
});
