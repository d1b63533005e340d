import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keyFingerprint } from '../../src/store/crypto.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { useStage, type Stage, type StageProcess } from './stage.ts';

/**
 * README (docs/accounts.md) "Rotating the encryption key", exactly as written, from the .env that
 * `feedmirror init` writes (a bare key): set `TOKEN_ENCRYPTION_KEY=new:<key>,old:<key>`, restart,
 * `feedmirror keys rotate`, drop the old key. The worker keeps syncing at every step, `keys list`
 * shows which key opens what, and `doctor` ends ready (R-KEY-1, R-KEY-2). A platform app's secret
 * (`feedmirror apps add`) is sealed with the same key and re-encrypted by the same rotation.
 */
describe('journey: the key rotation recipe', () => {
  let stage: Stage;
  useStage('keyrotation', (s) => (stage = s));

  /** A new post on the platform, a sync asked for, and the post in the published feed. */
  async function syncsWith(worker: StageProcess, accountId: string, caption: string, env: Record<string, string>) {
    const count = (await stage.feed(accountId))!.posts.length;
    stage.sim.addPost(accountId, { kind: 'image', caption });
    const sync = await stage.cli(['sync', accountId], { env });
    expect(sync.code, sync.stderr).toBe(0);
    await stage
      .until(
        async () => (await stage.feed(accountId))?.posts.length === count + 1,
        `the post "${caption}" in the feed`,
        30_000,
      )
      .catch((err: Error) => {
        throw new Error(`${err.message}\n${worker.output().slice(-3000)}`);
      });
    expect(worker.output()).not.toMatch(/does not contain|cannot decrypt/);
  }

  it('the worker keeps syncing, keys rotate re-encrypts, the old key is dropped, doctor is ready', async () => {
    const oldKey = stage.env.TOKEN_ENCRYPTION_KEY!;
    expect(oldKey).not.toContain(':'); // init writes a bare key
    const oldId = keyFingerprint(Buffer.from(oldKey, 'base64'));
    const newKey = randomBytes(32).toString('base64');
    registerSecretForAudit(newKey);
    const newId = keyFingerprint(Buffer.from(newKey, 'base64'));

    let worker = await stage.startWorker();
    const { id, add } = await stage.connect({ posts: 3 });
    expect(add.code, add.stderr).toBe(0);
    await stage.until(async () => (await stage.feed(id))?.demo === false, 'the first feed', 30_000);
    const appSecret = randomBytes(16).toString('hex');
    registerSecretForAudit(appSecret);
    const app = await stage.cli(['apps', 'add', 'acme', '--app-id', '7770001'], { stdin: `${appSecret}\n` });
    expect(app.code, app.stderr).toBe(0);

    // 1. The recipe's value, and a restart.
    const both = { TOKEN_ENCRYPTION_KEY: `new:${newKey},old:${oldKey}` };
    await worker.stop();
    worker = await stage.startWorker({ env: both });
    await syncsWith(worker, id, 'during the rotation', both);
    const before = await stage.cli(['keys', 'list'], { env: both });
    expect(before.code, before.stderr).toBe(0);
    expect(before.stdout).toMatch(new RegExp(`^${newId}\\s+new\\s+yes \\(primary\\)\\s+0\\s+0\\s+0$`, 'm'));
    expect(before.stdout).toMatch(new RegExp(`^${oldId}\\s+old\\s+no\\s+1\\s+0\\s+1$`, 'm'));

    // 2. keys rotate.
    const rotate = await stage.cli(['keys', 'rotate'], { env: both });
    expect(rotate.code, rotate.stderr).toBe(0);
    expect(rotate.stdout).toContain(
      `re-encrypted 1 tokens, 0 webhook secrets and 1 app secrets with key ${newId} (new)`,
    );
    const after = await stage.cli(['keys', 'list'], { env: both });
    expect(after.stdout).toMatch(new RegExp(`^${oldId}\\s+old\\s+no\\s+0\\s+0\\s+0$`, 'm'));
    expect(after.stdout).toMatch(new RegExp(`^${newId}\\s+new\\s+yes \\(primary\\)\\s+1\\s+0\\s+1$`, 'm'));
    await syncsWith(worker, id, 'after keys rotate', both);

    // 3. The old key dropped, a restart: still syncing, and doctor is ready.
    const only = { TOKEN_ENCRYPTION_KEY: `new:${newKey}` };
    await worker.stop();
    worker = await stage.startWorker({ env: only });
    await syncsWith(worker, id, 'with the new key alone', only);
    const doctor = await stage.cli(['doctor'], { env: only });
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(doctor.stdout).toContain(`ok    stored secrets decrypt: all 2 decrypt with the primary key ${newId} (new)`);
    expect(doctor.stdout.trimEnd().split('\n').at(-1)).toMatch(/^ready/);

    // Had the old key been dropped before the rotation, doctor would have named the key it needs.
    const wrong = await stage.cli(['doctor'], { env: { TOKEN_ENCRYPTION_KEY: oldKey } });
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain(`FAIL  stored secrets decrypt: 2 of 2 cannot be decrypted`);
    expect(wrong.stdout).toContain(`key ${newId}`);
    for (const out of [app, before, rotate, after, doctor, wrong]) {
      expect(out.stdout + out.stderr).not.toContain(oldKey);
      expect(out.stdout + out.stderr).not.toContain(newKey);
      expect(out.stdout + out.stderr).not.toContain(appSecret);
    }
  }, 180_000);
});
