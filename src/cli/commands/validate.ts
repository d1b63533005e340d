import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { EXIT, readAll, type CliIO } from '../io.ts';
import { withExamples, type Cli } from '../command.ts';

/**
 * `feedmirror validate <file|->`: check a feed against schema v1.
 * Exit 0 valid, 1 invalid (every problem on its own line with its JSON path), 2 when the input
 * cannot be read as JSON at all (missing file, empty, not JSON) or the arguments are wrong.
 */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('validate')
    .description('check a feed (schema v1 JSON) and list every problem with its JSON path')
    .argument('<file>', 'the feed file, or - for standard input')
    .option('--json', 'print the result as JSON')
    .action(async (file: string, opts: { json?: boolean }) => cli.setExit(await validateFile(file, opts, cli.io)));
  withExamples(
    cmd,
    'feedmirror validate feeds/17841400000000001.json',
    'curl -s https://cdn.example.com/feeds/1784.json | feedmirror validate - --json',
  );
}

export async function validateFile(file: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
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
  } catch {
    // Where it stops, never what is there: the file may be a token file or /etc/shadow.
    const { whereJsonStops } = await import('../../util/json-position.ts');
    const at = whereJsonStops(text);
    const what = at.reason === 'end' ? 'the text ends before the JSON does' : 'unexpected character';
    io.stderr.write(`feedmirror validate: ${label} is not JSON: ${what} at line ${at.line}, column ${at.column}\n`);
    return EXIT.usage;
  }

  const { validateFeed } = await import('../../schema/validate.ts');
  const result = validateFeed(input);
  if (result.ok) {
    const n = result.feed.posts.length;
    io.stdout.write(
      opts.json
        ? JSON.stringify({ valid: true, file: label, posts: n }) + '\n'
        : `valid: ${label} (${n} post${n === 1 ? '' : 's'})\n`,
    );
    return EXIT.ok;
  }
  const { problems } = result;
  if (opts.json) {
    io.stdout.write(JSON.stringify({ valid: false, file: label, problems }, null, 2) + '\n');
  } else {
    for (const p of problems) io.stdout.write(`${p.path}: ${p.message}\n`);
    io.stdout.write(`invalid: ${label} (${problems.length} problem${problems.length === 1 ? '' : 's'})\n`);
  }
  return EXIT.failed;
}
