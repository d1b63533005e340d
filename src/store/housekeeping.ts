import type { Clock } from '../util/clock.ts';
import { DAY } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import type { Db } from './db.ts';
import { pruneEvents } from './events.ts';
import { pruneInvitations } from './invitations.ts';
import { pruneReconnectLinks } from './owners.ts';
import { pruneLoginStates } from './login-states.ts';

/**
 * Daily housekeeping of the database, once per cluster (the maintenance queue's daily job):
 * login states that expired more than a day ago (they are single-use and live minutes), and
 * account events older than the retention (EVENT_RETENTION_DAYS), and invitations that expired or
 * were used long ago (store/invitations.ts pruneInvitations), and owners' reconnect links likewise.
 */
export interface HousekeepingDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  eventRetentionDays: number;
}

export interface HousekeepingResult {
  loginStates: number;
  events: number;
  invitations: number;
  reconnectLinks: number;
}

export async function runHousekeeping(deps: HousekeepingDeps): Promise<HousekeepingResult> {
  const now = deps.clock.now();
  const loginStates = await pruneLoginStates(deps.db, now);
  const events = await pruneEvents(deps.db, new Date(now.getTime() - deps.eventRetentionDays * DAY));
  const invitations = await pruneInvitations(deps.db, now);
  const reconnectLinks = await pruneReconnectLinks(deps.db, now);
  deps.logger.info(
    { loginStates, events, invitations, reconnectLinks, eventRetentionDays: deps.eventRetentionDays },
    'housekeeping: expired login states, old events, spent invitations and reconnect links deleted',
  );
  return { loginStates, events, invitations, reconnectLinks };
}
