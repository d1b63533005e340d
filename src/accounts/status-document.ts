import { openDeletions } from '../deletion/guard.ts';
import { getAccount } from '../store/accounts.ts';
import type { Db } from '../store/db.ts';
import { getTokenInfo } from '../store/tokens.ts';
import { statusKey } from '../storage/keys.ts';
import type { ObjectStorage } from '../storage/types.ts';
import { daysLeft, type Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { redactText } from '../util/redact.ts';

/**
 * The public status document of an account (PUBLISH_STATUS=on): `status/<accountId>.json` next
 * to its feed, so a site's own admin page can say "your feed needs attention" without a webhook
 * receiver. R-OWN-16: it holds only what the feed's reader may know (the account's id and
 * username, whether it is connected, the days of validity left, when it last read its posts to
 * the end); never a token, a secret, the owner's contact or an error text.
 *
 * One code path for every process: the feed publish (CLI `sync --wait` and the worker) and every
 * state change of the lifecycle (reauth, reconnect, token refresh) call `publish`; removing the
 * account deletes the document, whether PUBLISH_STATUS is on or off (one written while it was on
 * must not outlive its account). `feedmirror verify` writes and deletes them with the same two
 * functions (publishAccountStatus, removeAccountStatus).
 */
export interface StatusDocument {
  accountId: string;
  username: string;
  /** connected: the feed keeps updating; needs_owner: only the owner's login brings it back. */
  state: 'connected' | 'needs_owner';
  /** Whole days of validity left (0 once ended); null without a token. */
  daysLeft: number | null;
  /** The last sync that read the account's posts to the end. */
  lastGoodSyncAt: string | null;
  /** Since when the feed no longer updates (its last good sync) while it needs the owner; null when connected. */
  staleSince: string | null;
  generatedAt: string;
}

export interface StatusPublisher {
  publish(accountId: string): Promise<void>;
  remove(accountId: string): Promise<void>;
}

export interface StatusDeps {
  db: Db;
  storage: ObjectStorage;
  clock: Clock;
  logger: Logger;
}

export interface StatusSettings {
  /** PUBLISH_STATUS: off, `publish` writes nothing (`remove` still deletes). */
  publishing: boolean;
}

export const STATUS_CONTENT_TYPE = 'application/json; charset=utf-8';
/** Short: the document changes with the account's state, and readers poll it. */
export const STATUS_CACHE_CONTROL = 'public, max-age=60';

/** The document for an account now (null: no such account). */
export async function buildStatusDocument(
  deps: Pick<StatusDeps, 'db' | 'clock'>,
  accountId: string,
): Promise<StatusDocument | null> {
  const account = await getAccount(deps.db, accountId);
  if (!account) return null;
  const token = await getTokenInfo(deps.db, accountId);
  const now = deps.clock.now();
  const left = token ? daysLeft(token.expiresAt, now) : null;
  const connected = account.status === 'active' && token !== null && token.expiresAt.getTime() > now.getTime();
  const lastGood = account.lastCompleteSyncAt?.toISOString() ?? null;
  return {
    accountId: account.id,
    username: account.username,
    state: connected ? 'connected' : 'needs_owner',
    daysLeft: left === null ? null : Math.max(0, left),
    lastGoodSyncAt: lastGood,
    staleSince: connected ? null : lastGood,
    generatedAt: now.toISOString(),
  };
}

/** Write the account's status document (R-OWN-16). */
export async function publishAccountStatus(deps: StatusDeps, accountId: string): Promise<StatusDocument | null> {
  const doc = await buildStatusDocument(deps, accountId);
  if (!doc) return null;
  await deps.storage.put(statusKey(accountId), Buffer.from(JSON.stringify(doc)), {
    contentType: STATUS_CONTENT_TYPE,
    cacheControl: STATUS_CACHE_CONTROL,
  });
  return doc;
}

/**
 * Delete the account's status document (R-OWN-16): its removal, a document left while
 * PUBLISH_STATUS is off (`feedmirror verify --repair`). The one place one is deleted, through the
 * deletion guard (R-DEL-1..3): only in this deployment's storage, and only while `stillUnwanted`
 * (read right before the delete) says so: an account connected again meanwhile keeps it. Returns
 * whether it was deleted.
 */
export async function removeAccountStatus(
  deps: Pick<StatusDeps, 'db' | 'storage' | 'logger' | 'clock'>,
  accountId: string,
  stillUnwanted: () => Promise<boolean>,
  by = 'account removal',
): Promise<boolean> {
  const run = await openDeletions(deps, { by });
  return run.removeStatusDocument(accountId, stillUnwanted);
}

/**
 * The publisher the composition root hands to the lifecycle and the feed pipeline. A failure is
 * logged, never thrown: the status document must not fail a feed publish or a state change; the
 * next publish writes it again.
 */
export function statusPublisher(deps: StatusDeps, settings: StatusSettings = { publishing: true }): StatusPublisher {
  return {
    async publish(accountId) {
      if (!settings.publishing) return;
      try {
        const doc = await publishAccountStatus(deps, accountId);
        if (doc) deps.logger.debug({ accountId, state: doc.state, daysLeft: doc.daysLeft }, 'status document written');
      } catch (err) {
        deps.logger.warn(
          { accountId, err: redactText((err as Error).message) },
          'status document not written; the next publish tries again',
        );
      }
    },
    async remove(accountId) {
      try {
        // The account removed: its document goes, unless the account is back when looked at again.
        await removeAccountStatus(deps, accountId, async () => (await getAccount(deps.db, accountId)) === null);
      } catch (err) {
        deps.logger.warn({ accountId, err: redactText((err as Error).message) }, 'status document not deleted');
      }
    },
  };
}
