import { InvalidArgumentError, Option, type Command } from 'commander';
import { reportFailure } from '../failure.ts';
import { DURATION_HINT, parseDuration } from '../../util/duration.ts';
import { EXIT, InputTooLargeError, readAll, type CliIO } from '../io.ts';
import { accountIdArgument, printJson, withContext, withExamples, type Cli } from '../command.ts';

/** A token is a few hundred bytes; anything near this is not a token (and is never buffered whole). */
export const STDIN_MAX_BYTES = 8 * 1024;

/**
 * `feedmirror accounts add|list|remove`. The token is read from standard input, never from an
 * argument, where shells and process lists would keep it (R-TOK-11).
 */
export function register(program: Command, cli: Cli): void {
  const accounts = program
    .command('accounts')
    .description('connect (token on standard input), invite an owner, list or remove accounts');
  withExamples(accounts, 'feedmirror accounts list --json');

  const add = accounts
    .command('add')
    .description(
      'connect an account with a short-lived token read from standard input (or a long-lived one with --long-lived)',
    )
    .option('--json', 'print the connected account as JSON')
    .option('--long-lived', 'the token is already long-lived (imported as is, not exchanged)')
    .addOption(
      new Option('--expires-at <date>', 'expiry of the long-lived token (ISO 8601), when known').implies({
        longLived: true,
      }),
    )
    .action(async (opts: AddOptions) => cli.setExit(await addAccount(opts, cli.io)));
  withExamples(
    add,
    'feedmirror accounts add < short-lived-token.txt',
    'pass show ig/token | feedmirror accounts add --long-lived --expires-at 2026-09-01T00:00:00Z --json',
  );

  const invite = accounts
    .command('invite')
    .description(
      "create a one-time invitation link for an account's owner: they open it, log in on the platform and approve (/connect is closed to anyone without one)",
    )
    .addOption(
      new Option('--expires <duration>', `how long the link works (${DURATION_HINT}; at most 90d)`)
        .argParser(invitationTtl)
        .default(7 * 86_400_000, '7d'),
    )
    .option('--json', 'print {url, expiresAt} as JSON')
    .action(async (opts: { expires: number; json?: boolean }) => cli.setExit(await inviteCommand(opts, cli.io)));
  withExamples(invite, 'feedmirror accounts invite', 'feedmirror accounts invite --expires 2d --json');

  const list = accounts
    .command('list')
    .description('list the connected accounts: status, token expiry and health (ok, warn or fail, with the reasons)')
    .option('--json', 'print the accounts as JSON')
    .action(async (opts: { json?: boolean }) => cli.setExit(await listAccountsCommand(opts, cli.io)));
  withExamples(
    list,
    'feedmirror accounts list',
    'feedmirror accounts list --json | jq -r \'.[] | select(.health.verdict != "ok") | .username\'',
  );

  const remove = accounts
    .command('remove')
    .description('remove an account: its token is deleted and its jobs stopped')
    .addArgument(accountIdArgument())
    .option('--json', 'print the outcome as JSON')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await removeAccountCommand(id, opts, cli.io)));
  withExamples(remove, 'feedmirror accounts remove 17841400000000001');
}

interface AddOptions {
  json?: boolean;
  longLived?: boolean;
  expiresAt?: string;
}

async function addAccount(opts: AddOptions, io: CliIO): Promise<number> {
  let expiresAt: Date | undefined;
  if (opts.expiresAt !== undefined) {
    expiresAt = new Date(opts.expiresAt);
    if (Number.isNaN(expiresAt.getTime())) {
      io.stderr.write(`--expires-at: not a date: ${opts.expiresAt}\n`);
      return EXIT.usage;
    }
  }
  let raw: string;
  try {
    raw = await readAll(io.stdin, { maxBytes: STDIN_MAX_BYTES });
  } catch (err) {
    if (!(err instanceof InputTooLargeError)) throw err;
    io.stderr.write(
      `standard input is larger than ${STDIN_MAX_BYTES} bytes (${STDIN_MAX_BYTES / 1024} KB): give the token alone, e.g. \`feedmirror accounts add < token.txt\`\n`,
    );
    return EXIT.usage;
  }
  const token = raw.trim();
  if (!token) {
    io.stderr.write('no token on standard input: pipe it in, e.g. `feedmirror accounts add < token.txt`\n');
    return EXIT.usage;
  }
  if (/\s/.test(token)) {
    io.stderr.write('standard input holds more than one word; give the token alone\n');
    return EXIT.usage;
  }
  return withContext(io, async (ctx) => {
    const { connectWithShortLivedToken, importLongLivedToken } = await import('../../accounts/connect.ts');
    // Everything it needs answers before the token is used: a service that is down fails here, with
    // nothing done (R-TOK-1: the short-lived token is still good for its hour).
    await ctx.readyQueues();
    const db = await ctx.migratedDb();
    const deps = {
      db,
      cipher: ctx.cipher,
      platform: ctx.platform,
      clock: ctx.clock,
      logger: ctx.logger,
      // The account and its token are committed first, then the lifecycle makes it active and
      // schedules it (R-TOK-8): its first sync and refresh check always find it.
      lifecycle: ctx.lifecycle,
    };
    const account = opts.longLived
      ? await importLongLivedToken(deps, token, { expiresAt })
      : await connectWithShortLivedToken(deps, token);
    if (opts.json)
      io.stdout.write(
        JSON.stringify({
          id: account.id,
          username: account.username,
          expiresAt: account.expiresAt.toISOString(),
          scheduled: account.scheduled,
        }) + '\n',
      );
    else
      io.stdout.write(
        `connected @${account.username} (id ${account.id}); token valid until ${account.expiresAt.toISOString()}\n`,
      );
    if (!account.scheduled)
      // Redis went away between the commit and the schedules: the account is connected, and a
      // worker creates its jobs from PostgreSQL (at its start, or its reconciler), so nothing is
      // left half-done for the operator to repair.
      io.stderr.write(
        `@${account.username} is connected, but its jobs could not be created now (Redis did not answer); a running \`feedmirror worker\` creates them within RECONCILE_INTERVAL_SECONDS (${ctx.config.RECONCILE_INTERVAL_SECONDS} s), or when one starts; \`feedmirror sync ${account.id}\` queues its first sync once Redis answers\n`,
      );
    return EXIT.ok;
  });
}

