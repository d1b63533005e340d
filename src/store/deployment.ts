import { randomBytes } from 'node:crypto';
import type { Db } from './db.ts';

/**
 * The deployment table (migrations/020_deployment.sql): this deployment's id, made once, which
 * the storage's deployment marker must carry before anything is deleted from it (R-DEL-1), and
 * the feeds published before the upgrade that may prove an unmarked storage is this one's.
 */
export interface ClaimEvidence {
  accountId: string;
  /** The feed's content hash as recorded then (without fetchedAt, link signatures aside). */
  feedHash: string;
  /** When it was published: the record still says so only while the feed was not written since. */
  publishedAt: Date;
}

export interface Deployment {
  id: string;
  createdAt: Date;
  claimEvidence: ClaimEvidence[];
}

interface DeploymentRow {
  id: string;
  created_at: Date;
  claim_evidence: Array<{ accountId: string; feedHash: string; publishedAt: string }>;
}

/**
 * This deployment's identity. The migration makes it; should the row ever be missing it is made
 * here, once (one statement: of processes racing, every one reads the same id).
 */
export async function getDeployment(db: Db): Promise<Deployment> {
  const read = async () =>
    (await db.query<DeploymentRow>('SELECT id, created_at, claim_evidence FROM deployment')).rows[0];
  let row = await read();
  if (!row) {
    await db.query('INSERT INTO deployment (id) VALUES ($1) ON CONFLICT (singleton) DO NOTHING', [
      randomBytes(16).toString('hex'),
    ]);
    row = await read();
  }
  if (!row) throw new Error('the deployment row could not be made');
  return {
    id: row.id,
    createdAt: row.created_at,
    claimEvidence: row.claim_evidence.map((e) => ({
      accountId: e.accountId,
      feedHash: e.feedHash,
      publishedAt: new Date(e.publishedAt),
    })),
  };
}
