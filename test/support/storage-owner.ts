import type { ObjectStorage } from '../../src/storage/types.ts';
import { claimStorage } from '../../src/deletion/marker.ts';
import type { Db } from '../../src/store/db.ts';
import { systemClock } from '../../src/util/clock.ts';

/**
 * Make a test's storage this deployment's (R-DEL-1): the deployment marker written with the id
 * its database keeps, as `feedmirror doctor --create` writes it. Set-ups that put objects into
 * storage themselves (so no worker start could claim it) call this before anything is deleted;
 * without it, the deletion guard deletes nothing, as it must.
 */
export async function ownStorage(db: Db, storage: ObjectStorage): Promise<void> {
  const o = await claimStorage({ db, storage, clock: systemClock }, { operator: true });
  if (o.state !== 'ours') throw new Error(`the test storage could not be marked as this deployment's: ${o.state}`);
}
