import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { reportFailure } from '../failure.ts';
import { EXIT, InputTooLargeError, readAll, type CliIO } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';
import type { StoredApp } from '../../store/apps.ts';

/** An app secret is a few dozen characters; anything near this is not one. */
const SECRET_MAX_BYTES = 4 * 1024;

/**
 * `feedmirror apps add|list|show|set|remove`: the platform apps of this deployment (Standard
 * Access: one app per client). The secret comes from standard input or a file, never from an
 * argument, where shells and process lists would keep it; it is stored sealed with
 * TOKEN_ENCRYPTION_KEY and never printed. APP_ID/APP_SECRET stay the default app.
 */
export function register(program: Command, cli: Cli): void {
  const apps = program
    .command('apps')
    .description(
      'the platform apps accounts connect through (one app per client): add (secret on standard input or --secret-file), list, show, set a new secret, remove one no account uses',
    );
  withExamples(apps, 'feedmirror apps list --json');

  const add = apps
    .command('add')
    .description('add a platform app under a name of yours; its secret is read from standard input or --secret-file')
    .argument('<name>', 'your name for it (lower-case letters, digits, - and _), e.g. the client: acme')
    .option('--app-id <id>', "the platform's app id (required)")
    .option('--secret-file <file>', "read the app's secret from this file instead of standard input")
    .option('--json', 'print the app as JSON (never its secret)')
    .action(async (name: string, opts: { appId?: string; secretFile?: string; json?: boolean }) =>
      cli.setExit(await addCommand(name, opts, cli.io)),
    );
  withExamples(
    add,
    'feedmirror apps add acme --app-id 1234567890 < acme-secret.txt',
    'feedmirror apps add acme --app-id 1234567890 --secret-file /run/secrets/acme --json',
  );

  const list = apps
    .command('list')
    .description('every app (the default one from APP_ID first), with its accounts and any fault the platform reported')
    .option('--json', 'print the apps as JSON')
    .action(async (opts: { json?: boolean }) => cli.setExit(await listCommand(opts, cli.io)));
  withExamples(list, 'feedmirror apps list', 'feedmirror apps list --json');

  const show = apps
    .command('show')
    .description('one app: its id, accounts and fault (never its secret)')
    .argument('<name>', 'the app')
    .option('--json', 'print the app as JSON')
    .action(async (name: string, opts: { json?: boolean }) => cli.setExit(await showCommand(name, opts, cli.io)));
  withExamples(show, 'feedmirror apps show acme', 'feedmirror apps show acme --json');

  const set = apps
    .command('set')
    .description(
      'give an app its new secret (after it was reset on the platform), from standard input or --secret-file',
    )
    .argument('<name>', 'the app')
    .option('--secret-file <file>', 'read the new secret from this file instead of standard input')
    .option('--json', 'print the app as JSON')
    .action(async (name: string, opts: { secretFile?: string; json?: boolean }) =>
      cli.setExit(await setCommand(name, opts, cli.io)),
    );
  withExamples(
    set,
    'feedmirror apps set acme < new-secret.txt',
    'feedmirror apps set acme --secret-file new-secret.txt',
  );

  const remove = apps
    .command('remove')
    .description('remove an app; refused while an account is connected through it')
    .argument('<name>', 'the app')
    .option('--json', 'print {removed} as JSON')
    .action(async (name: string, opts: { json?: boolean }) => cli.setExit(await removeCommand(name, opts, cli.io)));
  withExamples(remove, 'feedmirror apps remove acme');
}

/** The secret from --secret-file or standard input; a usage failure (reported) as null. */
async function readSecret(io: CliIO, file: string | undefined): Promise<string | null> {
  let raw: string;
  try {
    raw = file !== undefined ? await readFile(file, 'utf8') : await readAll(io.stdin, { maxBytes: SECRET_MAX_BYTES });
  } catch (err) {
    if (err instanceof InputTooLargeError) {
      reportFailure(io, 'usage', `standard input is larger than ${SECRET_MAX_BYTES} bytes: give the app secret alone`);
      return null;
    }
    if (file !== undefined) {
      reportFailure(io, 'usage', `--secret-file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'cannot be read'}`);
      return null;
    }
    throw err;
  }
  const secret = raw.trim();
  if (!secret || /\s/.test(secret)) {
    reportFailure(
      io,
      'usage',
      secret
        ? 'the secret holds more than one word; give the app secret alone'
        : `no app secret ${file !== undefined ? `in ${file}` : 'on standard input'}: e.g. feedmirror apps add <name> --app-id <id> < secret.txt`,
    );
    return null;
  }
  return secret;
}

interface AppJson {
  name: string;
  appId: string | null;
  default: boolean;
  accounts: number;
  fault: { kind: string; message: string; at: string } | null;
  createdAt: string | null;
}

