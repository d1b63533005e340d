import type { Simulator } from '../../src/simulator/types.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import type { TokenCipher } from '../../src/store/crypto.ts';
import type { Db } from '../../src/store/db.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY } from '../../src/util/clock.ts';

/**
 * A simulator account as `feedmirror accounts import` leaves it: its row, and a long-lived token
 * issued now and good for 60 days (or `validForMs`), stored encrypted. Importing it again stores a
 * fresh token, as connecting the account again does.
 */
export async function importSimAccount(
  db: Db,
  cipher: TokenCipher,
  sim: Simulator,
  acc: { id: string; username: string },
  validForMs = 60 * DAY,
): Promise<void> {
  await upsertAccount(db, { id: acc.id, username: acc.username }, sim.clock.now());
  await saveToken(
    db,
    cipher,
    {
      accountId: acc.id,
      accessToken: sim.issueLongLivedToken(acc.id),
      obtainedAt: sim.clock.now(),
      expiresAt: new Date(sim.clock.now().getTime() + validForMs),
    },
    'imported',
  );
}
