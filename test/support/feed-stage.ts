import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { AccountLifecycle, NO_SCHEDULES } from '../../src/accounts/lifecycle.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { mirrorLimitsFromConfig } from '../../src/mirror/copy.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createStorage } from '../../src/storage/index.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createLogger } from '../../src/util/logger.ts';
import { widgetRepublisher, type WidgetDeps } from '../../src/widgets/publish.ts';
import { migratedDatabase } from './services.ts';
import { noSleep, simPlatformClient } from './sim-platform.ts';

export interface FeedStage {
  db: pg.Pool;
  databaseUrl: string;
  sim: Simulator;
  /** The local storage folder (STORAGE_URL); feeds land in feeds/<id>.json below it. */
  storageDir: string;
  config: Config;
  /** TOKEN_ENCRYPTION_KEY of the stage, for a CLI or worker pointed at its database. */
  key: string;
  cipher: TokenCipher;
  /** The pipeline's dependencies: no lifecycle, no widgets, no metrics (add them over these). */
  deps: FeedDeps;
  /** Stops the simulator, drops the database, removes the storage folder. */
  close(): Promise<void>;
}

/**
 * The feed pipeline in-process on real services: a migrated database, the simulator over HTTP and
 * a local storage folder, with the FeedDeps a sync runs with (160-pixel variants, 25 posts a page,
 * no retries). Shared by the tests that drive syncs themselves (runSyncNow or the feed workers)
 * and only differ in what they do with the feeds.
 */
export async function openFeedStage(label: string): Promise<FeedStage> {
  const { db, url, close: closeDb } = await migratedDatabase(label);
  const sim = await startSimulator();
  const storageDir = mkdtempSync(join(tmpdir(), `fm-${label}-`));
  const config = loadConfig({
    STORAGE_URL: storageDir,
    MEDIA_ALLOWED_HOSTS: sim.imageHost,
    MEDIA_VARIANT_WIDTHS: '160',
    MEDIA_PUBLIC_URL: 'http://media.example.test/',
  });
  const key = randomBytes(32).toString('base64');
  const cipher = TokenCipher.fromEnv(key);
  const deps: FeedDeps = {
    db,
    cipher,
    platform: simPlatformClient(sim, { pageSize: 25, maxRetries: 0, sleep: noSleep }),
    storage: createStorage(config),
    limits: mirrorLimitsFromConfig(config),
    clock: sim.clock,
    logger: createLogger({ level: 'silent' }),
  };
  return {
    db,
    databaseUrl: url,
    sim,
    storageDir,
    config,
    key,
    cipher,
    deps,
    async close() {
      await sim.close();
      await closeDb();
      await rm(storageDir, { recursive: true, force: true });
    },
  };
}

/**
 * A feed stage wired as the worker and the CLI wire widgets (src/cli/context.ts): every feed
 * publication and every account state change republishes the account's widgets. The deps
 * returned carry that lifecycle and listener; `wdeps` are the widgets' own.
 */
export function withWidgets(
  stage: FeedStage,
  extra: Partial<WidgetDeps> = {},
): { deps: FeedDeps; wdeps: WidgetDeps; lifecycle: AccountLifecycle } {
  const { db, storage, clock, logger } = stage.deps;
  const wdeps: WidgetDeps = { db, storage, clock, logger, ...extra };
  const lifecycle = new AccountLifecycle({
    db,
    clock,
    logger,
    schedules: NO_SCHEDULES,
    alertReauth: async () => null,
    accountChanged: widgetRepublisher(wdeps),
  });
  return { deps: { ...stage.deps, lifecycle, sourceChanged: widgetRepublisher(wdeps) }, wdeps, lifecycle };
}
