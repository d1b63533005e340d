import type pg from 'pg';
import type { Logger } from '../util/logger.ts';
import type { Clock } from '../util/clock.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { Profile, TokenGrant } from '../platform/types.ts';
import {
  AppRestrictedError,
  AppSecretRefusedError,
  isAppFault,
  MissingScopeError,
  PersonalAccountError,
} from '../platform/errors.ts';
import { dataClient, exchangeClient, type PlatformApps } from './apps.ts';
import { DEFAULT_APP, setAccountApp } from '../store/apps.ts';
import type { ErrorKind } from '../util/error-kinds.ts';
import { PROFESSIONAL_ACCOUNT_TYPES, SCOPE } from '../platform/identifiers.ts';
import type { TokenCipher } from '../store/crypto.ts';
import { getAccount, upsertAccount } from '../store/accounts.ts';
import { withTransaction } from '../store/db.ts';
import { statusOnlyLifecycle, type AccountLifecycle } from './lifecycle.ts';
import { saveToken } from '../store/tokens.ts';
import { setOwner, type OwnerPatch } from '../store/owners.ts';
import type { EventSink } from '../webhooks/events.ts';

/**
 * Connecting an account, shared by the OAuth callback and `feedmirror accounts add`: exchange the
 * short-lived token for a long-lived one (R-TOK-1, within the hour), read the profile, refuse what
 * cannot work (personal accounts R-TOK-13, a missing scope R-TOK-12), then store the account and
 * its encrypted token with the absolute expiry (R-TOK-4).
 */
export interface ConnectDeps {
  db: pg.Pool;
  cipher: TokenCipher;
  platform: PlatformClient;
  /** Each app's client (without: `platform`, the default app's). */
  apps?: PlatformApps;
  clock: Clock;
  logger: Logger;
  /** Makes the account active and schedules it; without it, statusOnlyLifecycle (no schedules). */
  lifecycle?: Pick<AccountLifecycle, 'apply'>;
  /** account.reconnected when an account that needed its owner connects again (R-OWN-14). */
  events?: EventSink;
}

/** How the token came: `accounts add` (exchanged or imported), a login in the browser, or an owner's reconnect link. */
export type ConnectedVia = 'exchanged' | 'imported' | 'login' | 'invitation' | 'reconnect_link';

/**
 * A login made for one account (an owner's reconnect link) came back as another: nothing of it is
 * stored (R-OWN-13).
 */
export class WrongAccountError extends Error {
  override readonly name = 'WrongAccountError';
  constructor(
    readonly expectedId: string,
    readonly actualId: string,
  ) {
    super(`the login is for account ${actualId}, not ${expectedId}: nothing was stored`);
  }
}

export interface ConnectOptions {
  permissions?: string[] | undefined;
  via?: ConnectedVia;
  /** R-OWN-13: only this platform account may connect (checked before anything is stored). */
  expectedAccountId?: string;
  /** The owner to record on the account (an invitation carrying one). */
  owner?: OwnerPatch;
  /** The app the account connects through (null or absent: the default app, APP_ID). */
  app?: string | null;
}

export interface ConnectedAccount {
  id: string;
  username: string;
  expiresAt: Date;
  /**
   * Whether the account's schedules were made. False when the queues failed after the account
   * and its token were committed: the worker schedules it (at its start, and the reconciler
   * within RECONCILE_INTERVAL_SECONDS), so the account is connected either way.
   */
  scheduled: boolean;
}

/** Refuse a scope list that lacks the current scope (R-TOK-12); undefined means "not reported". */
export function checkScopes(permissions: string[] | undefined): void {
  if (permissions === undefined) return;
  if (!permissions.includes(SCOPE)) {
    throw new MissingScopeError(
      `the login did not grant the ${SCOPE} permission (granted: ${permissions.join(', ') || 'none'}); ` +
        `connect again and leave "${SCOPE}" ticked on the approval screen`,
    );
  }
}

/** Only professional accounts can use the API (R-TOK-13). */
export function checkProfessional(profile: Profile): void {
  if (profile.accountType && !PROFESSIONAL_ACCOUNT_TYPES.includes(profile.accountType.toUpperCase())) {
    throw new PersonalAccountError(
      `@${profile.username} is a personal account (${profile.accountType}); feedmirror needs a professional ` +
        `(Business or Creator) account: switch it in the app under Settings > Account type and tools, then connect again`,
    );
  }
}

export async function connectWithShortLivedToken(
  deps: ConnectDeps,
  shortLivedToken: string,
  opts: ConnectOptions = {},
): Promise<ConnectedAccount> {
  checkScopes(opts.permissions);
  const app = opts.app ?? null;
  const client = await exchangeClient(deps, app);
  let grant: TokenGrant;
  try {
    grant = await client.exchangeToken(shortLivedToken);
  } catch (err) {
    throw await appFailure(deps, app, err);
  }
  await deps.apps?.worked(app, 'app_secret_refused');
  return storeGrant(deps, grant, 'exchanged', opts.via ?? 'exchanged', opts, client);
}

/**
 * Import an existing long-lived token. Its expiry is learned by refreshing it when the platform
 * allows (R-TOK-5: at least 24 hours old), else it must be given.
 */
