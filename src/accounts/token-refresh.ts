import type pg from 'pg';
import type { Logger } from '../util/logger.ts';
import { DAY, HOUR, type Clock } from '../util/clock.ts';
import type { PlatformClient } from '../platform/client.ts';
import { dataClient, type PlatformApps } from './apps.ts';
import { TokenInvalidError, TokenTooYoungError } from '../platform/errors.ts';
import type { TokenCipher } from '../store/crypto.ts';
import { getAccount } from '../store/accounts.ts';
import type { AccountLifecycle } from './lifecycle.ts';
import { errorKind, isLocalFailure } from '../util/error-kinds.ts';
import {
  getTokenInfo,
  loadToken,
  recordRefreshFailure,
  replaceTokenIfCurrent,
  type TokenInfo,
} from '../store/tokens.ts';
import { withTransactionLock } from '../store/locks.ts';

/**
 * The token refresh of one account (R-TOK-5..8). The token-refresh job (jobs/token-refresh.ts)
 * runs it from a per-account scheduler every few hours as a cheap check; it refreshes when the
 * account's own token is REFRESH_AFTER_DAYS old. Checking often instead of scheduling one run 30
 * days out means a worker that was down catches up as soon as it starts, and a failed refresh is
 * retried (daily) while the token still lives. `feedmirror refresh` calls it directly.
 */
export interface TokenRefreshPayload {
  accountId: string;
  /** Refresh now rather than at 30 days; never before 24 hours (R-TOK-5). */
  force?: boolean | undefined;
}

/** The platform refuses refreshing a token younger than this (R-TOK-5). */
export const MIN_TOKEN_AGE_MS = 24 * HOUR;

export interface TokenRefreshDeps {
  db: pg.Pool;
  cipher: TokenCipher;
  platform: PlatformClient;
  /** The account's own app's client (without: `platform`). */
  apps?: PlatformApps;
  clock: Clock;
  logger: Logger;
  /** Token age at which it is refreshed (R-TOK-8: 30 days, inside the 30-50 day window). */
  refreshAfterMs?: number;
  /** After a failed refresh, the next attempt waits this long ("retried daily while the token lives"). */
  retryAfterFailureMs?: number;
  /** Every state change and its side effects (stop the jobs and alert on R-TOK-10). */
  lifecycle: Pick<AccountLifecycle, 'apply'>;
}

export type RefreshOutcome =
  | { outcome: 'refreshed'; expiresAt: Date }
  | { outcome: 'not-due'; dueAt: Date }
  | { outcome: 'backoff'; nextAttemptAt: Date }
  | { outcome: 'reauth-required'; reason: string }
  | { outcome: 'skipped'; reason: string }
  | { outcome: 'failed'; reason: string; expiresAt: Date };

