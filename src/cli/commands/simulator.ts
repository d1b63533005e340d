import type { Command } from 'commander';
import { withExamples, type Cli } from '../command.ts';
import type { SimulatorOptions } from '../start/simulator.ts';

/** `feedmirror simulator`: the platform simulator by hand, with a ready short-lived token. */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('simulator')
    .description(
      'run the platform simulator, print the settings that point feedmirror at it and a ready short-lived token',
    )
    .option('--port <port>', 'port to listen on (0: any free port)', '0')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--accounts <n>', 'accounts to create (1-100)', '1')
    .option('--posts <n>', 'posts per account')
    .option(
      '--clock <real|manual>',
      'real: simulated time follows the wall clock; manual: only through POST /__sim/clock',
      'real',
    )
    .action(async (opts: SimulatorOptions) => {
      const { simulatorCommand } = await import('../start/simulator.ts');
      cli.setExit(await simulatorCommand(opts, cli.io));
    });
  withExamples(cmd, 'APP_SECRET=dev-secret feedmirror simulator --port 4000 --accounts 2 --posts 30');
}