export async function importLongLivedToken(
  deps: ConnectDeps,
  token: string,
  opts: { expiresAt?: Date | undefined; app?: string | null | undefined } = {},
): Promise<ConnectedAccount> {
  const client = dataClient(deps, opts.app ?? null);
  const into = { app: opts.app ?? null };
  let refreshed: TokenGrant;
  try {
    refreshed = await client.refreshToken(token);
  } catch (err) {
    if (!opts.expiresAt) {
      throw new Error(
        `could not learn the token's expiry by refreshing it (${(err as Error).message}); pass --expires-at <date> with the expiry you know`,
        { cause: err },
      );
    }
    const now = deps.clock.now();
    if (opts.expiresAt.getTime() <= now.getTime())
      throw new Error(`--expires-at ${opts.expiresAt.toISOString()} is in the past`, { cause: err });
    const grant: TokenGrant = {
      accessToken: token,
      tokenType: 'bearer',
      expiresIn: Math.round((opts.expiresAt.getTime() - now.getTime()) / 1000),
      expiresAt: opts.expiresAt,
    };
    return storeGrant(deps, grant, 'imported', 'imported', into, client);
  }
  return storeGrant(deps, refreshed, 'imported', 'imported', into, client);
}

/**
 * An app's fault at an exchange (its secret refused, the app restricted): recorded against the
 * app, and said in one line naming it, since only the app's operator can fix it.
 */
export async function appFailure(deps: Pick<ConnectDeps, 'apps'>, app: string | null, err: unknown): Promise<unknown> {
  if (!isAppFault(err)) return err;
  await deps.apps?.fault(app, err);
  return new AppFaultError(app ?? DEFAULT_APP, err);
}

/** An exchange the platform refused for the app's sake: the message names the app and the fix. */
export class AppFaultError extends Error {
  override readonly name = 'AppFaultError';
  readonly errorKind: ErrorKind;
  readonly localFailure = null;
  constructor(
    readonly app: string,
    cause: AppSecretRefusedError | AppRestrictedError,
  ) {
    super(
      cause instanceof AppSecretRefusedError
        ? app === DEFAULT_APP
          ? "the platform refuses the secret of the default app: set APP_SECRET to the app's current secret"
          : `the platform refuses the secret of app ${app}: give feedmirror its current secret with feedmirror apps set ${app} --secret-file <file>`
        : `the platform restricted app ${app}: fix the app in the platform's developer settings`,
      { cause },
    );
    this.errorKind = cause.errorKind;
  }
}

/**
 * Store, then schedule: the account's row and its token are committed in one transaction before
 * any of its jobs can exist, so the first sync and the first refresh check always find both
 * (a job that ran before the commit would end "account not found" and wait for its next slot).
 * The lifecycle then makes it active and schedules it (R-TOK-8); if the queues fail at that point
 * the account stays connected, and the worker's start or its reconciler (jobs/reconcile.ts)
 * creates the missing schedules from PostgreSQL.
 */
async function storeGrant(
  deps: ConnectDeps,
  grant: TokenGrant,
  event: 'exchanged' | 'imported',
  via: ConnectedVia,
  opts: Pick<ConnectOptions, 'expectedAccountId' | 'owner' | 'app'> = {},
  client: PlatformClient = deps.platform,
): Promise<ConnectedAccount> {
  const profile = await client.getProfile(grant.accessToken);
  // R-OWN-13: a reconnect link's login must be its own account; checked before any write.
  if (opts.expectedAccountId !== undefined && profile.id !== opts.expectedAccountId)
    throw new WrongAccountError(opts.expectedAccountId, profile.id);
  checkProfessional(profile);
  const now = deps.clock.now();
  const before = await withTransaction(deps.db, async (c) => {
    const existing = await getAccount(c, profile.id);
    await upsertAccount(
      c,
      {
        id: profile.id,
        username: profile.username,
        displayName: profile.name ?? null,
        avatarUrl: profile.profilePictureUrl ?? null,
        accountType: profile.accountType ?? null,
      },
      now,
    );
    await saveToken(
      c,
      deps.cipher,
      { accountId: profile.id, accessToken: grant.accessToken, obtainedAt: now, expiresAt: grant.expiresAt },
      event,
    );
    if (opts.owner) await setOwner(c, profile.id, opts.owner, now);
    // The account's calls go through the app its token came from from now on.
    await setAccountApp(c, profile.id, opts.app ?? null);
    return existing;
  });
  // A reconnect revives an account that needed its owner (R-TOK-10); the lifecycle schedules it
  // and logs the one "account connected" line (from none for a new account).
  const applied = await (deps.lifecycle ?? statusOnlyLifecycle(deps)).apply(profile.id, 'connected', null, null, {
    from: before ? before.status : 'none',
    log: { username: profile.username, expiresAt: grant.expiresAt.toISOString(), via },
  });
  if (before?.status === 'reauth_required' || via === 'reconnect_link') {
    // R-OWN-14: the loop an owner alert opened is closed; a site's backend can clear its notice.
    await deps.events?.emit({
      type: 'account.reconnected',
      data: { accountId: profile.id, username: profile.username, via, expiresAt: grant.expiresAt.toISOString() },
    });
  }
  return {
    id: profile.id,
    username: profile.username,
    expiresAt: grant.expiresAt,
    scheduled: applied.effects.includes('schedule'),
  };
}
