import type { Db } from './db.ts';

/**
 * Video copies and their caps (migrations/025_video_copies.sql): how many bytes of video an
 * account's copies hold (VIDEO_MAX_BYTES_PER_ACCOUNT is checked against it before a download),
 * and the videos left platform links because of a cap (videos_over_cap), which the account's
 * health reports (videos_over_cap reason). Saving the slot's copy deletes its row (saveMediaCopy).
 */
export type VideoCap = 'file' | 'account';

export interface VideoOverCap {
  accountId: string;
  mediaId: string;
  slot: string;
  cap: VideoCap;
  limitBytes: number;
  /** The file's size when known (announced by the host, or read before the cap stopped it). */
  fileBytes: number | null;
  notedAt: Date;
}

/** Bytes of the account's recorded video copies, other than `exceptSlot` of `exceptMediaId` (the one being copied again). */
export async function videoBytesOfAccount(
  db: Db,
  accountId: string,
  except?: { mediaId: string; slot: string },
): Promise<number> {
  const { rows } = await db.query<{ bytes: string }>(
    `SELECT coalesce(sum(bytes), 0) AS bytes FROM media_copies
      WHERE account_id = $1 AND content_type LIKE 'video/%'
        AND NOT (media_id = $2 AND slot = $3)`,
    [accountId, except?.mediaId ?? '', except?.slot ?? ''],
  );
  return Number(rows[0]?.bytes ?? 0);
}

/** Record (or update) a video left a platform link because of a cap. A post no longer stored records nothing. */
export async function noteVideoOverCap(db: Db, v: VideoOverCap): Promise<void> {
  await db.query(
    `INSERT INTO videos_over_cap (account_id, media_id, slot, cap, limit_bytes, file_bytes, noted_at)
     SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM posts WHERE account_id = $1 AND media_id = $2)
     ON CONFLICT (account_id, media_id, slot) DO UPDATE SET
       cap = EXCLUDED.cap, limit_bytes = EXCLUDED.limit_bytes, file_bytes = EXCLUDED.file_bytes, noted_at = EXCLUDED.noted_at`,
    [v.accountId, v.mediaId, v.slot, v.cap, v.limitBytes, v.fileBytes, v.notedAt],
  );
}

/** The account's videos over a cap, first noted first. */
export async function listVideosOverCap(db: Db, accountId: string): Promise<VideoOverCap[]> {
  const { rows } = await db.query<{
    account_id: string;
    media_id: string;
    slot: string;
    cap: VideoCap;
    limit_bytes: string;
    file_bytes: string | null;
    noted_at: Date;
  }>('SELECT * FROM videos_over_cap WHERE account_id = $1 ORDER BY noted_at, media_id, slot', [accountId]);
  return rows.map((r) => ({
    accountId: r.account_id,
    mediaId: r.media_id,
    slot: r.slot,
    cap: r.cap,
    limitBytes: Number(r.limit_bytes),
    fileBytes: r.file_bytes === null ? null : Number(r.file_bytes),
    notedAt: r.noted_at,
  }));
}

/** Forget a slot's cap mark (its post no longer has that video, or mirroring is off). */
export async function clearVideoOverCap(db: Db, accountId: string, mediaId: string, slot: string): Promise<void> {
  await db.query('DELETE FROM videos_over_cap WHERE account_id = $1 AND media_id = $2 AND slot = $3', [
    accountId,
    mediaId,
    slot,
  ]);
}
