import type { Command } from 'commander';
import { EXIT } from '../io.ts';
import { withServiceContext, withExamples, type Cli } from '../command.ts';
import { untilStopSignal } from '../signals.ts';

/**
 * `feedmirror serve`: health/readiness/metrics, the feed API, connect/callback, the local
 * storage's public files and the operator dashboard, until SIGTERM/SIGINT.
 */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('serve')
    .description(
      'run the HTTP server (dashboard, connect and callback, feeds, health, metrics) until SIGTERM or Ctrl-C',
    )
    .action(async () => {
      const { io } = cli;
      // Configuration first, before any service is touched: one line naming every variable at fault.
      const { preflight } = await import('../preflight.ts');
      const pre = await preflight(cli.io.env, 'serve');
      if (!pre.ok) {
        cli.io.stderr.write(`feedmirror serve: cannot start: ${pre.problems.join('; ')}\n`);
        return cli.setExit(EXIT.failed);
      }
      const code = await withServiceContext(io, async (ctx) => {
        // Listening before the start: a SIGTERM during it (a rollout, a start waiting on the
        // migration lock) ends the server once started, draining as always, rather than on the
        // spot. A second signal still ends it at once.
        const stopped = untilStopSignal();
        const { startServer } = await import('../start/server.ts');
        const running = await startServer(ctx);
        const { logStartChecks } = await import('../context.ts');
        logStartChecks(ctx);
        const login = ctx.config.DASHBOARD_USER ? `log in as ${ctx.config.DASHBOARD_USER}` : 'no login: loopback only';
        io.stdout.write(`feedmirror serving on ${running.url} (dashboard: ${running.dashboardUrl}, ${login})\n`);
        if (ctx.config.APP_ID)
          io.stdout.write('connect an account: invite its owner from the dashboard, or `feedmirror accounts invite`\n');
        const signal = await stopped;
        ctx.logger.info(
          { signal, shutdownTimeoutSeconds: ctx.config.SHUTDOWN_TIMEOUT_SECONDS },
          'shutting down: no new connections, the requests in flight may finish',
        );
        const { cutOff } = await running.drain(ctx.config.SHUTDOWN_TIMEOUT_SECONDS * 1000);
        if (cutOff > 0)
          ctx.logger.warn({ cutOff }, `shutdown timeout: ${cutOff} request(s) still running were cut off`);
        return EXIT.ok;
      });
      cli.setExit(code);
    });
  withExamples(cmd, 'HOST=0.0.0.0 PORT=8080 feedmirror serve');
}
