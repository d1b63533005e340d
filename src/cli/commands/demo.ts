import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { EXIT, type CliIO } from '../io.ts';
import { demoFeed } from '../../demo/demo-feed.ts';
import { systemClock, type Clock } from '../../util/clock.ts';

const USAGE = 'usage: feedmirror demo [--out <file|->]\n';

/**
 * `feedmirror demo [--out <file>]`: write the demo feed (demo: true, every kind of post) to the
 * file, or to stdout when no --out is given or it is `-`.
 */
export async function demoCommand(argv: string[], io: CliIO, clock: Clock = systemClock): Promise<number> {
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--out' || arg === '-o') {
      out = argv[++i];
      if (out === undefined || out === '') {
        io.stderr.write(`feedmirror demo: --out needs a file name (or - for stdout)\n${USAGE}`);
        return EXIT.usage;
      }
    } else if (arg.startsWith('--out=')) {
      out = arg.slice('--out='.length);
    } else if (arg === '--help' || arg === '-h') {
      io.stdout.write(USAGE);
      return EXIT.ok;
    } else {
      io.stderr.write(`feedmirror demo: unexpected argument ${arg}\n${USAGE}`);
      return EXIT.usage;
    }
  }
  const feed = demoFeed(clock.now());
  const text = JSON.stringify(feed, null, 2) + '\n';
  if (out === undefined || out === '-') {
    io.stdout.write(text);
    return EXIT.ok;
  }
  const target = resolve(io.cwd, out);
  await writeFile(target, text);
  io.stderr.write(`wrote demo feed (${feed.posts.length} posts) to ${out}\n`);
  return EXIT.ok;
}
