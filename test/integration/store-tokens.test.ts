import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eachAccount,
  getAccount,
  listAccounts,
  markSynced,
  removeAccount,
  setAccountStatus,
  setRefusedFields,
  upsertAccount,
} from '../../src/store/accounts.ts';
import { forgetAlert, recordAlertOnce } from '../../src/store/alerts-sent.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool, withTransaction } from '../../src/store/db.ts';
import { TokenDecryptError } from '../../src/store/errors.ts';
import { listEvents } from '../support/events.ts';
import { consumeLoginState, createLoginState, takeLoginState } from '../../src/store/login-states.ts';
import { migrate } from '../../src/store/migrate.ts';
import {
  getTokenInfo,
  loadToken,
  recordRefreshFailure,
  replaceTokenIfCurrent,
  rotateKeys,
  saveToken,
} from '../../src/store/tokens.ts';
import { DAY, MINUTE } from '../../src/util/clock.ts';
import { freshDatabase } from '../support/services.ts';

const keyOld = randomBytes(32).toString('base64');
const keyNew = randomBytes(32).toString('hex');
const cipher = TokenCipher.fromEnv(`k1:${keyOld}`);
const t0 = new Date(Date.UTC(2026, 0, 1));
const later = (ms: number) => new Date(t0.getTime() + ms);

let pool: pg.Pool;
let url: string;
let drop: () => Promise<void>;
let seq = 0;

beforeAll(async () => {
  ({ url, drop } = await freshDatabase('storetokens'));
  pool = createPool(url);
  await migrate(pool);
});
afterAll(async () => {
  await pool.end();
  await drop();
});

async function newAccount(): Promise<string> {
  const id = `1784${Date.now()}${++seq}`;
  await upsertAccount(pool, { id, username: `user${seq}`, displayName: 'User', accountType: 'BUSINESS' }, t0);
  return id;
}

