import type { Db } from './db.ts';
import { listMediaCopies } from './posts.ts';

/**
 * The missing_copies table (migrations/021_missing_copies.sql): copies whose objects a published
 * feed points at and storage lacks. `feedmirror verify` records them (markMissingObjects); the
 * account's health reads them (health-facts.ts, images_missing); the sync counts such a copy as not
 * copied (sync-context.ts) and the copy job makes it again, never trusting its manifest
 * (getPostForCopy); saving the copy deletes the row (saveMediaCopy), so a repair or sync that
 * could not copy it (a rate limit) leaves it for the next one.
 */
export type MissingFoundBy = 'verify';

/**
 * Mark the copies of an account that the given object keys belong to (an original or one of its
 * sizes) as missing. A key no recorded copy names is left out (verify's republish drops it from
 * the feed), and so is a copy saved after `checkedSince`: it was copied again while the check ran.
 * A copy already marked keeps its first finding. Returns how many copies are newly marked.
 */
export async function markMissingObjects(
  db: Db,
  accountId: string,
  keys: readonly string[],
  found: { by: MissingFoundBy; at: Date; checkedSince: Date },
): Promise<number> {
  if (keys.length === 0) return 0;
  const wanted = new Set(keys);
  const marks = new Map<string, { mediaId: string; slot: string; key: string }>();
  for (const c of await listMediaCopies(db, accountId)) {
    const key = [c.key, ...c.variants.map((v) => v.key)].find((k) => wanted.has(k));
    if (key !== undefined) marks.set(`${c.mediaId}/${c.slot}`, { mediaId: c.mediaId, slot: c.slot, key });
  }
  if (marks.size === 0) return 0;
  const list = [...marks.values()];
  const { rowCount } = await db.query(
    `INSERT INTO missing_copies (account_id, media_id, slot, key, found_by, found_at)
     SELECT c.account_id, c.media_id, c.slot, x.key, $5, $6
       FROM unnest($2::text[], $3::text[], $4::text[]) AS x(media_id, slot, key)
       JOIN media_copies c ON c.account_id = $1 AND c.media_id = x.media_id AND c.slot = x.slot
      WHERE c.copied_at <= $7
     ON CONFLICT (account_id, media_id, slot) DO NOTHING`,
    [
      accountId,
      list.map((m) => m.mediaId),
      list.map((m) => m.slot),
      list.map((m) => m.key),
      found.by,
      found.at,
      found.checkedSince,
    ],
  );
  return rowCount ?? 0;
}

export interface MissingCopy {
  accountId: string;
  mediaId: string;
  slot: string;
  key: string;
  foundBy: MissingFoundBy;
  foundAt: Date;
}

/** An account's copies marked missing, of its stored posts, the earliest found first. */
export async function listMissingCopies(db: Db, accountId: string): Promise<MissingCopy[]> {
  const { rows } = await db.query<{
    account_id: string;
    media_id: string;
    slot: string;
    key: string;
    found_by: MissingFoundBy;
    found_at: Date;
  }>(
    `SELECT m.* FROM missing_copies m
       JOIN posts p ON p.account_id = m.account_id AND p.media_id = m.media_id
      WHERE m.account_id = $1 ORDER BY m.found_at, m.media_id, m.slot`,
    [accountId],
  );
  return rows.map((r) => ({
    accountId: r.account_id,
    mediaId: r.media_id,
    slot: r.slot,
    key: r.key,
    foundBy: r.found_by,
    foundAt: r.found_at,
  }));
}
