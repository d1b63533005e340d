import type { Db } from '../store/db.ts';
import { markMissingObjects } from '../store/missing-copies.ts';

/**
 * Health knows what verify knows (R-HLT-4): every `object-missing` problem a check finds (the
 * command's or the worker's daily run, repairing or not) marks its copy in PostgreSQL
 * (src/store/missing-copies.ts). Until the copy is made again the account's health fails naming
 * it (images_missing), and the next sync or copy job makes it again rather than trusting its
 * record; a repair that copies it clears the mark, one that cannot (a rate limit) leaves it for
 * the next sync.
 */
export async function recordMissingObjects(
  db: Db,
  problems: ReadonlyArray<{ kind: string; accountId?: string; key?: string }>,
  checkedSince: Date,
): Promise<number> {
  const byAccount = new Map<string, string[]>();
  for (const p of problems) {
    if (p.kind !== 'object-missing' || !p.accountId || !p.key) continue;
    byAccount.set(p.accountId, [...(byAccount.get(p.accountId) ?? []), p.key]);
  }
  let marked = 0;
  for (const [accountId, keys] of byAccount)
    marked += await markMissingObjects(db, accountId, keys, { by: 'verify', at: checkedSince, checkedSince });
  return marked;
}
