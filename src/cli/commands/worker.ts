import type { Command } from 'commander';
import { EXIT } from '../io.ts';
import { withServiceContext, withExamples, type Cli } from '../command.ts';
import { untilStopSignal } from '../signals.ts';

/** `feedmirror worker`: runs the job workers until SIGTERM/SIGINT, then lets running jobs finish. */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('worker')
    .description('run the job workers (token refresh, sync, copy, publish, alerts) until SIGTERM or Ctrl-C')
    .action(async () => {
      // Configuration first, before any service is touched: one line naming every variable at fault.
      const { preflight } = await import('../preflight.ts');
      const pre = await preflight(cli.io.env, 'worker');
      if (!pre.ok) {
        cli.io.stderr.write(`feedmirror worker: cannot start: ${pre.problems.join('; ')}\n`);
        return cli.setExit(EXIT.failed);
      }
      // withContext closes everything it opened, also when the start fails (exit non-zero, no hang).
      const code = await withServiceContext(cli.io, async (ctx) => {
        // Listening before the start: a worker takes jobs before its start has finished (schedules
        // checked, daily jobs queued), and a SIGTERM then (a rollout, a slow start) would end the
        // process on the spot instead of letting them finish. A second signal still ends it at once.
        const stopped = untilStopSignal();
        const { startWorkerFromContext } = await import('../start/worker.ts');
        const worker = await startWorkerFromContext(ctx);
        const { logStartChecks } = await import('../context.ts');
        logStartChecks(ctx);
        const signal = await stopped;
        ctx.logger.info(
          { signal, shutdownTimeoutSeconds: ctx.config.SHUTDOWN_TIMEOUT_SECONDS },
          'shutting down: running jobs may finish, waiting jobs stay queued',
        );
        const { cutOff } = await worker.close();
        if (cutOff.length > 0) {
          // The cut-off jobs' promises (a request that never answers, say) would keep the event
          // loop alive: once everything else is closed, leave anyway. unref: a clean exit wins.
          setTimeout(() => process.exit(EXIT.ok), 2_000).unref();
        }
        return EXIT.ok;
      });
      cli.setExit(code);
    });
  withExamples(cmd, 'set -a; . ./.env; set +a; feedmirror worker');
}
