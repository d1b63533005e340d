import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { EXIT, readAll, type CliIO } from '../io.ts';
import { validateFeed } from '../../schema/validate.ts';

const USAGE = 'usage: feedmirror validate [--json] <file|->\n';

/**
 * `feedmirror validate <file|->`: check a feed against schema v1.
 * Exit 0 valid, 1 invalid (every problem on its own line with its JSON path), 2 when the input
 * cannot be read as JSON at all (missing file, empty, not JSON) or the arguments are wrong.
 */
export async function validateCommand(argv: string[], io: CliIO): Promise<number> {
  let json = false;
  const files: string[] = [];
  for (const arg of argv) {
    if (arg === '--json') json = true;
    else if (arg === '--help' || arg === '-h') {
      io.stdout.write(USAGE);
      return EXIT.ok;
    } else if (arg.startsWith('--')) {
      io.stderr.write(`feedmirror validate: unknown option ${arg}\n${USAGE}`);
      return EXIT.usage;
    } else files.push(arg);
  }
  const [file] = files;
  if (file === undefined || files.length > 1) {
    io.stderr.write(`feedmirror validate: give exactly one file, or - for stdin\n${USAGE}`);
    return EXIT.usage;
  }
  const label = file === '-' ? '<stdin>' : file;

  let text: string;
  try {
    text = file === '-' ? await readAll(io.stdin) : await readFile(resolve(io.cwd, file), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
    io.stderr.write(`feedmirror validate: cannot read ${label}: ${why}\n`);
    return EXIT.usage;
  }
  if (text.trim() === '') {
    io.stderr.write(`feedmirror validate: ${label} is empty, expected a schema v1 feed (JSON)\n`);
    return EXIT.usage;
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (err) {
    io.stderr.write(`feedmirror validate: ${label} is not JSON: ${(err as Error).message}\n`);
    return EXIT.usage;
  }

  const result = validateFeed(input);
  if (result.ok) {
    const n = result.feed.posts.length;
    io.stdout.write(
      json
        ? JSON.stringify({ valid: true, file: label, posts: n }) + '\n'
        : `valid: ${label} (${n} post${n === 1 ? '' : 's'})\n`,
    );
    return EXIT.ok;
  }
  const { problems } = result;
  if (json) {
    io.stdout.write(JSON.stringify({ valid: false, file: label, problems }, null, 2) + '\n');
  } else {
    for (const p of problems) io.stdout.write(`${p.path}: ${p.message}\n`);
    io.stdout.write(`invalid: ${label} (${problems.length} problem${problems.length === 1 ? '' : 's'})\n`);
  }
  return EXIT.failed;
}
