import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { EXIT, type CliIO } from '../io.ts';
import { withExamples, type Cli } from '../command.ts';
import { servePortOf } from '../serve-address.ts';

/**
 * `feedmirror init`: a new .env from .env.example with what can be generated (a fresh
 * TOKEN_ENCRYPTION_KEY, a dashboard login), the storage the operator names, and comments for
 * what only they can fill in. It never overwrites a file: the key in an existing .env is the only
 * way to read the stored tokens.
 */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('init')
    .description(
      'write a new .env: a fresh encryption key and dashboard password, your storage, and what is left to fill in (never overwrites)',
    )
    .option('--storage <url|folder>', 's3://bucket/prefix, or a local folder', './data/storage')
    .option('--s3-endpoint <url>', 'S3-compatible endpoint (MinIO, R2, ...); also sets path-style addressing')
    .option(
      '--public-url <url>',
      'public address of `feedmirror serve` (the OAuth redirect is PUBLIC_URL/callback). A plain http://host:port is serve itself, so PORT is set to its port; an https:// address (or one without a port) is a proxy in front, so PORT keeps 8080 and the proxy forwards to it',
    )
    .option(
      '--outbox <folder>',
      'where alert emails are written as .eml files until SMTP_URL is set (default: next to a local --storage folder, else ./data/outbox)',
    )
    .addOption(
      new Option('--log-level <level>', 'write LOG_LEVEL (unset: info, and warn for a command on a terminal)').choices([
        'fatal',
        'error',
        'warn',
        'info',
        'debug',
        'trace',
        'silent',
      ]),
    )
    .option('--database-url <url>', 'PostgreSQL connection string')
    .option('--redis-url <url>', 'Redis connection string')
    .option('--out <file>', 'file to write', '.env')
    .action(async (opts: InitOptions) => cli.setExit(await init(opts, cli.io)));
  withExamples(
    cmd,
    'feedmirror init --storage s3://my-feeds/feedmirror',
    'feedmirror init --storage ./data/storage --public-url https://feeds.example.com',
  );
}

export interface InitOptions {
  storage: string;
  s3Endpoint?: string;
  publicUrl?: string;
  outbox?: string;
  logLevel?: string;
  databaseUrl?: string;
  redisUrl?: string;
  out: string;
}

