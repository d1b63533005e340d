import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSecretForAudit } from '../support/capture.ts';
import { openStage, type Stage } from './stage.ts';

/**
 * README "Connecting an account", from the command line, while a worker runs: `feedmirror
 * accounts add --json < token.txt`. The account's row and token are committed before its jobs
 * exist, so the first sync and the first refresh check find it: the feed is published within
 * seconds, not at the account's slot in the hour, and the worker never logs that it found no
 * account or no token.
 */
describe('journey: connect from the CLI while a worker runs', () => {
  let stage: Stage;
  beforeAll(async () => {
    stage = await openStage('connectcli');
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('the first sync publishes the feed within seconds; the worker never misses the account or its token', async () => {
    const worker = await stage.startWorker();
    // Several accounts in a row: the old order (schedules first, the row after) lost the first
    // sync whenever the worker was quicker than the commit.
    const accounts: Array<{ id: string; username: string }> = [];
    const added: Array<{ stdout: string; stderr: string }> = [];
    for (let i = 0; i < 3; i++) {
      const acc = stage.sim.createAccount({ username: `cli.shop${i}.${randomBytes(2).toString('hex')}`, posts: 4 });
      const token = stage.sim.issueShortLivedToken(acc.id);
      registerSecretForAudit(token);
      const add = await stage.cli(['accounts', 'add', '--json'], { stdin: token });
      expect(add.code, add.stderr).toBe(0);
      added.push(add);
      accounts.push(acc);
    }
    // Within seconds (the wall clock: the stage's clock does not move), far from any hourly slot.
    for (const acc of accounts)
      await stage.until(
        async () => (await stage.feed(acc.id))?.demo === false,
        `the first real feed of @${acc.username}`,
        30_000,
      );
    for (const acc of accounts) expect((await stage.feed(acc.id))!.posts).toHaveLength(4);
    for (const [i, add] of added.entries()) {
      const printed = JSON.parse(add.stdout) as { id: string; username: string; expiresAt: string; scheduled: boolean };
      expect(printed).toMatchObject({ id: accounts[i]!.id, username: accounts[i]!.username, scheduled: true });
      // One "account connected" line, from none (a new account) to active.
      const connected = add.stderr.split('\n').filter((l) => l.includes('"msg":"account connected"'));
      expect(connected, add.stderr).toHaveLength(1);
      expect(connected[0]).toContain('"from":"none"');
    }
    const log = worker.output();
    expect(log).not.toMatch(/account not found/);
    expect(log).not.toMatch(/no token stored/);
    const list = await stage.cli(['accounts', 'list', '--json']);
    const rows = JSON.parse(list.stdout) as Array<{ id: string; lastSync: string; health: { verdict: string } }>;
    for (const acc of accounts) {
      const row = rows.find((r) => r.id === acc.id);
      expect(row?.lastSync).toBe('complete');
      expect(row?.health.verdict, JSON.stringify(row?.health)).toBe('ok');
    }
  }, 120_000);
});
