import type pg from 'pg';
import type { PlatformClient } from '../platform/client.ts';
import type { PlatformApps } from '../accounts/apps.ts';
import type { MirrorLimits } from '../mirror/copy.ts';
import type { PipelineMetrics } from '../metrics/index.ts';
import type { ObjectStorage } from '../storage/types.ts';
import type { TokenCipher } from '../store/crypto.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import type { AccountLifecycle } from '../accounts/lifecycle.ts';
import type { EventSink } from '../webhooks/events.ts';
import type { StatusPublisher } from '../accounts/status-document.ts';
import type { DeleteCap } from '../deletion/guard.ts';

/** Everything the feed pipeline (sync, copy, publish) works with; built once by the caller. */
export interface FeedDeps {
  db: pg.Pool;
  cipher: TokenCipher;
  platform: PlatformClient;
  /** Each account's calls through its own app's client (without: `platform` for every account). */
  apps?: PlatformApps;
  storage: ObjectStorage;
  limits: MirrorLimits;
  clock: Clock;
  logger: Logger;
  /** R-CNV-12: what to do with copyright-flagged items (default drop). */
  copyrightItems?: 'drop' | 'text-card';
  /** Longest Cache-Control max-age of a feed, in seconds (default 300): feeds change every sync. */
  feedMaxAgeSeconds?: number;
  /** Re-publish an unchanged feed this long before its platform links (video files) die (default 1 day). */
  relinkMarginMs?: number;
  /**
   * Account state changes (R-TOK-10: a sync that finds the owner must act stops the account's
   * schedules and alerts). Without it, statusOnlyLifecycle: the state changes, nothing else.
   */
  lifecycle?: Pick<AccountLifecycle, 'apply'>;
  /** Sync durations, images copied, job failures, rate-limit waits (the worker's /metrics). */
  metrics?: PipelineMetrics;
  /** Webhook events (feed.updated); none = no webhooks. */
  events?: EventSink;
  /**
   * Told after an account's feed was published (written or unchanged) and after its sync failed:
   * the widgets that merge the account republish (R-WID-5). It must not throw (the widgets'
   * listener logs its own failures); the feed pipeline never waits on widgets beyond this call.
   */
  sourceChanged?: (accountId: string) => Promise<void>;
  /** The public status document (PUBLISH_STATUS): written with every feed publish (R-OWN-16). */
  status?: Pick<StatusPublisher, 'publish'>;
  /** R-NET-6: the most items a listing may read while more pages follow (LISTING_MAX_ITEMS; default 5000). */
  listingMaxItems?: number;
  /** R-DEL-4: DELETE_CAP_OBJECTS and DELETE_CAP_SHARE (the guard's defaults without). */
  deleteCap?: DeleteCap;
}
