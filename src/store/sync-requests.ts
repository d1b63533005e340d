import type { Db } from './db.ts';

/**
 * The sync_requests table (migrations/014): a sync an operator asked for (`feedmirror sync`, the
 * dashboard's button), kept in PostgreSQL until it has run, so a Redis that loses the job (a
 * restart without persistence, a failover) cannot lose the request: the reconciler queues it
 * again under the same job id. One per account: a newer request replaces an older one.
 */
export type SyncRequester = 'cli' | 'dashboard';

export interface SyncRequest {
  accountId: string;
  jobId: string;
  requestedAt: Date;
  requestedBy: SyncRequester;
}

export async function recordSyncRequest(db: Db, r: SyncRequest): Promise<void> {
  await db.query(
    `INSERT INTO sync_requests (account_id, job_id, requested_at, requested_by) VALUES ($1, $2, $3, $4)
     ON CONFLICT (account_id) DO UPDATE
       SET job_id = EXCLUDED.job_id, requested_at = EXCLUDED.requested_at, requested_by = EXCLUDED.requested_by`,
    [r.accountId, r.jobId, r.requestedAt, r.requestedBy],
  );
}

/** Whether this job is an operator's pending request. */
export async function isSyncRequest(db: Db, accountId: string, jobId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM sync_requests WHERE account_id = $1 AND job_id = $2', [
    accountId,
    jobId,
  ]);
  return (rowCount ?? 0) > 0;
}

/** The request this job served has run: gone (a newer request of the account stays). */
export async function clearSyncRequest(db: Db, accountId: string, jobId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM sync_requests WHERE account_id = $1 AND job_id = $2', [
    accountId,
    jobId,
  ]);
  return (rowCount ?? 0) > 0;
}

export async function listSyncRequests(db: Db): Promise<SyncRequest[]> {
  const { rows } = await db.query<{
    account_id: string;
    job_id: string;
    requested_at: Date;
    requested_by: SyncRequester;
  }>('SELECT account_id, job_id, requested_at, requested_by FROM sync_requests ORDER BY requested_at');
  return rows.map((r) => ({
    accountId: r.account_id,
    jobId: r.job_id,
    requestedAt: r.requested_at,
    requestedBy: r.requested_by,
  }));
}
