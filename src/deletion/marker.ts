import { z } from 'zod';
import { contentHash } from '../util/content-hash.ts';
import { DEPLOYMENT_MARKER_KEY, feedKey } from '../storage/keys.ts';
import type { ObjectStorage } from '../storage/types.ts';
import type { Db } from '../store/db.ts';
import { getDeployment, type Deployment } from '../store/deployment.ts';
import { getFeedPublication } from '../store/posts.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { ID_PATTERN } from '../util/ids.ts';

/**
 * The deployment marker (R-DEL-1): `feedmirror/deployment.json` in the storage, carrying the id
 * this deployment keeps in PostgreSQL (migrations/020_deployment.sql). Nothing is deleted from a
 * storage whose marker is missing, unreadable or another deployment's: a wrong STORAGE_URL, or
 * two deployments in one bucket, then lose nothing.
 *
 * The marker is written (claimStorage) only
 * - to a storage with nothing under media/ (a new one: nothing there a delete could reach), at
 *   the start of worker, serve or `sync --wait`;
 * - to a storage holding one of this deployment's feeds as published before this version ran
 *   (the upgrade: a feed of the deployment row's claim evidence, its record unchanged since, and
 *   what storage holds has its recorded content hash), at the same starts;
 * - by the operator, `feedmirror doctor --create`, whatever the storage holds;
 * and never over a marker that is there, whatever it says.
 */

const markerSchema = z.object({
  feedmirror: z.literal('deployment-marker'),
  deploymentId: z.string().regex(ID_PATTERN),
});

export type Ownership =
  /** The marker carries this deployment's id: deletes may go on (through the guard). */
  | { state: 'ours'; deploymentId: string }
  /** No marker. */
  | { state: 'unclaimed'; deploymentId: string }
  /** The marker of another deployment. */
  | { state: 'foreign'; deploymentId: string; markerId: string }
  /** Something at the marker's key that is not a marker feedmirror writes. */
  | { state: 'unreadable'; deploymentId: string };

/** Whose storage this is, read now: one GET of the marker and the deployment row. */
export async function readOwnership(db: Db, storage: ObjectStorage): Promise<Ownership> {
  const { id } = await getDeployment(db);
  return ownershipOf(id, await storage.get(DEPLOYMENT_MARKER_KEY));
}

function ownershipOf(deploymentId: string, obj: { body: Buffer } | null): Ownership {
  if (!obj) return { state: 'unclaimed', deploymentId };
  let parsed;
  try {
    parsed = markerSchema.safeParse(JSON.parse(obj.body.toString('utf8')));
  } catch {
    return { state: 'unreadable', deploymentId };
  }
  if (!parsed.success) return { state: 'unreadable', deploymentId };
  return parsed.data.deploymentId === deploymentId
    ? { state: 'ours', deploymentId }
    : { state: 'foreign', deploymentId, markerId: parsed.data.deploymentId };
}

/** What an operator reads when deletes are refused: what is wrong and what to do. */
export function ownershipNotice(o: Ownership): { line: string; fix: string } {
  const key = DEPLOYMENT_MARKER_KEY;
  switch (o.state) {
    case 'ours':
      return { line: `${key} carries this deployment's id ${o.deploymentId}`, fix: '' };
    case 'unclaimed':
      return {
        line: `the storage has no deployment marker (${key}): nothing is deleted from it, so copies of deleted posts stay`,
        fix: "if STORAGE_URL is this deployment's own storage, run `feedmirror doctor --create` to write the marker; if it is not, fix STORAGE_URL",
      };
    case 'foreign':
      return {
        line: `the storage's ${key} carries deployment ${o.markerId}, not this deployment (${o.deploymentId}): nothing is deleted from it`,
        fix: "point STORAGE_URL at this deployment's own storage (two deployments never share one); if the storage is this deployment's after all, delete the marker by hand and run `feedmirror doctor --create`",
      };
    case 'unreadable':
      return {
        line: `the storage's ${key} is not a marker feedmirror writes: nothing is deleted from it`,
        fix: 'look at the file: if no deployment wrote it, delete it by hand and run `feedmirror doctor --create`; otherwise fix STORAGE_URL',
      };
  }
}

export type ClaimOutcome = Ownership & {
  /** Set when the marker was written now (or, with dryRun, would be): why. */
  claimed?: 'empty' | 'own-feeds' | 'operator';
};