async function listAccountsCommand(opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { listAccounts } = await import('../../store/accounts.ts');
    const { syncSummary } = await import('../../accounts/sync-summary.ts');
    const { healthById, healthLine } = await import('../../accounts/health.ts');
    const db = await ctx.migratedDb();
    const now = ctx.clock.now();
    // R-HLT-1: the same verdict the dashboard, /metrics and doctor show.
    const [rows, health] = await Promise.all([
      listAccounts(db, now),
      healthById(db, { now, syncIntervalMs: ctx.config.SYNC_INTERVAL_MINUTES * 60_000 }),
    ]);
    const healthOf = (id: string) => health.get(id) ?? { verdict: 'fail' as const, reasons: [] };
    if (opts.json) {
      printJson(
        io,
        rows.map((a) => ({
          id: a.id,
          username: a.username,
          status: a.status,
          expiresAt: a.expiresAt?.toISOString() ?? null,
          daysLeft: a.daysLeft,
          lastSyncAt: a.lastSyncAt?.toISOString() ?? null,
          // How the last sync ended ("complete", "sync failed: …", "N items skipped: …"); whether
          // the account is well is `health`, never this.
          lastSync: syncSummary(a).text,
          lastSyncError: a.lastSyncError,
          lastSyncErrorKind: a.lastSyncErrorKind,
          skippedItems: a.skippedItems,
          skippedReasons: a.skippedReasons,
          statusReason: a.statusReason,
          statusReasonKind: a.statusReasonKind,
          health: {
            verdict: healthOf(a.id).verdict,
            reasons: healthOf(a.id).reasons.map((r) => ({ kind: r.kind, level: r.level, text: r.text })),
          },
        })),
      );
    } else if (rows.length === 0) {
      io.stdout.write(
        'no accounts connected yet: invite an owner (`feedmirror accounts invite`), connect from the dashboard, or use `feedmirror accounts add`\n',
      );
    } else {
      for (const a of rows) {
        const expiry = a.expiresAt
          ? `expires ${a.expiresAt.toISOString().slice(0, 10)} (${a.daysLeft} days left)`
          : 'no token';
        io.stdout.write(`${a.id}\t@${a.username}\t${a.status}\t${expiry}\t${healthLine(healthOf(a.id), 3)}\n`);
      }
    }
    return EXIT.ok;
  });
}

async function removeAccountCommand(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    await ctx.ensureRedis();
    await ctx.migratedDb();
    // The lifecycle stops the schedules first, then deletes the account (its history stays).
    const { changed: removed } = await ctx.lifecycle.apply(id, 'removed');
    if (!removed) {
      reportFailure(io, 'not_found', `no account with id ${id}`);
      return EXIT.failed;
    }
    if (opts.json) printJson(io, { id, removed: true });
    else io.stdout.write(`removed account ${id}: its token is deleted and its jobs stopped\n`);
    return EXIT.ok;
  });
}

const MAX_INVITATION_MS = 90 * 86_400_000;

function invitationTtl(raw: string): number {
  const ms = parseDuration(raw);
  if (ms === null || ms > MAX_INVITATION_MS) throw new InvalidArgumentError(`must be ${DURATION_HINT}, at most 90d`);
  return ms;
}

async function inviteCommand(opts: { expires: number; json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    ctx.requireApp(); // an invitation leads to the platform's login: useless without the app
    const { createInvitation } = await import('../../store/invitations.ts');
    const { invitationUrl } = await import('../../http/connect.ts');
    const inv = await createInvitation(await ctx.migratedDb(), ctx.clock.now(), opts.expires, 'cli');
    const url = invitationUrl(ctx.config.PUBLIC_URL, inv.token);
    if (opts.json) printJson(io, { url, expiresAt: inv.expiresAt.toISOString() });
    else io.stdout.write(`${url}\nworks once, until ${inv.expiresAt.toISOString()}; send it to the account's owner\n`);
    return EXIT.ok;
  });
}
