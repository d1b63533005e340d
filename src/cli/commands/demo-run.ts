import type { Command } from 'commander';
import { intIn, withExamples, type Cli } from '../command.ts';

/**
 * `feedmirror demo-run` (`npm run demo`): the real thing on embedded defaults: simulator, worker,
 * server and dashboard in one process, with a database and key prefix of its own.
 */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    // What `npm run demo` runs: not listed in `feedmirror --help` (beside `demo`, which writes a
    // demo feed, it read as a second way to the same thing); `feedmirror demo-run --help` answers.
    .command('demo-run', { hidden: true })
    .description('the main job end to end on embedded defaults, with the platform simulator (what `npm run demo` runs)')
    .option('--port <port>', 'HTTP port of the dashboard (another free one when taken)', intIn(0, 65535), 8080)
    .option('--posts <n>', 'posts of the demo account', intIn(0, 10_000), 24)
    .option('--exit', 'stop once the feed is published (for scripts), instead of running until Ctrl-C')
    .option(
      '--new-simulator-ports',
      'give the simulator any free ports (and keep them in data/demo/simulator.json) instead of failing when its kept ones are taken',
    )
    .action(async (opts: { port: number; posts: number; exit?: boolean; newSimulatorPorts?: boolean }) => {
      const { runDemo } = await import('../start/demo.ts');
      cli.setExit(await runDemo(opts, cli.io));
    });
  withExamples(cmd, 'npm run demo', 'npm run demo -- --port 9090 --posts 60', 'npx feedmirror demo-run --exit');
}
