import type { AppContext } from '../cli/context.ts';
import { mirrorLimitsFromConfig } from '../mirror/copy.ts';
import { createStorage } from '../storage/index.ts';
import type { FeedDeps } from './deps.ts';

/** FeedDeps from the CLI's composition root (storage built here: AppContext has no storage getter). */
export async function feedDepsFromContext(ctx: AppContext): Promise<FeedDeps> {
  return {
    db: await ctx.migratedDb(),
    cipher: ctx.cipher,
    platform: ctx.platform,
    storage: createStorage(ctx.config),
    limits: mirrorLimitsFromConfig(ctx.config),
    clock: ctx.clock,
    logger: ctx.logger,
    copyrightItems: ctx.config.COPYRIGHT_ITEMS,
  };
}
