import type { ErrorKind } from '../util/error-kinds.ts';
import { redactText } from '../util/redact.ts';
import type { TokenCipher } from './crypto.ts';
import { withTransaction, type Db } from './db.ts';

/**
 * Platform apps as objects (Standard Access: one app per client). The secret is sealed with the
 * tokens' key (TokenCipher, bound to `app:<name>` so a sealed secret copied onto another app's
 * row fails to open) and re-encrypted by `feedmirror keys rotate`. The default app is
 * APP_ID/APP_SECRET from the environment and has no row: app_name NULL everywhere means it.
 */

/** The default app's name wherever an app is named (the accounts list, health, `--app`). */
export const DEFAULT_APP = 'default';
export const APP_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,39}$/;
export const APP_ID_RE = /^[0-9A-Za-z_-]{1,64}$/;

export type AppFaultKind = Extract<ErrorKind, 'app_secret_refused' | 'app_restricted'>;

export interface StoredApp {
  name: string;
  appId: string;
  createdAt: Date;
  updatedAt: Date;
  /** What the platform last said against the app itself; null while it works. */
  fault: { kind: AppFaultKind; message: string; at: Date } | null;
}

interface AppRow {
  name: string;
  app_id: string;
  secret_key_id: string;
  secret: Buffer;
  created_at: Date;
  updated_at: Date;
  fault_kind: AppFaultKind | null;
  fault: string | null;
  fault_at: Date | null;
}

export const appSecretBinding = (name: string): string => `app:${name}`;

function toApp(r: AppRow): StoredApp {
  return {
    name: r.name,
    appId: r.app_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    fault: r.fault_kind && r.fault_at ? { kind: r.fault_kind, message: r.fault ?? '', at: r.fault_at } : null,
  };
}

/** Bad input an operator can fix (an unknown name, a duplicate id, an app in use): one clear line. */
export class AppInputError extends Error {
  override readonly name = 'AppInputError';
}

export function checkAppName(name: string): void {
  if (name === DEFAULT_APP)
    throw new AppInputError(
      `the name ${DEFAULT_APP} is the app of APP_ID/APP_SECRET in the environment; choose another name`,
    );
  if (!APP_NAME_RE.test(name))
    throw new AppInputError(
      `app name ${JSON.stringify(name)}: use 1-40 lower-case letters, digits, '-' or '_', starting with a letter or digit`,
    );
}

export async function addApp(
  db: Db,
  cipher: TokenCipher,
  app: { name: string; appId: string; appSecret: string; defaultAppId?: string },
  now: Date,
): Promise<StoredApp> {
  checkAppName(app.name);
  if (!APP_ID_RE.test(app.appId))
    throw new AppInputError(`app id ${JSON.stringify(app.appId)}: the platform's app id is letters and digits`);
  if (app.appSecret.trim() === '') throw new AppInputError(`app ${app.name}: the secret is empty`);
  if (app.defaultAppId && app.appId === app.defaultAppId)
    throw new AppInputError(
      `app id ${app.appId} is already the default app's (APP_ID); an app is added once, under one name`,
    );
  const sealed = cipher.encrypt(app.appSecret, appSecretBinding(app.name));
  return withTransaction(db, async (c) => {
    const clash = await c.query<{ name: string; app_id: string }>(
      'SELECT name, app_id FROM apps WHERE name = $1 OR app_id = $2',
      [app.name, app.appId],
    );
    for (const r of clash.rows) {
      if (r.name === app.name) throw new AppInputError(`an app named ${app.name} exists already (app id ${r.app_id})`);
      throw new AppInputError(`app id ${app.appId} is already added as app ${r.name}`);
    }
    const { rows } = await c.query<AppRow>(
      `INSERT INTO apps (name, app_id, secret_key_id, secret, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $5) RETURNING *`,
      [app.name, app.appId, sealed.keyId, sealed.ciphertext, now],
    );
    return toApp(rows[0]!);
  });
}

export async function listApps(db: Db): Promise<StoredApp[]> {
  const { rows } = await db.query<AppRow>('SELECT * FROM apps ORDER BY name');
  return rows.map(toApp);
}

export async function getApp(db: Db, name: string): Promise<StoredApp | null> {
  const { rows } = await db.query<AppRow>('SELECT * FROM apps WHERE name = $1', [name]);
  return rows[0] ? toApp(rows[0]) : null;
}

/** The app, or an AppInputError naming the apps there are. */
export async function requireApp(db: Db, name: string): Promise<StoredApp> {
  const app = await getApp(db, name);
  if (app) return app;
  const names = (await listApps(db)).map((a) => a.name);
  throw new AppInputError(
    `no app named ${name} (apps: ${[DEFAULT_APP, ...names].join(', ')}); add it with feedmirror apps add ${name} --app-id <id>`,
  );
}

/** The app with its secret opened (for an exchange: the only calls that carry it). */
export async function openApp(db: Db, cipher: TokenCipher, name: string): Promise<StoredApp & { appSecret: string }> {
  const { rows } = await db.query<AppRow>('SELECT * FROM apps WHERE name = $1', [name]);
  const r = rows[0];
  if (!r) return { ...(await requireApp(db, name)), appSecret: '' }; // requireApp throws
  const appSecret = cipher.decrypt({ keyId: r.secret_key_id, ciphertext: r.secret }, appSecretBinding(r.name));
  return { ...toApp(r), appSecret };
}

