import { EXIT, type CliIO } from '../io.ts';
import { AppContext } from '../context.ts';
import { createApp } from '../../http/app.ts';
import { scheduleAccount } from '../../../jobs/schedules.ts';
import { createMetrics } from '../../metrics/index.ts';

/** `feedmirror serve`: connect/callback and health (dashboard, feeds and metrics join later). */
export async function serveCommand(_argv: string[], io: CliIO): Promise<number> {
  const ctx = new AppContext(io.env);
  const db = await ctx.migratedDb();
  const { appId } = ctx.requireApp();
  const metrics = createMetrics({
    queues: Object.values(ctx.queues),
    clock: ctx.clock,
    tokenExpiries: async () => {
      const { rows } = await db.query<{ account_id: string; expires_at: Date }>('SELECT account_id, expires_at FROM tokens');
      return rows.map((r) => ({ accountId: r.account_id, expiresAt: r.expires_at }));
    },
  });
  const app = createApp({
    logger: ctx.logger,
    storage: ctx.storage,
    health: { redis: ctx.redisClient, db, storage: ctx.storage, metrics, logger: ctx.logger },
    connect: {
      db,
      cipher: ctx.cipher,
      platform: ctx.platform,
      clock: ctx.clock,
      logger: ctx.logger,
      appId,
      authorizeUrl: ctx.config.AUTHORIZE_URL,
      publicUrl: ctx.config.PUBLIC_URL,
      onConnected: async (account) => scheduleAccount(ctx.queues, account.id, ctx.schedules),
    },
  });
  const server = app.listen(ctx.config.PORT, ctx.config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : ctx.config.PORT;
  io.stdout.write(`feedmirror serving on http://${ctx.config.HOST}:${port} (connect an account: ${ctx.config.PUBLIC_URL}/connect)\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await ctx.close();
  return EXIT.ok;
}
