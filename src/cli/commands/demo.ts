import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { EXIT, type CliIO } from '../io.ts';
import { withExamples, type Cli } from '../command.ts';
import type { Clock } from '../../util/clock.ts';

/**
 * `feedmirror demo [--out <file>]`: write the demo feed (demo: true, every kind of post) to the
 * file, or to stdout when no --out is given or it is `-`.
 */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('demo')
    .description('write a demo feed (demo: true) holding every kind of post')
    .option('-o, --out <file>', 'write it to this file (- or nothing: standard output)')
    .action(async (opts: { out?: string }) => {
      const { clockFromEnv } = await import('../../util/clock.ts');
      cli.setExit(await writeDemoFeed(opts, cli.io, clockFromEnv(cli.io.env)));
    });
  withExamples(cmd, 'feedmirror demo --out demo.json', 'feedmirror demo | feedmirror validate -');
}

export async function writeDemoFeed(opts: { out?: string }, io: CliIO, clock: Clock): Promise<number> {
  const { demoFeed } = await import('../../demo/demo-feed.ts');
  const feed = demoFeed(clock.now());
  const text = JSON.stringify(feed, null, 2) + '\n';
  if (opts.out === undefined || opts.out === '-') {
    io.stdout.write(text);
    return EXIT.ok;
  }
  await writeFile(resolve(io.cwd, opts.out), text);
  io.stderr.write(`wrote demo feed (${feed.posts.length} posts) to ${opts.out}\n`);
  return EXIT.ok;
}
