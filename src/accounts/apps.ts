import type pg from 'pg';
import type { PlatformClient } from '../platform/client.ts';
import type { PlatformError } from '../platform/errors.ts';
import { isAppFault } from '../platform/errors.ts';
import type { TokenCipher } from '../store/crypto.ts';
import { clearAppFault, DEFAULT_APP, openApp, recordAppFault } from '../store/apps.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';

/**
 * Each account's calls go through its own app's client (Standard Access: one app per client).
 * Data calls need no secret (R-TOK-2: only the exchange carries it), so their clients are made
 * once per app and kept; an exchange opens the app's secret from PostgreSQL each time, so a
 * secret replaced with `feedmirror apps set` is used at once by every process.
 */
export interface PlatformApps {
  /** The client for data calls, refresh and renewal of an app's accounts (null: the default app). */
  data(app: string | null): PlatformClient;
  /** The client for an exchange (code or token), with the app's secret. */
  exchange(app: string | null): Promise<PlatformClient>;
  /** The platform refused the app's secret or restricted the app: recorded against the app. */
  fault(app: string | null, error: PlatformError): Promise<void>;
  /** The app answered as it should: a recorded fault of that kind is cleared. */
  worked(app: string | null, kind: 'app_secret_refused' | 'app_restricted'): Promise<void>;
}

export interface AppClientsDeps {
  db: pg.Pool;
  /** Asked only at an exchange (a command that never exchanges needs no key). */
  cipher: () => TokenCipher;
  clock: Clock;
  logger: Logger;
  /** APP_ID/APP_SECRET's client. */
  defaultClient: PlatformClient;
  /** A client for a named app (with its id and secret for an exchange). */
  make(app: { name: string; appId?: string; appSecret?: string }): PlatformClient;
  /** Told once when an app's fault is first recorded (the operator's alert). */
  onFault?(app: string, error: PlatformError): Promise<void>;
}

export function appClients(deps: AppClientsDeps): PlatformApps {
  const data = new Map<string, PlatformClient>();
  return {
    data(app) {
      if (app === null || app === DEFAULT_APP) return deps.defaultClient;
      let client = data.get(app);
      if (!client) {
        client = deps.make({ name: app });
        data.set(app, client);
      }
      return client;
    },
    async exchange(app) {
      if (app === null || app === DEFAULT_APP) return deps.defaultClient;
      const opened = await openApp(deps.db, deps.cipher(), app);
      return deps.make({ name: app, appId: opened.appId, appSecret: opened.appSecret });
    },
    async fault(app, error) {
      if (!isAppFault(error)) return;
      const name = app ?? DEFAULT_APP;
      deps.logger.error({ app: name, kind: error.errorKind, err: error }, `app ${name}: ${error.message}`);
      // The default app has no row: its fault shows in its accounts' own records.
      if (name === DEFAULT_APP) return;
      const first = await recordAppFault(
        deps.db,
        name,
        { kind: error.errorKind as 'app_secret_refused' | 'app_restricted', message: error.message },
        deps.clock.now(),
      );
      if (first) await deps.onFault?.(name, error);
    },
    async worked(app, kind) {
      if (app === null || app === DEFAULT_APP) return;
      await clearAppFault(deps.db, app, kind);
    },
  };
}

/** The client of an account's app for data calls; without apps (tests, one app), the one client. */
export function dataClient(
  deps: { platform: PlatformClient; apps?: PlatformApps },
  app: string | null,
): PlatformClient {
  return deps.apps ? deps.apps.data(app) : deps.platform;
}

/** The same for an exchange. */
export async function exchangeClient(
  deps: { platform: PlatformClient; apps?: PlatformApps },
  app: string | null,
): Promise<PlatformClient> {
  return deps.apps ? deps.apps.exchange(app) : deps.platform;
}
