import { validateFeed } from '../schema/validate.ts';
import { feedKey, parseOwnedKey, statusKey, widgetDocumentKey, widgetFragmentKey } from '../storage/keys.ts';
import type { ObjectStorage } from '../storage/types.ts';
import { getAccount } from '../store/accounts.ts';
import type { Db } from '../store/db.ts';
import { HOUR, systemClock, type Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { ownershipNotice, readOwnership, type Ownership } from './marker.ts';
import { feedReferences } from './references.ts';

/**
 * Deleting from storage: the one guard every deleting path goes through (the publish's prune and
 * sweep, the media sweep, verify's repair, a widget's and a status document's removal, the
 * housekeeping of temporary files, the probes). Deleting is the most dangerous thing feedmirror
 * does, so nothing is deleted that feedmirror cannot prove it wrote:
 *
 * - R-DEL-1 the storage carries this deployment's marker (./marker.ts), read at the start of the run;
 * - R-DEL-2 the key is one feedmirror writes (parseOwnedKey): never a README, a feed, a name the
 *   copy never makes;
 * - R-DEL-3 the account is in PostgreSQL and its published feed is in storage and readable; the
 *   caller's record (copy row, post row) and the published feed are read again right before each
 *   delete, so an object that became referenced meanwhile is kept; nothing the feed points at is
 *   ever deleted (R-OWN-6);
 * - R-DEL-4 a run that would delete more than `objects` and more than `share` of an account's
 *   objects deletes none of them: it holds them and says so, until the operator's --force.
 *
 * A run answers what it deleted, kept, held and refused; callers report it (the publish's log,
 * the media sweep's result, verify's report).
 */

/**
 * R-DEL-4: a run holds an account's deletes when they are more than `objects` AND more than
 * `share` of its objects. The floor lets the normal case through on any account (a post deleted
 * at the source, R-LNK-6, is at most a few dozen objects: an original, its variants and its
 * manifest per image); the share lets a large account prune many posts at once (R-OWN-7 already
 * holds a listing that would remove more than half of a feed). What is left is a mass deletion:
 * most of a large set at once.
 */
export interface DeleteCap {
  objects: number;
  share: number;
}
export const DEFAULT_DELETE_CAP: DeleteCap = { objects: 200, share: 0.5 };

export interface DeletionDeps {
  db: Db;
  storage: ObjectStorage;
  logger: Logger;
  clock?: Clock;
  /** DELETE_CAP_OBJECTS and DELETE_CAP_SHARE; DEFAULT_DELETE_CAP without. */
  deleteCap?: DeleteCap;
}

export interface DeletionRunOptions {
  /** Who deletes, for the log: 'publish', 'media sweep', 'verify --repair', ... */
  by: string;
  /** The operator's --force: past the cap, never past the marker, the key grammar or the records. */
  force?: boolean;
  /** The command that deletes what the cap held, named when it holds. */
  forceWith?: string;
  /**
   * Runs as frequent as publishes: a refusal for want of a marker is logged at most once an hour
   * by this process, not once per run.
   */
  frequent?: boolean;
}

export interface MediaDeletion {
  deleted: string[];
  /** Referenced again when read just before its delete (or by the published feed): kept. */
  kept: string[];
  /** Over the cap: not deleted (R-DEL-4). */
  held: string[];
  /** Not provably ours: never deleted, with why. */
  refused: Array<{ key: string; reason: string }>;
}

export interface MediaRecord {
  /**
   * How many objects the account has under media/ (listed, or as its copy records count them):
   * the cap's share is of this.
   */
  total: number;
  /** The caller's record, read again right before the delete of `key`: false keeps it. */
  stillUnreferenced(key: string): Promise<boolean>;
}

/** Open a run: the deployment's id and the storage's marker, read once for the whole run. */
export async function openDeletions(deps: DeletionDeps, opts: DeletionRunOptions): Promise<DeletionRun> {
  return new DeletionRun(deps, opts, await readOwnership(deps.db, deps.storage));
}

/** Refusals already logged by frequent runs of this process: reason => when. */
const noticedAt = new Map<string, number>();

interface FeedState {
  ok: boolean;
  reason?: string;
  references: Set<string>;
  version?: string;
}

export class DeletionRun {
  private noticed = false;

  constructor(
    private readonly deps: DeletionDeps,
    private readonly opts: DeletionRunOptions,
    readonly ownership: Ownership,
  ) {}

  /** Why nothing may be deleted in this run (R-DEL-1), or null when the storage is this deployment's. */
  get refusal(): string | null {
    return this.ownership.state === 'ours' ? null : ownershipNotice(this.ownership).line;
  }

  /**
   * Delete `candidates` (objects under media/<accountId>/ that the caller found unreferenced), as
   * far as the guard allows. Storage errors are thrown (the caller's job retries).
   */
  async removeMediaObjects(
    accountId: string,
    candidates: readonly string[],
    record: MediaRecord,
  ): Promise<MediaDeletion> {
    const out: MediaDeletion = { deleted: [], kept: [], held: [], refused: [] };
    if (candidates.length === 0) return out;
    const refuse = (keys: readonly string[], reason: string) => {
      for (const key of keys) out.refused.push({ key, reason });
      return out;
    };
    if (!this.allowed()) return refuse(candidates, this.refusal!);
    // R-DEL-2: only names feedmirror writes, under this account.
    const ours: string[] = [];
    for (const key of candidates) {
      const k = parseOwnedKey(key);
      if (k?.kind === 'media' && k.accountId === accountId) ours.push(key);
      else out.refused.push({ key, reason: 'not a name feedmirror writes under this account' });
    }
    if (out.refused.length > 0)
      this.deps.logger.info(
        { accountId, by: this.opts.by, objects: out.refused.length, first: out.refused[0]!.key },
        'objects under media/ that feedmirror did not write are left alone',
      );
    if (ours.length === 0) return out;
    // R-DEL-3: the account is this deployment's, and its feed is there to say what it needs.
    if (!(await getAccount(this.deps.db, accountId))) return refuse(ours, 'the account is not in PostgreSQL');
    let feed = await this.readFeed(accountId);
    if (!feed.ok) {
      this.deps.logger.warn(
        { accountId, by: this.opts.by, objects: ours.length },
        `deletes refused: ${feed.reason}; nothing of this account is deleted until its feed is published again`,
      );
      return refuse(ours, feed.reason!);
    }
    const planned: string[] = [];
    for (const key of ours) (feed.references.has(key) ? out.kept : planned).push(key);
    // R-DEL-4: a mass deletion waits for the operator.
    const cap = this.deps.deleteCap ?? DEFAULT_DELETE_CAP;
    const total = Math.max(record.total, planned.length);
    if (!this.opts.force && planned.length > cap.objects && planned.length > cap.share * total) {
      out.held.push(...planned);
      this.deps.logger.warn(
        { accountId, by: this.opts.by, objects: planned.length, of: total },
        `deletes held: this run would delete ${planned.length} of the account's ${total} objects, more than ${cap.objects} (DELETE_CAP_OBJECTS) and more than ${Math.round(cap.share * 100)}% (DELETE_CAP_SHARE) at once; nothing deleted${this.opts.forceWith ? `; \`${this.opts.forceWith}\` deletes them once you have looked` : ''}`,
      );
      return out;
    }
    for (let i = 0; i < planned.length; i++) {
      const key = planned[i]!;
      // The published feed, read again when it changed since (one HEAD), and the caller's record.
      feed = await this.feedNow(accountId, feed);
      if (!feed.ok) return refuse(planned.slice(i), feed.reason!);
      if (feed.references.has(key) || !(await record.stillUnreferenced(key))) {
        out.kept.push(key);
        continue;
      }
      await this.deps.storage.delete(key);
      out.deleted.push(key);
    }
    return out;
  }

  /**
   * A widget's two objects (R-WID-5), while the widget is still recorded (`stillRecorded`, read
   * right before each delete). Returns the keys deleted, or why none was.
   */
  async removeWidgetObjects(
    widgetId: string,
    stillRecorded: () => Promise<boolean>,
  ): Promise<{ deleted: string[]; refused?: string }> {
    const keys = [widgetDocumentKey(widgetId), widgetFragmentKey(widgetId)];
    if (!this.allowed()) return { deleted: [], refused: this.refusal! };
    const deleted: string[] = [];
    for (const key of keys) {
      const k = parseOwnedKey(key);
      if (k?.kind !== 'widget' || k.widgetId !== widgetId) continue;
      if (!(await stillRecorded())) return { deleted, refused: 'the widget is no longer recorded' };
      await this.deps.storage.delete(key);
      deleted.push(key);
    }
    return { deleted };
  }

  /**
   * An account's status document (R-OWN-16), once the account is gone (`accountGone`, read right
   * before the delete: an account connected again meanwhile keeps it). Returns whether deleted.
   */
  async removeStatusDocument(accountId: string, accountGone: () => Promise<boolean>): Promise<boolean> {
    const key = statusKey(accountId);
    if (!this.allowed() || parseOwnedKey(key)?.kind !== 'status') return false;
    if (!(await accountGone())) return false;
    await this.deps.storage.delete(key);
    return true;
  }

  /** R-NET-4: the temporary files unfinished writes left before `olderThan`; how many were removed. */
  async sweepLeftovers(olderThan: Date): Promise<number> {
    if (!this.allowed()) return 0;
    return this.deps.storage.sweepLeftovers(olderThan);
  }

  /** R-DEL-1, with the refusal logged once per run (or once an hour for frequent runs). */
  private allowed(): boolean {
    if (this.ownership.state === 'ours') return true;
    if (!this.noticed) {
      this.noticed = true;
      const { line, fix } = ownershipNotice(this.ownership);
      const now = (this.deps.clock ?? systemClock).now().getTime();
      const last = noticedAt.get(line);
      if (!this.opts.frequent || last === undefined || now - last >= HOUR || now < last) {
        noticedAt.set(line, now);
        this.deps.logger.warn(
          { by: this.opts.by, storage: this.ownership.state },
          `deletes refused: ${line} -> ${fix}`,
        );
      }
    }
    return false;
  }

  /** The account's published feed: there, schema v1, and what it points at (none for the demo feed). */
  private async readFeed(accountId: string): Promise<FeedState> {
    const obj = await this.deps.storage.get(feedKey(accountId));
    if (!obj) return { ok: false, reason: `its feed ${feedKey(accountId)} is not in storage`, references: new Set() };
    let parsed: unknown;
    try {
      parsed = JSON.parse(obj.body.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    const valid = parsed === undefined ? undefined : validateFeed(parsed);
    if (!valid?.ok)
      return {
        ok: false,
        reason: `its feed ${feedKey(accountId)} is not a readable schema v1 feed`,
        references: new Set(),
      };
    if (!valid.feed.demo && valid.feed.origin.id !== accountId)
      return { ok: false, reason: `its feed ${feedKey(accountId)} is another account's`, references: new Set() };
    return {
      ok: true,
      references: valid.feed.demo ? new Set() : feedReferences(valid.feed, accountId),
      version: versionOf({ size: obj.body.length, etag: obj.etag, lastModified: obj.lastModified }),
    };
  }

  /** The feed as it is now: the one read before while its HEAD says it is unchanged. */
  private async feedNow(accountId: string, before: FeedState): Promise<FeedState> {
    const head = await this.deps.storage.head(feedKey(accountId));
    if (head && before.version !== undefined && versionOf(head) === before.version) return before;
    return this.readFeed(accountId);
  }
}

function versionOf(o: { size: number; etag?: string | undefined; lastModified?: Date | undefined }): string {
  return `${o.size}:${o.etag ?? ''}:${o.lastModified?.getTime() ?? ''}`;
}

/**
 * A probe deleted by the process that wrote it a moment ago (readiness, doctor): only a probe's
 * name (R-DEL-2), and only while it still holds the random bytes written (read again right
 * before the delete). Probes need no marker: their own write is the proof, and a storage that is
 * not this deployment's must not fill with them.
 */
export async function removeProbe(
  storage: Pick<ObjectStorage, 'get' | 'delete'>,
  key: string,
  body: Buffer,
): Promise<boolean> {
  if (parseOwnedKey(key)?.kind !== 'probe') return false;
  const now = await storage.get(key);
  if (!now || !now.body.equals(body)) return false;
  await storage.delete(key);
  return true;
}
