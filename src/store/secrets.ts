import type { Db } from './db.ts';
import { describeSecret, type KeyInfo, type TokenCipher } from './crypto.ts';
import { webhookSecretBinding } from './webhooks.ts';
import { appSecretBinding, sealedAppSecrets } from './apps.ts';

/**
 * Which configured key opens each stored secret (tokens and webhook signing secrets, the previous
 * one of a rotation included), and which none opens. `feedmirror keys list` shows the counts;
 * `feedmirror doctor` fails on any secret no key opens (R-KEY-2). Every secret is opened, not just
 * looked up by the id it records, so the answer is what a sync or a delivery would meet.
 */
export interface KeyUsage extends KeyInfo {
  tokens: number;
  webhookSecrets: number;
  appSecrets: number;
}

export interface UnopenedSecret {
  /** `the token of account …` / `the signing secret of webhook endpoint …` */
  what: string;
  /** The key id the row records. */
  keyId: string;
  /** The reason, as the sync or delivery would report it (names the key id, never the key). */
  message: string;
  /** Whose it is: the account of a token, or the webhook endpoint of a signing secret. */
  accountId?: string;
  endpointId?: string;
  app?: string;
}

export interface SecretsAudit {
  keys: KeyUsage[];
  unopened: UnopenedSecret[];
  total: number;
}

export async function auditSecrets(db: Db, cipher: TokenCipher): Promise<SecretsAudit> {
  const keys: KeyUsage[] = cipher.keys().map((k) => ({ ...k, tokens: 0, webhookSecrets: 0, appSecrets: 0 }));
  const byId = new Map(keys.map((k) => [k.id, k]));
  const unopened: UnopenedSecret[] = [];
  let total = 0;
  const check = (
    keyId: string,
    ciphertext: Buffer,
    binding: string,
    kind: 'tokens' | 'webhookSecrets' | 'appSecrets',
    owner: { accountId: string } | { endpointId: string } | { app: string },
  ) => {
    total++;
    const sealed = { keyId, ciphertext };
    const opener = cipher.keyOf(sealed, binding);
    if (opener !== null) {
      byId.get(opener)![kind]++;
      return;
    }
    // keyOf found no key: decrypting again gives the reason a sync or a delivery would log.
    let message = 'no configured key opens it';
    try {
      cipher.decrypt(sealed, binding);
    } catch (err) {
      message = (err as Error).message;
    }
    unopened.push({ what: describeSecret(binding), keyId, message, ...owner });
  };
  const tokens = await db.query<{ account_id: string; key_id: string; ciphertext: Buffer }>(
    'SELECT account_id, key_id, ciphertext FROM tokens ORDER BY account_id',
  );
  for (const r of tokens.rows) check(r.key_id, r.ciphertext, r.account_id, 'tokens', { accountId: r.account_id });
  const hooks = await db.query<{
    id: string;
    secret_key_id: string;
    secret: Buffer;
    previous_key_id: string | null;
    previous_secret: Buffer | null;
  }>('SELECT id, secret_key_id, secret, previous_key_id, previous_secret FROM webhook_endpoints ORDER BY id');
  for (const r of hooks.rows) {
    check(r.secret_key_id, r.secret, webhookSecretBinding(r.id), 'webhookSecrets', { endpointId: r.id });
    if (r.previous_key_id && r.previous_secret)
      check(r.previous_key_id, r.previous_secret, webhookSecretBinding(r.id), 'webhookSecrets', { endpointId: r.id });
  }
  for (const a of await sealedAppSecrets(db))
    check(a.keyId, a.ciphertext, appSecretBinding(a.name), 'appSecrets', { app: a.name });
  return { keys, unopened, total };
}

/** What a start-up check of the keys found: how many tokens are stored, and whether the keys open any. */
export interface TokenKeyCheck {
  /** Stored tokens. */
  tokens: number;
  /** The key ids the tokens record, most used first. */
  sealedWith: string[];
  /** Whether a configured key opened at least one of the tokens tried. */
  opens: boolean;
}

/**
 * Do the configured keys open the stored tokens at all? A few tokens of each recorded key id are
 * opened (not every token: a worker on 100,000 accounts starts in seconds); one that opens is
 * enough. A worker whose keys open none would fail every account's sync: it refuses to start.
 */
export async function checkTokenKeys(db: Db, cipher: TokenCipher, perKey = 3): Promise<TokenKeyCheck> {
  const { rows } = await db.query<{ account_id: string; key_id: string; ciphertext: Buffer; n: string }>(
    `SELECT account_id, key_id, ciphertext, n FROM (
       SELECT account_id, key_id, ciphertext, count(*) OVER (PARTITION BY key_id) AS n,
              row_number() OVER (PARTITION BY key_id ORDER BY account_id) AS i
         FROM tokens) t
      WHERE i <= $1 ORDER BY n DESC, key_id, account_id`,
    [perKey],
  );
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.key_id, Number(r.n));
  return {
    tokens: [...counts.values()].reduce((a, b) => a + b, 0),
    sealedWith: [...counts.keys()],
    opens: rows.some((r) => cipher.keyOf({ keyId: r.key_id, ciphertext: r.ciphertext }, r.account_id) !== null),
  };
}