describe('accounts', () => {
  it('upserts, lists with expiry and days left, and keeps untouched fields on reconnect', async () => {
    const id = await newAccount();
    await upsertAccount(pool, { id, username: 'renamed' }, later(MINUTE));
    const a = await getAccount(pool, id);
    expect(a).toMatchObject({
      id,
      username: 'renamed',
      displayName: 'User',
      accountType: 'BUSINESS',
      status: 'active',
      refusedFields: [],
    });
    await saveToken(
      pool,
      cipher,
      { accountId: id, accessToken: 'tok-A', obtainedAt: t0, expiresAt: later(60 * DAY) },
      'exchanged',
    );
    const listed = (await listAccounts(pool, later(10.5 * DAY))).find((x) => x.id === id)!;
    expect(listed.expiresAt?.toISOString()).toBe(later(60 * DAY).toISOString());
    expect(listed.daysLeft).toBe(49);
    expect(listed.hasToken).toBe(true);
    expect(JSON.stringify(listed)).not.toContain('tok-A');
  });

  it('eachAccount visits every account once, a page at a time, as listAccounts gives them', async () => {
    const ids = [await newAccount(), await newAccount(), await newAccount(), await newAccount(), await newAccount()];
    for (const id of ids.slice(0, 3))
      await saveToken(
        pool,
        cipher,
        { accountId: id, accessToken: 'tok', obtainedAt: t0, expiresAt: later(60 * DAY) },
        'exchanged',
      );
    const now = later(DAY);
    const all = await listAccounts(pool, now);
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);

    // Pages of 2 over at least 5 accounts: page boundaries fall inside the list, and the last
    // page may be short or empty.
    const paged = [];
    for await (const a of eachAccount(pool, now, { pageSize: 2 })) paged.push(a);
    expect(paged.map((a) => a.id)).toEqual(all.map((a) => a.id).sort());
    expect(paged).toEqual([...all].sort(byId));

    const withToken = [];
    for await (const a of eachAccount(pool, now, { withTokenOnly: true, pageSize: 2 })) withToken.push(a.id);
    expect(withToken).toEqual(expect.arrayContaining(ids.slice(0, 3)));
    expect(withToken).not.toContain(ids[3]);
    expect(withToken).toEqual((await listAccounts(pool, now, { withTokenOnly: true })).map((a) => a.id).sort());

    // An account removed while the sweep is between pages is simply not visited; none repeats.
    // The last of ours in id order has four of ours before it, so it is past the first page.
    const removed = [...ids].sort().at(-1)!;
    const seen: string[] = [];
    for await (const a of eachAccount(pool, now, { pageSize: 2 })) {
      seen.push(a.id);
      if (seen.length === 1) await removeAccount(pool, removed, now);
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).not.toContain(removed);
    expect(seen).toHaveLength(all.length - 1);
  });

  it('status transitions with `from` happen once and record an event', async () => {
    const id = await newAccount();
    const results = await Promise.all(
      [1, 2, 3].map(() =>
        setAccountStatus(pool, id, 'reauth_required', 'the account password was changed', { at: t0, from: 'active' }),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect((await getAccount(pool, id))!).toMatchObject({
      status: 'reauth_required',
      statusReason: 'the account password was changed',
    });
    expect((await listEvents(pool, id)).map((e) => e.kind)).toEqual(['reauth_required']);
  });

  it('refused fields, sync marks (redacted), and removal that cascades but keeps history', async () => {
    const id = await newAccount();
    await setRefusedFields(pool, id, ['media_product_type', 'caption', 'caption'], t0);
    await markSynced(pool, id, t0, {
      error: 'GET https://graph.example.com/me/media?access_token=SECRET123 failed',
      errorKind: 'network',
    });
    const a = (await getAccount(pool, id))!;
    expect(a.refusedFields).toEqual(['caption', 'media_product_type']);
    expect(a.lastSyncError).not.toContain('SECRET123');
    await saveToken(
      pool,
      cipher,
      { accountId: id, accessToken: 'tok-R', obtainedAt: t0, expiresAt: later(60 * DAY) },
      'imported',
    );
    expect(await removeAccount(pool, id, later(DAY))).toBe(true);
    expect(await getAccount(pool, id)).toBeNull();
    expect(await getTokenInfo(pool, id)).toBeNull();
    const events = await listEvents(pool, id);
    expect(events.map((e) => e.kind)).toEqual(['imported', 'removed']);
    expect(events[1]!.expiresAt?.toISOString()).toBe(later(60 * DAY).toISOString());
    expect(await removeAccount(pool, id, later(DAY))).toBe(false);
  });
});

describe('tokens', () => {
  it('saves encrypted (no clear token in the row), loads, and records the expiry in an event', async () => {
    const id = await newAccount();
    const token = `IGAA${randomBytes(24).toString('hex')}`;
    const { generation } = await saveToken(
      pool,
      cipher,
      { accountId: id, accessToken: token, obtainedAt: t0, expiresAt: later(60 * DAY) },
      'exchanged',
    );
    expect(generation).toBe(1);
    const raw = await pool.query<{ ciphertext: Buffer; key_id: string }>(
      'SELECT ciphertext, key_id FROM tokens WHERE account_id = $1',
      [id],
    );
    // The key's id, derived from its material, not its label (R-KEY-1).
    expect(raw.rows[0]!.key_id).toBe(cipher.currentKeyId);
    expect(raw.rows[0]!.key_id).toMatch(/^[0-9a-f]{8}$/);
    expect(raw.rows[0]!.ciphertext.includes(Buffer.from(token))).toBe(false);
    expect(await loadToken(pool, cipher, id)).toEqual({
      accessToken: token,
      obtainedAt: t0,
      expiresAt: later(60 * DAY),
      generation: 1,
    });
    const [ev] = await listEvents(pool, id);
    expect(ev).toMatchObject({ kind: 'exchanged', detail: null });
    expect(ev!.expiresAt?.toISOString()).toBe(later(60 * DAY).toISOString());
    // A reconnect replaces the token and bumps the generation.
    expect(
      (
        await saveToken(
          pool,
          cipher,
          { accountId: id, accessToken: 'tok-2', obtainedAt: later(DAY), expiresAt: later(61 * DAY) },
          'exchanged',
        )
      ).generation,
    ).toBe(2);
    expect(await loadToken(pool, cipher, 'nobody')).toBeNull();
  });

  it('R-TOK-6: a refresh replaces token and expiry in one guarded write, even when the value looks identical', async () => {
    const id = await newAccount();
    await saveToken(
      pool,
      cipher,
      { accountId: id, accessToken: 'same-token', obtainedAt: t0, expiresAt: later(60 * DAY) },
      'exchanged',
    );
    const before = await loadToken(pool, cipher, id);
    const ok = await replaceTokenIfCurrent(pool, cipher, id, before!.generation, {
      accessToken: 'same-token',
      obtainedAt: later(30 * DAY),
      expiresAt: later(90 * DAY),
    });
    expect(ok).toBe(true);
    const after = await loadToken(pool, cipher, id);
    expect(after).toEqual({
      accessToken: 'same-token',
      obtainedAt: later(30 * DAY),
      expiresAt: later(90 * DAY),
      generation: 2,
    });
    expect((await listEvents(pool, id)).map((e) => e.kind)).toEqual(['exchanged', 'refreshed']);
  });

  it('R-TOK-6: a stale generation writes nothing (two workers, or an older result after a newer one)', async () => {
    const id = await newAccount();
    await saveToken(
      pool,
      cipher,
      { accountId: id, accessToken: 'tok-0', obtainedAt: t0, expiresAt: later(60 * DAY) },
      'exchanged',
    );
    const read = (await loadToken(pool, cipher, id))!;
    // Two workers read the same generation and race: exactly one writes.
    const results = await Promise.all(
      ['tok-w1', 'tok-w2', 'tok-w3'].map((t, i) =>
        replaceTokenIfCurrent(pool, cipher, id, read.generation, {
          accessToken: t,
          obtainedAt: later(DAY),
          expiresAt: later((61 + i) * DAY),
        }),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = (await loadToken(pool, cipher, id))!;
    const rowBefore = (
      await pool.query('SELECT ciphertext, expires_at, generation FROM tokens WHERE account_id = $1', [id])
    ).rows[0];
    // A late, older result: refused, row byte-for-byte unchanged.
    expect(
      await replaceTokenIfCurrent(pool, cipher, id, read.generation, {
        accessToken: 'tok-stale',
        obtainedAt: later(2 * DAY),
        expiresAt: later(99 * DAY),
      }),
    ).toBe(false);
    const rowAfter = (
      await pool.query('SELECT ciphertext, expires_at, generation FROM tokens WHERE account_id = $1', [id])
    ).rows[0];
    expect(rowAfter).toEqual(rowBefore);
    expect((await loadToken(pool, cipher, id))!.accessToken).toBe(winner.accessToken);
    expect((await listEvents(pool, id)).filter((e) => e.kind === 'refreshed')).toHaveLength(1);
  });

  it('R-TOK-6: the replace and its event are one transaction (a failing event rolls back the token)', async () => {
    const id = await newAccount();
    await saveToken(
      pool,
      cipher,
      { accountId: id, accessToken: 'tok-keep', obtainedAt: t0, expiresAt: later(60 * DAY) },
      'exchanged',
    );
    // Make the event insert fail after the UPDATE succeeded, within the same transaction.
    await pool.query(
      `ALTER TABLE token_events ADD CONSTRAINT no_refreshed_${id} CHECK (NOT (kind = 'refreshed' AND account_id = '${id}'))`,
    );
    try {
      await expect(
        replaceTokenIfCurrent(pool, cipher, id, 1, {
          accessToken: 'tok-new',
          obtainedAt: later(DAY),
          expiresAt: later(90 * DAY),
        }),
      ).rejects.toThrow();
    } finally {
      await pool.query(`ALTER TABLE token_events DROP CONSTRAINT no_refreshed_${id}`);
    }
    expect(await loadToken(pool, cipher, id)).toMatchObject({
      accessToken: 'tok-keep',
      generation: 1,
      expiresAt: later(60 * DAY),
    });
  });

  it('R-TOK-7: a failed refresh never touches the stored token or its expiry', async () => {
    const id = await newAccount();
    await saveToken(
      pool,
      cipher,
      { accountId: id, accessToken: 'tok-good', obtainedAt: t0, expiresAt: later(60 * DAY) },
      'exchanged',
    );
    const before = (
      await pool.query(
        'SELECT key_id, ciphertext, obtained_at, expires_at, generation FROM tokens WHERE account_id = $1',
        [id],
      )
    ).rows[0];
    const r1 = await recordRefreshFailure(
      pool,
      id,
      later(30 * DAY),
      'HTTP 400 code 190: bad token access_token=tok-good',
    );
    const r2 = await recordRefreshFailure(pool, id, later(31 * DAY), 'timeout');
    expect(r1).toEqual({ refreshFailures: 1, expiresAt: later(60 * DAY) });
    expect(r2?.refreshFailures).toBe(2);
    const after = (
      await pool.query(
        'SELECT key_id, ciphertext, obtained_at, expires_at, generation FROM tokens WHERE account_id = $1',
        [id],
      )
    ).rows[0];
    expect(after).toEqual(before);
    expect(await loadToken(pool, cipher, id)).toMatchObject({ accessToken: 'tok-good', expiresAt: later(60 * DAY) });
    const info = (await getTokenInfo(pool, id))!;
    expect(info).toMatchObject({
      refreshFailures: 2,
      lastRefreshError: 'timeout',
      lastRefreshAttemptAt: later(31 * DAY),
    });
    const failed = (await listEvents(pool, id)).filter((e) => e.kind === 'refresh_failed');
    expect(failed).toHaveLength(2);
    expect(failed[0]!.expiresAt?.toISOString()).toBe(later(60 * DAY).toISOString());
    expect(failed[0]!.detail).toContain('access_token=[redacted]');
    expect(failed[0]!.detail).not.toContain('tok-good');
    // A later successful refresh clears the failure count.
    expect(
      await replaceTokenIfCurrent(pool, cipher, id, 1, {
        accessToken: 'tok-next',
        obtainedAt: later(32 * DAY),
        expiresAt: later(92 * DAY),
      }),
    ).toBe(true);
    expect((await getTokenInfo(pool, id))!).toMatchObject({ refreshFailures: 0, lastRefreshError: null });
  });

  it('rotateKeys re-encrypts every token with the new first key; the old key decrypts until then', async () => {
    // An isolated database so the count is exact.
    const d = await freshDatabase('rotate');
    const p = createPool(d.url);
    try {
      await migrate(p);
      const ids = ['a1', 'a2', 'a3'];
      for (const id of ids) {
        await upsertAccount(p, { id, username: id }, t0);
        await saveToken(
          p,
          cipher,
          { accountId: id, accessToken: `token-of-${id}`, obtainedAt: t0, expiresAt: later(60 * DAY) },
          'imported',
        );
      }
      const rotated = TokenCipher.fromEnv(`k2:${keyNew},k1:${keyOld}`);
      // Before rotation: the old key (second in the list) still decrypts.
      expect((await loadToken(p, rotated, 'a1'))!.accessToken).toBe('token-of-a1');
      const gens = (await p.query('SELECT generation FROM tokens ORDER BY account_id')).rows;
      expect(await rotateKeys(p, rotated)).toEqual({ rotated: 3 });
      expect(await rotateKeys(p, rotated)).toEqual({ rotated: 0 });
      const keyIds = (await p.query<{ key_id: string }>('SELECT DISTINCT key_id FROM tokens')).rows.map(
        (r) => r.key_id,
      );
      expect(keyIds).toEqual([rotated.currentKeyId]);
      // Generation untouched: an in-flight refresh may still write.
      expect((await p.query('SELECT generation FROM tokens ORDER BY account_id')).rows).toEqual(gens);
      // After rotation the old key can go.
      const newOnly = TokenCipher.fromEnv(`k2:${keyNew}`);
      for (const id of ids) expect((await loadToken(p, newOnly, id))!.accessToken).toBe(`token-of-${id}`);
      // And a keyring without the new key names the missing key by its id.
      await expect(loadToken(p, cipher, 'a1')).rejects.toThrow(
        `encrypted with key ${rotated.currentKeyId}, which TOKEN_ENCRYPTION_KEY does not contain`,
      );
    } finally {
      await p.end();
      await d.drop();
    }
  });

  it('a ciphertext moved onto another account row fails authentication (AAD)', async () => {
    const a = await newAccount();
    const b = await newAccount();
    await saveToken(
      pool,
      cipher,
      { accountId: a, accessToken: 'token-of-a', obtainedAt: t0, expiresAt: later(60 * DAY) },
      'exchanged',
    );
    await saveToken(
      pool,
      cipher,
      { accountId: b, accessToken: 'token-of-b', obtainedAt: t0, expiresAt: later(60 * DAY) },
      'exchanged',
    );
    await pool.query(
      'UPDATE tokens SET ciphertext = (SELECT ciphertext FROM tokens WHERE account_id = $1) WHERE account_id = $2',
      [a, b],
    );
    const err = await loadToken(pool, cipher, b).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenDecryptError);
    expect((err as Error).message).not.toContain('token-of-a');
  });

  it('withTransaction nests with savepoints: an inner failure does not undo the outer work', async () => {
    const id = await newAccount();
    await withTransaction(pool, async (c) => {
      await setRefusedFields(c, id, ['caption'], t0);
      await expect(
        withTransaction(c, async (c2) => {
          await setRefusedFields(c2, id, ['username'], t0);
          throw new Error('inner');
        }),
      ).rejects.toThrow('inner');
    });
    expect((await getAccount(pool, id))!.refusedFields).toEqual(['caption']);
  });
});

describe('login states', () => {
  it('single use: ok once, then used; only a hash is stored', async () => {
    const state = await createLoginState(pool, t0, 10 * MINUTE);
    expect(state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = await pool.query('SELECT 1 FROM login_states WHERE state_hash = $1', [state]);
    expect(stored.rowCount).toBe(0);
    const results = await Promise.all([1, 2, 3].map(() => consumeLoginState(pool, state, later(MINUTE))));
    expect(results.sort()).toEqual(['ok', 'used', 'used']);
    expect(await takeLoginState(pool, state, later(MINUTE))).toEqual({
      result: 'used',
      invitationHash: null,
      reconnectHash: null,
      app: null,
    });
  });

  it('a used or expired state still names the invitation or reconnect link it was made for (the page says where to go next)', async () => {
    const used = await createLoginState(pool, t0, 10 * MINUTE, { reconnectHash: 'r'.repeat(64) });
    expect((await takeLoginState(pool, used, later(MINUTE))).result).toBe('ok');
    expect(await takeLoginState(pool, used, later(MINUTE))).toEqual({
      result: 'used',
      invitationHash: null,
      reconnectHash: 'r'.repeat(64),
      app: null,
    });
    const late = await createLoginState(pool, t0, 10 * MINUTE, { invitationHash: 'i'.repeat(64) });
    expect(await takeLoginState(pool, late, later(10 * MINUTE))).toEqual({
      result: 'expired',
      invitationHash: 'i'.repeat(64),
      reconnectHash: null,
      app: null,
    });
  });

  it('expired and unknown', async () => {
    const state = await createLoginState(pool, t0, 10 * MINUTE);
    expect(await consumeLoginState(pool, state, later(10 * MINUTE))).toBe('expired');
    expect(await consumeLoginState(pool, 'never-issued', t0)).toBe('unknown');
    const fresh = await createLoginState(pool, t0, 10 * MINUTE);
    expect(await takeLoginState(pool, fresh, later(9 * MINUTE))).toEqual({
      result: 'ok',
      invitationHash: null,
      reconnectHash: null,
      app: null,
    });
  });
});

describe('alerts_sent', () => {
  it('recordAlertOnce from 5 concurrent clients: exactly one true', async () => {
    const id = await newAccount();
    const pools = Array.from({ length: 5 }, () => new pg.Pool({ connectionString: url, max: 1 }));
    try {
      const key = {
        accountId: id,
        kind: 'expiry' as const,
        thresholdDays: 14,
        tokenExpiresAt: later(20 * DAY),
        at: t0,
      };
      const results = await Promise.all(pools.map((p) => recordAlertOnce(p, key)));
      expect(results.filter(Boolean)).toHaveLength(1);
      // Another threshold, or the same threshold of a new token life, is a new alert.
      expect(await recordAlertOnce(pool, { ...key, thresholdDays: 7 })).toBe(true);
      expect(await recordAlertOnce(pool, { ...key, tokenExpiresAt: later(80 * DAY) })).toBe(true);
      // A forgotten claim can be taken again (failed send).
      await forgetAlert(pool, key);
      expect(await recordAlertOnce(pool, key)).toBe(true);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });
});