export async function refreshAccountToken(
  deps: TokenRefreshDeps,
  payload: TokenRefreshPayload,
): Promise<RefreshOutcome> {
  const { accountId } = payload;
  const refreshAfterMs = deps.refreshAfterMs ?? 30 * DAY;
  const retryAfterFailureMs = deps.retryAfterFailureMs ?? DAY;
  const log = deps.logger.child({ job: 'token-refresh', accountId });

  const account = await getAccount(deps.db, accountId);
  if (!account) return { outcome: 'skipped', reason: 'account not found (removed?)' };
  if (account.status !== 'active') return { outcome: 'skipped', reason: `account is ${account.status}` };

  // Most checks find nothing to do (a check every six hours, a refresh every 30 days): they decide
  // on the token's metadata without the lock, one query instead of the lock's four round trips.
  const first = await getTokenInfo(deps.db, accountId);
  if (!first) return { outcome: 'skipped', reason: 'no token stored' };
  const early = notDueYet(first, deps.clock.now(), payload, refreshAfterMs);
  if (early) return early;

  // Two workers never refresh the same account at once: the second one skips. A transaction-
  // scoped lock, not a session lock, so it holds behind a transaction pooler (R-SCL-2); it dies
  // with a worker killed mid-refresh, so the next run proceeds at once (R-TOK-6).
  const locked = await withTransactionLock(deps.db, `token-refresh:${accountId}`, async () => {
    // Decide on the metadata; decrypt the token only when it is about to go to the platform.
    const token = await getTokenInfo(deps.db, accountId);
    if (!token) return { outcome: 'skipped', reason: 'no token stored' } as const;
    const now = deps.clock.now();

    if (token.expiresAt.getTime() <= now.getTime()) {
      // No call revives an expired token: only the owner logging in again does.
      const reason = `the token expired on ${token.expiresAt.toISOString()} before it could be refreshed`;
      await deps.lifecycle.apply(accountId, 'token_expired', reason, 'token_expired');
      return { outcome: 'reauth-required', reason } as const;
    }
    const dueAt = new Date(token.obtainedAt.getTime() + (payload.force ? MIN_TOKEN_AGE_MS : refreshAfterMs));
    const notDue = notDueYet(token, now, payload, refreshAfterMs);
    if (notDue) return notDue;
    if (!payload.force && token.lastRefreshError && token.lastRefreshAttemptAt) {
      const next = new Date(token.lastRefreshAttemptAt.getTime() + retryAfterFailureMs);
      if (next.getTime() > now.getTime()) return { outcome: 'backoff', nextAttemptAt: next } as const;
    }

    const stored = await loadToken(deps.db, deps.cipher, accountId);
    if (!stored) return { outcome: 'skipped', reason: 'no token stored' } as const;
    try {
      const grant = await dataClient(deps, account.app ?? null).refreshToken(stored.accessToken);
      // R-TOK-6: replace token and expiry together, only over the generation we read.
      const written = await replaceTokenIfCurrent(deps.db, deps.cipher, accountId, stored.generation, {
        accessToken: grant.accessToken,
        obtainedAt: now,
        expiresAt: grant.expiresAt,
      });
      if (!written) return { outcome: 'skipped', reason: 'another refresh wrote a newer token first' } as const;
      log.info({ expiresAt: grant.expiresAt.toISOString() }, 'token refreshed');
      await deps.lifecycle.apply(accountId, 'refresh_succeeded');
      return { outcome: 'refreshed', expiresAt: grant.expiresAt } as const;
    } catch (err) {
      if (err instanceof TokenInvalidError) {
        const reason = `the platform rejected the token: ${err.reason} (code ${err.code}${err.subcode ? `/${err.subcode}` : ''})`;
        await deps.lifecycle.apply(accountId, 'owner_must_act', reason, errorKind(err));
        return { outcome: 'reauth-required', reason } as const;
      }
      if (err instanceof TokenTooYoungError) return { outcome: 'not-due', dueAt } as const;
      // R-HLT-5: PostgreSQL or Redis failing us is not the account's failure: nothing is recorded
      // against it, and the job (or `feedmirror refresh`) fails saying what is wrong (src/util/error-kinds.ts).
      if (isLocalFailure(err)) throw err;
      // R-TOK-7: a failed refresh leaves the stored token untouched; only the attempt is recorded.
      const reason = (err as Error).message;
      await recordRefreshFailure(deps.db, accountId, now, reason, errorKind(err));
      log.warn(
        { expiresAt: token.expiresAt.toISOString(), err },
        'token refresh failed; the stored token is kept and retried later',
      );
      await deps.lifecycle.apply(accountId, 'refresh_failed', reason, errorKind(err));
      return { outcome: 'failed', reason, expiresAt: token.expiresAt } as const;
    }
  });
  return locked ?? { outcome: 'skipped', reason: 'another worker is refreshing this account' };
}

/**
 * A token that is alive and not old enough to refresh: R-TOK-5, never before 24 hours; R-TOK-8,
 * otherwise at 30 days (a forced refresh only waits for the 24 hours). Null: expired, or due.
 */
function notDueYet(
  token: Pick<TokenInfo, 'obtainedAt' | 'expiresAt'>,
  now: Date,
  payload: TokenRefreshPayload,
  refreshAfterMs: number,
): { outcome: 'not-due'; dueAt: Date } | null {
  if (token.expiresAt.getTime() <= now.getTime()) return null;
  const age = now.getTime() - token.obtainedAt.getTime();
  if (age >= MIN_TOKEN_AGE_MS && (payload.force || age >= refreshAfterMs)) return null;
  return {
    outcome: 'not-due',
    dueAt: new Date(token.obtainedAt.getTime() + (payload.force ? MIN_TOKEN_AGE_MS : refreshAfterMs)),
  };
}
