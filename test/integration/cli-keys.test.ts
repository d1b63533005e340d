import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenCipher, keyFingerprint } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { loadToken, saveToken } from '../../src/store/tokens.ts';
import { createEndpoint, signingSecrets } from '../../src/store/webhooks.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { runCli } from '../support/cli.ts';

/**
 * `feedmirror keys list|rotate` on the README's rotation recipe, from the bare key `feedmirror init`
 * writes: every key is shown by its id (derived from the key: R-KEY-1) with what it encrypts, the
 * same key keeps its id under a label, and a secret no key opens makes `keys list` exit 1 (R-KEY-2).
 */
describe('feedmirror keys', () => {
  const oldKey = randomBytes(32).toString('base64');
  const newKey = randomBytes(32).toString('base64');
  const oldId = keyFingerprint(Buffer.from(oldKey, 'base64'));
  const newId = keyFingerprint(Buffer.from(newKey, 'base64'));
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let pool: ReturnType<typeof createPool>;
  let env: NodeJS.ProcessEnv;
  let endpointId: string;

  beforeAll(async () => {
    registerSecretForAudit(oldKey);
    registerSecretForAudit(newKey);
    db = await freshDatabase('cli_keys');
    pool = createPool(db.url);
    await migrate(pool);
    const redis = redisForTest('cli-keys');
    env = { DATABASE_URL: db.url, REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix, LOG_LEVEL: 'silent' };
    const bare = TokenCipher.fromEnv(oldKey);
    const at = new Date();
    for (const id of ['acct-a', 'acct-b']) {
      await upsertAccount(pool, { id, username: id }, at);
      await saveToken(
        pool,
        bare,
        { accountId: id, accessToken: `token-${id}`, obtainedAt: at, expiresAt: new Date(+at + 50 * 86_400_000) },
        'imported',
      );
    }
    endpointId = (
      await createEndpoint(pool, bare, { url: 'https://hooks.example.test/x', events: ['feed.updated'], at })
    ).endpoint.id;
  });

  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  const run = (argv: string[], key: string) => runCli(argv, { ...env, TOKEN_ENCRYPTION_KEY: key });

  it('the recipe as written: bare key, then new:<key>,old:<key>, keys rotate, the old key dropped', async () => {
    const first = await run(['keys', 'list', '--json'], oldKey);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.out)).toMatchObject({
      keys: [{ id: oldId, label: null, primary: true, tokens: 2, webhookSecrets: 1 }],
      unopened: [],
      total: 3,
    });

    const both = `new:${newKey},old:${oldKey}`;
    const listed = await run(['keys', 'list'], both);
    expect(listed.code).toBe(0);
    const lines = listed.out.split('\n');
    expect(lines[0]).toMatch(/^key\s+label\s+encrypts\s+tokens\s+webhook secrets\s+app secrets$/);
    expect(lines[1]).toMatch(new RegExp(`^${newId}\\s+new\\s+yes \\(primary\\)\\s+0\\s+0\\s+0$`));
    expect(lines[2]).toMatch(new RegExp(`^${oldId}\\s+old\\s+no\\s+2\\s+1\\s+0$`));
    expect(listed.out).toContain(`secrets remain under ${oldId} (old): run \`feedmirror keys rotate\``);
    // A worker on the recipe's value still reads every secret.
    const cipher = TokenCipher.fromEnv(both);
    expect((await loadToken(pool, cipher, 'acct-a'))!.accessToken).toBe('token-acct-a');

    const rotated = await run(['keys', 'rotate'], both);
    expect(rotated.code).toBe(0);
    expect(rotated.out).toContain(`re-encrypted 2 tokens, 1 webhook secrets and 0 app secrets with key ${newId} (new)`);
    expect(JSON.parse((await run(['keys', 'list', '--json'], both)).out)).toMatchObject({
      keys: [
        { id: newId, tokens: 2, webhookSecrets: 1 },
        { id: oldId, tokens: 0, webhookSecrets: 0 },
      ],
    });

    // The old key dropped, the new one written bare or labelled: the same key, the same id.
    for (const value of [`new:${newKey}`, newKey]) {
      const only = TokenCipher.fromEnv(value);
      expect((await loadToken(pool, only, 'acct-b'))!.accessToken).toBe('token-acct-b');
      expect((await signingSecrets(pool, only, endpointId, new Date()))!.current).toMatch(/^whsec_/);
      expect((await run(['keys', 'list'], value)).code).toBe(0);
    }
    for (const r of [first, listed, rotated]) {
      expect(r.out + r.err).not.toContain(oldKey);
      expect(r.out + r.err).not.toContain(newKey);
    }
  });

  it('a secret no key opens: keys list names it and its key id, and exits 1', async () => {
    const stranger = randomBytes(32).toString('hex');
    registerSecretForAudit(stranger);
    const r = await run(['keys', 'list'], stranger);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`no key opens the token of account acct-a (it records key ${newId})`);
    expect(r.out).toContain(`no key opens the signing secret of webhook endpoint ${endpointId}`);
    expect(r.err).toMatch(
      new RegExp(`^3 stored secrets are opened by no key of TOKEN_ENCRYPTION_KEY \\(key ${newId}\\)`),
    );
  });
});