export interface ClaimDeps {
  db: Db;
  storage: ObjectStorage;
  clock: Clock;
}

/**
 * Write the marker when the storage has none and may be taken as this deployment's (see above).
 * `operator`: the operator says it is (doctor --create). `dryRun`: say what would happen, write
 * nothing (doctor). After writing, the marker is read back: of two deployments claiming one
 * storage at the same moment, the one whose marker stays is the owner; the other is told.
 */
export async function claimStorage(
  deps: ClaimDeps,
  opts: { operator?: boolean; dryRun?: boolean } = {},
): Promise<ClaimOutcome> {
  const deployment = await getDeployment(deps.db);
  const now = ownershipOf(deployment.id, await deps.storage.get(DEPLOYMENT_MARKER_KEY));
  if (now.state !== 'unclaimed') return now;
  const why = opts.operator
    ? 'operator'
    : (await nothingUnderMedia(deps.storage))
      ? 'empty'
      : (await holdsOwnFeed(deps, deployment))
        ? 'own-feeds'
        : undefined;
  if (!why) return now;
  if (opts.dryRun) return { ...now, claimed: why };
  const marker = {
    feedmirror: 'deployment-marker',
    deploymentId: deployment.id,
    claimedAt: deps.clock.now().toISOString(),
    about:
      'This storage belongs to the feedmirror deployment whose PostgreSQL keeps this id. feedmirror deletes nothing from a storage whose marker is missing or carries another id. Do not copy this file into another storage.',
  };
  await deps.storage.put(DEPLOYMENT_MARKER_KEY, Buffer.from(JSON.stringify(marker, null, 2) + '\n'), {
    contentType: 'application/json',
    cacheControl: 'no-store',
  });
  const after = ownershipOf(deployment.id, await deps.storage.get(DEPLOYMENT_MARKER_KEY));
  return after.state === 'ours' ? { ...after, claimed: why } : after;
}

const CLAIMED_BECAUSE: Record<NonNullable<ClaimOutcome['claimed']>, string> = {
  empty: 'nothing was under media/ yet',
  'own-feeds': "it holds this deployment's feeds as published before the upgrade",
  operator: 'the operator said so (doctor --create)',
};

/** Why the marker was (or would be) written, in words. */
export function claimedBecause(why: NonNullable<ClaimOutcome['claimed']>): string {
  return CLAIMED_BECAUSE[why];
}

/**
 * The start of worker, serve and `sync --wait`: the marker written when the storage may be taken
 * as this deployment's, and one line saying so, or saying why nothing will be deleted from it.
 */
export async function claimAtStart(deps: ClaimDeps & { logger: Logger }): Promise<ClaimOutcome> {
  const o = await claimStorage(deps);
  if (o.claimed)
    deps.logger.info(
      { deploymentId: o.deploymentId },
      `storage claimed for this deployment: ${DEPLOYMENT_MARKER_KEY} written, since ${claimedBecause(o.claimed)}`,
    );
  else if (o.state !== 'ours') {
    const { line, fix } = ownershipNotice(o);
    deps.logger.warn({ storage: o.state, deploymentId: o.deploymentId }, `${line} -> ${fix}`);
  }
  return o;
}

async function nothingUnderMedia(storage: ObjectStorage): Promise<boolean> {
  for await (const _key of storage.list('media/')) return false;
  return true;
}

/**
 * The upgrade's proof: a feed published before this version ran (the claim evidence), whose
 * record has not changed since, is in this storage as recorded. A feed this version wrote proves
 * nothing (it may have written it into a wrong storage), and its record then says a later time.
 */
async function holdsOwnFeed(deps: ClaimDeps, deployment: Deployment): Promise<boolean> {
  for (const e of deployment.claimEvidence) {
    const publication = await getFeedPublication(deps.db, e.accountId);
    if (
      !publication ||
      publication.demo ||
      publication.feedHash !== e.feedHash ||
      publication.publishedAt.getTime() !== e.publishedAt.getTime()
    )
      continue;
    const obj = await deps.storage.get(feedKey(e.accountId));
    if (!obj) continue;
    try {
      // As publish hashes it: fetchedAt is left out.
      const { fetchedAt: _f, ...content } = JSON.parse(obj.body.toString('utf8')) as Record<string, unknown>;
      if (contentHash(content) === e.feedHash) return true;
    } catch {
      // not JSON: not the feed recorded
    }
  }
  return false;
}