async function init(opts: InitOptions, io: CliIO): Promise<number> {
  const target = resolve(io.cwd, opts.out);
  const s3 = opts.storage.startsWith('s3://');
  // Absolute: a command run from another folder (cron, systemd, a second terminal) must find the
  // same feeds and outbox, not quietly make new folders where it stands.
  const storage = s3 ? opts.storage : resolve(io.cwd, opts.storage);
  const values: Record<string, string> = {
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    DASHBOARD_USER: 'admin',
    DASHBOARD_PASSWORD: randomBytes(18).toString('base64url'),
    STORAGE_URL: storage,
    // The outbox lives with the rest of feedmirror's data: beside a local storage folder (never
    // inside it: serve publishes that folder, and the emails carry reconnect links).
    OUTBOX_DIR: resolve(io.cwd, opts.outbox ?? (s3 ? 'data/outbox' : join(dirname(storage), 'outbox'))),
  };
  if (opts.logLevel) values.LOG_LEVEL = opts.logLevel;
  if (opts.publicUrl) {
    values.PUBLIC_URL = opts.publicUrl.replace(/\/+$/, '');
    const port = servePortOf(values.PUBLIC_URL);
    if (port !== undefined) values.PORT = String(port);
  }
  if (opts.databaseUrl) values.DATABASE_URL = opts.databaseUrl;
  if (opts.redisUrl) values.REDIS_URL = opts.redisUrl;
  if (opts.s3Endpoint) {
    values.S3_ENDPOINT = opts.s3Endpoint;
    values.S3_FORCE_PATH_STYLE = 'true';
  }
  // A local folder is served by `feedmirror serve` under PUBLIC_URL, so feeds carry loadable URLs.
  if (!s3) values.MEDIA_PUBLIC_URL = `${values.PUBLIC_URL ?? 'http://127.0.0.1:8080'}/`;

  // Every value is checked as the worker would read it before anything is written.
  const { loadConfig, ConfigError } = await import('../../config.ts');
  try {
    const config = loadConfig(values);
    if (s3) {
      const { parseS3Url } = await import('../../storage/index.ts');
      parseS3Url(config.STORAGE_URL);
    }
  } catch (err) {
    const what = err instanceof ConfigError ? err.problems.join('; ') : (err as Error).message;
    io.stderr.write(`feedmirror init: ${what}\n`);
    return EXIT.usage;
  }

  const template = await readFile(new URL('../../../.env.example', import.meta.url), 'utf8');
  const todo = [
    'APP_ID and APP_SECRET: your platform app (docs/accounts.md)',
    ...(s3
      ? [
          'S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY below, or AWS_PROFILE, or an instance role (docs/getting-started.md, "Running with S3")',
          'MEDIA_PUBLIC_URL: the public address of the bucket or its CDN, e.g. https://<bucket>.s3.<region>.amazonaws.com/<prefix>/',
          ...(opts.s3Endpoint ? [] : ["S3_REGION: the bucket's region"]),
        ]
      : []),
    ...(opts.publicUrl ? [] : ['PUBLIC_URL: the public https address of `feedmirror serve` (for the OAuth redirect)']),
    ...(opts.databaseUrl && opts.redisUrl
      ? []
      : ['DATABASE_URL and REDIS_URL, unless PostgreSQL and Redis run on this machine with the defaults']),
    'SMTP_URL and ALERT_EMAIL_TO: where expiry alerts go (until then they are written to OUTBOX_DIR)',
  ];
  // What a shell sources: `. .env` would search PATH, and `./` before an absolute path breaks it.
  const sourced = isAbsolute(opts.out) ? opts.out : `./${opts.out}`;
  const header = [
    `# Written by \`feedmirror init\` on ${new Date().toISOString().slice(0, 10)}. It holds secrets: keep it out of git, mode 600.`,
    '# Generated: TOKEN_ENCRYPTION_KEY (back it up: stored tokens cannot be read without it) and the',
    '# dashboard login (DASHBOARD_USER, DASHBOARD_PASSWORD).',
    '# Left to fill in:',
    ...todo.map((t) => `#   - ${t}`),
    `# Then: \`set -a; . ${sourced}; set +a; npx feedmirror doctor\`.`,
    '',
    '',
  ];
  let body = template.replace(/^# feedmirror configuration\.[\s\S]*?\n\n/, '');
  for (const [key, value] of Object.entries(values)) {
    const line = `${key}=${/\s/.test(value) ? `"${value}"` : value}`;
    const re = new RegExp(`^${key}=.*$`, 'm');
    body = re.test(body) ? body.replace(re, line) : `${body.trimEnd()}\n${line}\n`;
  }
  if (s3)
    body = body.replace(
      /^# AWS_ACCESS_KEY_ID=$/m,
      '# TODO (or AWS_PROFILE, or an instance role):\n# AWS_ACCESS_KEY_ID=',
    );
  for (const key of ['APP_ID', 'APP_SECRET', ...(s3 ? ['MEDIA_PUBLIC_URL'] : [])])
    body = body.replace(new RegExp(`^${key}=$`, 'm'), `# TODO: fill in\n${key}=`);

  try {
    // 'wx': fails when the file exists, also if it appeared a moment ago; 0600: it holds secrets.
    await writeFile(target, header.join('\n') + body, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      io.stderr.write(
        `feedmirror init: ${opts.out} exists; not overwritten (its TOKEN_ENCRYPTION_KEY is what reads the stored tokens). Move it away or choose another --out.\n`,
      );
      return EXIT.failed;
    }
    throw err;
  }
  io.stdout.write(
    `wrote ${opts.out} (mode 600): a new TOKEN_ENCRYPTION_KEY, dashboard login admin (password in DASHBOARD_PASSWORD), STORAGE_URL=${values.STORAGE_URL}${values.PORT ? `, PORT=${values.PORT} (from --public-url)` : ''}\n` +
      `alert emails are written to OUTBOX_DIR=${values.OUTBOX_DIR} until SMTP_URL is set\n` +
      `left to fill in:\n${todo.map((t) => `  - ${t}`).join('\n')}\n` +
      `then: set -a; . ${sourced}; set +a; npx feedmirror doctor\n`,
  );
  return EXIT.ok;
}
