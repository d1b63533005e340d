import { EXIT, type CliIO } from '../io.ts';
import { AppContext } from '../context.ts';
import { startWorker, type RunningWorker } from '../../../jobs/worker.ts';

/** The worker on the context's configuration (also used by the demo). */
export async function startWorkerFromContext(ctx: AppContext): Promise<RunningWorker> {
  const db = await ctx.migratedDb();
  return startWorker({
    db,
    cipher: ctx.cipher,
    platform: ctx.platform,
    mailer: ctx.mailer,
    clock: ctx.clock,
    logger: ctx.logger,
    redis: ctx.redis,
    queues: ctx.queues,
    publicUrl: ctx.config.PUBLIC_URL,
    schedules: ctx.schedules,
    refreshAfterMs: ctx.refreshAfterMs,
    concurrency: ctx.config.WORKER_CONCURRENCY,
    sweepCron: ctx.config.EXPIRY_SWEEP_CRON,
    feed: await ctx.feedDeps(),
  });
}

/** `feedmirror worker`: runs until SIGTERM/SIGINT, then lets running jobs finish. */
export async function workerCommand(_argv: string[], io: CliIO): Promise<number> {
  const ctx = new AppContext(io.env);
  const worker = await startWorkerFromContext(ctx);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      ctx.logger.info({ signal }, 'shutting down: running jobs finish, waiting jobs stay queued');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await worker.close();
  await ctx.close();
  return EXIT.ok;
}
