import { z } from 'zod';
import { refreshAccountToken, type RefreshOutcome, type TokenRefreshDeps } from '../src/accounts/token-refresh.ts';
import { idSchema } from '../src/util/ids.ts';
import { defineJob } from './definition.ts';

/**
 * token-refresh: run by each account's scheduler (R-TOK-8) and by "refresh now" in the dashboard.
 * The work is src/accounts/token-refresh.ts; a refresh that failed (token kept, R-TOK-7) fails
 * the job so the dashboard's queue view shows it.
 */
export const tokenRefreshJob = defineJob({
  name: 'token-refresh',
  queue: 'tokenRefresh',
  payload: z.object({ accountId: idSchema('account id'), force: z.boolean().optional() }),
  // One attempt: the scheduler's next check (hours later) is the retry, spaced by the service.
  options: {
    attempts: 1,
    removeOnComplete: { age: 7 * 24 * 3600, count: 1000 },
    removeOnFail: { age: 30 * 24 * 3600, count: 5000 },
  },
  async process(deps: TokenRefreshDeps, data): Promise<RefreshOutcome> {
    const outcome = await refreshAccountToken(deps, data);
    if (outcome.outcome === 'skipped')
      deps.logger.info({ accountId: data.accountId, reason: outcome.reason }, 'token refresh check skipped');
    if (outcome.outcome === 'failed') {
      throw new Error(`refresh failed, token kept (expires ${outcome.expiresAt.toISOString()}): ${outcome.reason}`);
    }
    return outcome;
  },
});