/** A new secret (the platform's was reset): sealed with the current key, and the app's fault cleared. */
export async function setAppSecret(
  db: Db,
  cipher: TokenCipher,
  name: string,
  appSecret: string,
  now: Date,
): Promise<StoredApp> {
  if (appSecret.trim() === '') throw new AppInputError(`app ${name}: the secret is empty`);
  const sealed = cipher.encrypt(appSecret, appSecretBinding(name));
  const { rows } = await db.query<AppRow>(
    `UPDATE apps SET secret_key_id = $2, secret = $3, updated_at = $4, fault_kind = NULL, fault = NULL, fault_at = NULL
      WHERE name = $1 RETURNING *`,
    [name, sealed.keyId, sealed.ciphertext, now],
  );
  if (!rows[0]) await requireApp(db, name);
  return toApp(rows[0]!);
}

/** How many accounts each app has (the default app under DEFAULT_APP). */
export async function accountsPerApp(db: Db): Promise<Map<string, number>> {
  const { rows } = await db.query<{ app: string | null; n: string }>(
    'SELECT app_name AS app, count(*) AS n FROM accounts GROUP BY app_name',
  );
  return new Map(rows.map((r) => [r.app ?? DEFAULT_APP, Number(r.n)]));
}

/** Remove an app no account uses; refused (naming a few of them) while any does. */
export async function removeApp(db: Db, name: string): Promise<void> {
  await requireApp(db, name);
  await withTransaction(db, async (c) => {
    const used = await c.query<{ id: string; username: string; n: string }>(
      `SELECT id, username, count(*) OVER () AS n FROM accounts WHERE app_name = $1 ORDER BY id LIMIT 3`,
      [name],
    );
    if (used.rows.length) {
      const n = Number(used.rows[0]!.n);
      const some = used.rows.map((r) => `${r.id} (@${r.username})`).join(', ');
      throw new AppInputError(
        `app ${name} is used by ${n} account${n === 1 ? '' : 's'} (${some}${n > used.rows.length ? ', …' : ''}); remove or reconnect them first`,
      );
    }
    await c.query('DELETE FROM apps WHERE name = $1', [name]);
  });
}

/** The platform refused the app's secret, or restricted the app: recorded once, kept until it works again. */
export async function recordAppFault(
  db: Db,
  name: string,
  fault: { kind: AppFaultKind; message: string },
  now: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE apps SET fault_kind = $2, fault = left($3, 500), fault_at = $4
      WHERE name = $1 AND fault_kind IS DISTINCT FROM $2`,
    [name, fault.kind, redactText(fault.message), now],
  );
  return (rowCount ?? 0) > 0;
}

/** The app answered as it should again: its fault is gone. */
export async function clearAppFault(db: Db, name: string, kind?: AppFaultKind): Promise<void> {
  await db.query(
    `UPDATE apps SET fault_kind = NULL, fault = NULL, fault_at = NULL
      WHERE name = $1 AND fault_kind IS NOT NULL AND ($2::text IS NULL OR fault_kind = $2)`,
    [name, kind ?? null],
  );
}

/** Re-encrypt every app secret not under the current key (`feedmirror keys rotate`). */
export async function rotateAppKeys(db: Db, cipher: TokenCipher): Promise<{ rotated: number }> {
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<AppRow>('SELECT * FROM apps WHERE secret_key_id <> $1 ORDER BY name FOR UPDATE', [
      cipher.currentKeyId,
    ]);
    for (const r of rows) {
      const plain = cipher.decrypt({ keyId: r.secret_key_id, ciphertext: r.secret }, appSecretBinding(r.name));
      const sealed = cipher.encrypt(plain, appSecretBinding(r.name));
      await c.query('UPDATE apps SET secret_key_id = $2, secret = $3 WHERE name = $1', [
        r.name,
        sealed.keyId,
        sealed.ciphertext,
      ]);
    }
    return { rotated: rows.length };
  });
}

/** Every sealed app secret, for the keys audit. */
export async function sealedAppSecrets(db: Db): Promise<Array<{ name: string; keyId: string; ciphertext: Buffer }>> {
  const { rows } = await db.query<{ name: string; secret_key_id: string; secret: Buffer }>(
    'SELECT name, secret_key_id, secret FROM apps ORDER BY name',
  );
  return rows.map((r) => ({ name: r.name, keyId: r.secret_key_id, ciphertext: r.secret }));
}

/** The app of an account (null: the default app). */
export async function appOfAccount(db: Db, accountId: string): Promise<string | null> {
  const { rows } = await db.query<{ app_name: string | null }>('SELECT app_name FROM accounts WHERE id = $1', [
    accountId,
  ]);
  return rows[0]?.app_name ?? null;
}

/** Move an account to an app (connect, reconnect through an app). */
export async function setAccountApp(db: Db, accountId: string, app: string | null): Promise<void> {
  await db.query('UPDATE accounts SET app_name = $2 WHERE id = $1 AND app_name IS DISTINCT FROM $2', [accountId, app]);
}