function appJson(a: StoredApp, accounts: number): AppJson {
  return {
    name: a.name,
    appId: a.appId,
    default: false,
    accounts,
    fault: a.fault ? { kind: a.fault.kind, message: a.fault.message, at: a.fault.at.toISOString() } : null,
    createdAt: a.createdAt.toISOString(),
  };
}

/** Bad input the store refuses (unknown name, duplicate id, in use): one line, exit 2. */
async function inputErrors(io: CliIO, work: () => Promise<number>): Promise<number> {
  const { AppInputError } = await import('../../store/apps.ts');
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof AppInputError)) throw err;
    reportFailure(io, 'usage', err.message);
    return EXIT.usage;
  }
}

async function addCommand(
  name: string,
  opts: { appId?: string; secretFile?: string; json?: boolean },
  io: CliIO,
): Promise<number> {
  const { checkAppName, AppInputError } = await import('../../store/apps.ts');
  const appId = opts.appId;
  if (appId === undefined) {
    reportFailure(io, 'usage', "--app-id <id> is required: the platform's id of the app");
    return EXIT.usage;
  }
  try {
    checkAppName(name);
  } catch (err) {
    if (!(err instanceof AppInputError)) throw err;
    reportFailure(io, 'usage', err.message);
    return EXIT.usage;
  }
  const secret = await readSecret(io, opts.secretFile);
  if (secret === null) return EXIT.usage;
  return withContext(io, (ctx) =>
    inputErrors(io, async () => {
      const { addApp } = await import('../../store/apps.ts');
      const db = await ctx.migratedDb();
      const app = await addApp(
        db,
        ctx.cipher,
        { name, appId, appSecret: secret, ...(ctx.config.APP_ID ? { defaultAppId: ctx.config.APP_ID } : {}) },
        ctx.clock.now(),
      );
      if (opts.json) printJson(io, appJson(app, 0));
      else
        io.stdout.write(
          `added app ${app.name} (app id ${app.appId}); invite its client's owners with feedmirror accounts invite --app ${app.name}\n`,
        );
      return EXIT.ok;
    }),
  );
}

async function listCommand(opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { listApps, accountsPerApp, DEFAULT_APP } = await import('../../store/apps.ts');
    const db = await ctx.migratedDb();
    const [apps, counts] = await Promise.all([listApps(db), accountsPerApp(db)]);
    const rows: AppJson[] = [
      {
        name: DEFAULT_APP,
        appId: ctx.config.APP_ID ?? null,
        default: true,
        accounts: counts.get(DEFAULT_APP) ?? 0,
        fault: null,
        createdAt: null,
      },
      ...apps.map((a) => appJson(a, counts.get(a.name) ?? 0)),
    ];
    if (opts.json) printJson(io, { apps: rows });
    else
      for (const r of rows)
        io.stdout.write(
          `${r.name}  ${r.appId ?? '(APP_ID not set)'}  ${r.accounts} account(s)${r.default ? '  (APP_ID/APP_SECRET)' : ''}${r.fault ? `  FAULT: ${r.fault.message}` : ''}\n`,
        );
    return EXIT.ok;
  });
}

async function showCommand(name: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, (ctx) =>
    inputErrors(io, async () => {
      const { requireApp, accountsPerApp } = await import('../../store/apps.ts');
      const db = await ctx.migratedDb();
      const app = await requireApp(db, name);
      const json = appJson(app, (await accountsPerApp(db)).get(app.name) ?? 0);
      if (opts.json) printJson(io, json);
      else
        io.stdout.write(
          [
            `app ${json.name}`,
            `app id: ${json.appId}`,
            `accounts: ${json.accounts}`,
            `added: ${json.createdAt}`,
            json.fault ? `fault (${json.fault.kind}, since ${json.fault.at}): ${json.fault.message}` : 'fault: none',
          ].join('\n') + '\n',
        );
      return EXIT.ok;
    }),
  );
}

async function setCommand(name: string, opts: { secretFile?: string; json?: boolean }, io: CliIO): Promise<number> {
  const secret = await readSecret(io, opts.secretFile);
  if (secret === null) return EXIT.usage;
  return withContext(io, (ctx) =>
    inputErrors(io, async () => {
      const { setAppSecret, accountsPerApp } = await import('../../store/apps.ts');
      const db = await ctx.migratedDb();
      const app = await setAppSecret(db, ctx.cipher, name, secret, ctx.clock.now());
      if (opts.json) printJson(io, appJson(app, (await accountsPerApp(db)).get(app.name) ?? 0));
      else io.stdout.write(`app ${app.name}: new secret stored; its recorded fault is cleared\n`);
      return EXIT.ok;
    }),
  );
}

async function removeCommand(name: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, (ctx) =>
    inputErrors(io, async () => {
      const { removeApp } = await import('../../store/apps.ts');
      await removeApp(await ctx.migratedDb(), name);
      if (opts.json) printJson(io, { removed: name });
      else io.stdout.write(`removed app ${name}\n`);
      return EXIT.ok;
    }),
  );
}
