import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildProgram, main } from '../../src/cli/main.ts';
import { memoryIO } from '../support/memory-io.ts';
import { closedPort } from '../support/closed-port.ts';

/**
 * Every command and subcommand answers --help and -h with usage, options and an example, exit 0,
 * touching no service (the database and Redis point at closed ports: any attempt would fail or
 * hang); unknown options are refused with the usage, exit 2.
 */
function commandPaths(cmd: Command, prefix: string[] = []): string[][] {
  return cmd.commands
    .filter((c) => c.name() !== 'help')
    .flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])]);
}

const root = fileURLToPath(new URL('../../', import.meta.url));
const paths = commandPaths(buildProgram({ io: memoryIO(), setExit: () => undefined }));

describe('feedmirror --help', () => {
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    const port = await closedPort();
    env = {
      DATABASE_URL: `postgres://nobody:nothing@127.0.0.1:${port}/none`,
      REDIS_URL: `redis://127.0.0.1:${port}`,
      STORAGE_URL: `s3://no-bucket/x`,
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'debug',
    };
  });

  it('knows every command (a new command module must be listed in src/cli/commands/index.ts)', () => {
    const names = paths.map((p) => p.join(' '));
    for (const n of [
      'validate',
      'demo',
      'simulator',
      'simulator post add',
      'simulator post edit',
      'simulator post delete',
      'simulator revoke',
      'simulator expire-token',
      'simulator rate-limit',
      'simulator accounts',
      'migrate',
      'accounts add',
      'accounts invite',
      'accounts list',
      'accounts reconnect-link',
      'accounts remove',
      'accounts set',
      'accounts show',
      'refresh',
      'check-expiry',
      'keys rotate',
      'sync',
      'feeds get',
      'feeds confirm-removal',
      'media rebuild',
      'webhooks add',
      'webhooks list',
      'webhooks remove',
      'webhooks rotate',
      'webhooks deliveries',
      'widgets add',
      'widgets list',
      'widgets show',
      'widgets set',
      'widgets hide',
      'widgets unhide',
      'widgets remove',
      'worker',
      'serve',
      'demo-run',
    ]) {
      expect(names).toContain(n);
    }
  });

  it.each(
    paths.flatMap((p) => [
      [p.join(' '), '--help'],
      [p.join(' '), '-h'],
    ]),
  )('feedmirror %s %s: usage, options and an example on stdout, exit 0', async (path, flag) => {
    const io = memoryIO({ env });
    const started = Date.now();
    expect(await main([...path.split(' '), flag], io)).toBe(0);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(io.out()).toMatch(new RegExp(`^Usage: feedmirror ${path} `));
    expect(io.out()).toMatch(/\nOptions:\n/);
    expect(io.out()).toMatch(/\nExamples?:\n {2}\$ /);
    expect(io.err()).toBe('');
  });

  it.each(paths.map((p) => p.join(' ')))(
    'feedmirror %s --no-such-option: refused with the usage on stderr, exit 2',
    async (path) => {
      const io = memoryIO({ env });
      expect(await main([...path.split(' '), '--no-such-option'], io)).toBe(2);
      expect(io.err()).toMatch(/unknown option '--no-such-option'/);
      expect(io.err()).toMatch(/Usage: feedmirror /);
      expect(io.out()).toBe('');
    },
  );

  it('feedmirror, help and --help list the commands and exit codes; no command is a usage error (exit 2)', async () => {
    for (const argv of [['--help'], ['help'], ['-h']]) {
      const io = memoryIO({ env });
      expect(await main(argv, io)).toBe(0);
      expect(io.out()).toMatch(/Commands:\n/);
      expect(io.out()).toMatch(/Exit codes: 0 done, 1 failed, 2 wrong usage, 3 /);
    }
    const none = memoryIO({ env });
    expect(await main([], none)).toBe(2);
    expect(none.err()).toMatch(/^Usage: feedmirror /);
    const unknown = memoryIO({ env });
    expect(await main(['frobnicate'], unknown)).toBe(2);
    expect(unknown.err()).toMatch(/unknown command 'frobnicate'/);
  });

  it('--help lists the commands an operator runs: `demo`, not `demo-run` (what `npm run demo` runs), which still answers', async () => {
    const io = memoryIO({ env });
    expect(await main(['--help'], io)).toBe(0);
    const listed = [...io.out().matchAll(/^ {2}([a-z-]+)\b/gm)].map((m) => m[1]);
    expect(listed).toContain('demo');
    expect(listed).toContain('widgets');
    expect(listed).not.toContain('demo-run');
    const run = memoryIO({ env });
    expect(await main(['demo-run', '--help'], run)).toBe(0);
    expect(run.out()).toMatch(/^Usage: feedmirror demo-run /);
  });

  it('every read command has --json', () => {
    const program = buildProgram({ io: memoryIO(), setExit: () => undefined });
    const find = (path: string) =>
      path.split(' ').reduce<Command | undefined>((c, name) => c?.commands.find((x) => x.name() === name), program);
    const reads = [
      'validate',
      'doctor',
      'migrate',
      'accounts list',
      'accounts add',
      'accounts remove',
      'accounts invite',
      'accounts reconnect-link',
      'refresh',
      'check-expiry',
      'keys rotate',
      'sync',
      'feeds get',
      'feeds confirm-removal',
      'webhooks list',
      'webhooks deliveries',
      'widgets add',
      'widgets list',
      'widgets show',
      'widgets set',
      'simulator accounts',
      'simulator post add',
      'simulator post edit',
      'simulator post delete',
      'simulator revoke',
      'simulator expire-token',
      'simulator rate-limit',
    ];
    for (const path of reads) {
      const cmd = find(path);
      expect(cmd, path).toBeDefined();
      expect(
        cmd!.options.map((o) => o.long),
        path,
      ).toContain('--json');
    }
  });

  it('a group without its subcommand shows its usage, exit 2', async () => {
    const io = memoryIO({ env });
    expect(await main(['accounts'], io)).toBe(2);
    expect(io.err()).toMatch(/Usage: feedmirror accounts /);
    expect(io.err()).toMatch(/add/);
  });

  it('as a real process: --help of every command loads none of pg, ioredis, bullmq, sharp or the AWS SDK, and validate neither', () => {
    // One child process runs every --help and a validate, then lists the CommonJS modules it loaded.
    const dir = mkdtempSync(join(tmpdir(), 'fm-help-'));
    const script = join(dir, 'probe.mts');
    writeFileSync(
      script,
      `import { createRequire } from 'node:module';
import { Writable, Readable } from 'node:stream';
import { main } from ${JSON.stringify(join(root, 'src/cli/main.ts'))};
const paths = JSON.parse(process.argv[2]!) as string[][];
const sink = { write: () => true };
const codes: number[] = [];
for (const p of paths) codes.push(await main([...p, '--help'], { stdout: sink, stderr: sink, stdin: Readable.from([]), env: process.env, cwd: process.cwd() }));
codes.push(await main(['validate', ${JSON.stringify(join(root, 'test/fixtures/feed-v1-valid.json'))}], { stdout: sink, stderr: sink, stdin: Readable.from([]), env: process.env, cwd: process.cwd() }));
process.stdout.write(JSON.stringify({ codes, loaded: Object.keys(createRequire(import.meta.url).cache) }));
`,
    );
    const r = spawnSync(process.execPath, ['--import', 'tsx', script, JSON.stringify(paths)], {
      cwd: root,
      env: { ...process.env, ...env, FEEDMIRROR_CAPTURE_DIR: '' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(0);
    const { codes, loaded } = JSON.parse(r.stdout) as { codes: number[]; loaded: string[] };
    expect(codes.every((c) => c === 0)).toBe(true);
    const heavy = loaded.filter((f) =>
      /node_modules\/(pg|pg-pool|ioredis|bullmq|sharp|@aws-sdk\/client-s3|nodemailer|express)\//.test(f),
    );
    expect(heavy).toEqual([]);
  });
});
