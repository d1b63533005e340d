import type { DeletionRun, MediaDeletion } from '../deletion/guard.ts';
import { recordedMediaKeys } from '../feeds/publish.ts';
import type { ObjectStorage } from '../storage/types.ts';
import type { Db } from '../store/db.ts';
import { listMediaCopiesOf } from '../store/posts.ts';
import type { VerifyFinding } from '../store/verify-runs.ts';

/**
 * verify --repair's only delete: the orphans its check found, through the deletion guard
 * (R-DEL-1..4). The check may be minutes old by then, so each orphan is looked at again right
 * before its delete: still unreferenced by its media item's copy records, and still older than
 * the grace period (a copy in flight rewrites its content-addressed name before it records it).
 */

/** What the repair reports of one account's orphans: each deleted one, and the rest summed up. */
export interface OrphanAction extends VerifyFinding {
  kind: 'deleted-orphan' | 'orphan-kept' | 'delete-held' | 'delete-refused';
}

export async function deleteOrphans(
  deps: { db: Db; storage: ObjectStorage },
  deletions: DeletionRun,
  accountId: string,
  orphans: readonly string[],
  ctx: { total: number; graceMs: number; now: () => Date; forceWith: string },
): Promise<OrphanAction[]> {
  const r = await deletions.removeMediaObjects(accountId, orphans, {
    total: ctx.total,
    stillUnreferenced: async (key) => {
      const copies = await listMediaCopiesOf(deps.db, accountId, key.split('/')[2]!);
      if (recordedMediaKeys(accountId, copies).has(key)) return false;
      const head = await deps.storage.head(key);
      if (!head) return false; // gone meanwhile: nothing to delete
      return !head.lastModified || ctx.now().getTime() - head.lastModified.getTime() >= ctx.graceMs;
    },
  });
  return orphanActions(accountId, r, ctx.forceWith);
}

function orphanActions(accountId: string, r: MediaDeletion, forceWith: string): OrphanAction[] {
  const out: OrphanAction[] = r.deleted.map((key) => ({
    kind: 'deleted-orphan',
    accountId,
    key,
    detail: 'unreferenced past the grace period',
  }));
  const some = (keys: readonly string[]) => `${keys.length} orphan${keys.length === 1 ? '' : 's'} (first ${keys[0]})`;
  if (r.kept.length > 0)
    out.push({
      kind: 'orphan-kept',
      accountId,
      detail: `${some(r.kept)} referenced again, or rewritten, when looked at right before the delete: kept`,
    });
  if (r.held.length > 0)
    out.push({
      kind: 'delete-held',
      accountId,
      detail: `${some(r.held)} not deleted: more at once than DELETE_CAP_OBJECTS and DELETE_CAP_SHARE allow; \`${forceWith}\` deletes them once you have looked`,
    });
  const reasons = new Map<string, string[]>();
  for (const { key, reason } of r.refused) reasons.set(reason, [...(reasons.get(reason) ?? []), key]);
  for (const [reason, keys] of reasons)
    out.push({ kind: 'delete-refused', accountId, detail: `${some(keys)} not deleted: ${reason}` });
  return out;
}
