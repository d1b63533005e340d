import { InvalidArgumentError, Option, type Command } from 'commander';
import { reportFailure } from '../failure.ts';
import { DURATION_HINT, parseDuration } from '../../util/duration.ts';
import { EXIT, InputTooLargeError, readAll, type CliIO } from '../io.ts';
import { accountIdArgument, printJson, withContext, withExamples, type Cli } from '../command.ts';
import { firstIssue, ownerEmailSchema, ownerLanguageSchema, ownerNameSchema } from '../../accounts/owner-contact.ts';
import type { AccountOwner } from '../../store/owners.ts';
import type { InvitationEmailOutcome } from '../../alerts/invitation-email.ts';
import type { MailMessage } from '../../alerts/mailer.ts';
import type { WebhookEvent } from '../../webhooks/events.ts';

/** A token is a few hundred bytes; anything near this is not a token (and is never buffered whole). */
export const STDIN_MAX_BYTES = 8 * 1024;

/**
 * `feedmirror accounts add|list|remove`. The token is read from standard input, never from an
 * argument, where shells and process lists would keep it (R-TOK-11).
 */
export function register(program: Command, cli: Cli): void {
  const accounts = program
    .command('accounts')
    .description(
      'connect (token on standard input), invite an owner, list, show, set the owner of, send a reconnect link for, or remove accounts',
    );
  withExamples(accounts, 'feedmirror accounts list --json');

  const add = accounts
    .command('add')
    .description(
      'connect an account with a short-lived token read from standard input (or a long-lived one with --long-lived)',
    )
    .option('--json', 'print the connected account as JSON')
    .option('--long-lived', 'the token is already long-lived (imported as is, not exchanged)')
    .option('--app <name>', 'the app that obtained the token (feedmirror apps list; default: APP_ID)')
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
      "create a one-time invitation link for an account's owner, and with --send email it to them: they open it, log in on the platform and approve (/connect is closed to anyone without one)",
    )
    .addOption(
      new Option('--expires <duration>', `how long the link works (${DURATION_HINT}; at most 90d)`)
        .argParser(invitationTtl)
        .default(7 * 86_400_000, '7d'),
    )
    .addOption(
      new Option(
        '--owner-email <email>',
        "the owner's email: the account it connects gets it (owner alerts)",
      ).argParser(ownerEmailArg),
    )
    .addOption(new Option('--owner-name <name>', "the owner's name (with --owner-email)").argParser(ownerNameArg))
    .option(
      '--send',
      'email the invitation to --owner-email now, as the alerts are sent (SMTP_URL; without it the email is only written to OUTBOX_DIR and the link is yours to send)',
    )
    .option('--app <name>', 'the app the account connects through (feedmirror apps list; default: APP_ID)')
    .option('--json', 'print {url, expiresAt, owner, app, emailed, email} as JSON')
    .action(async (opts: InviteOptions) => cli.setExit(await inviteCommand(opts, cli.io)));
  withExamples(
    invite,
    'feedmirror accounts invite',
    'feedmirror accounts invite --owner-email jane@example.com --owner-name "Jane Doe" --send',
    'feedmirror accounts invite --app acme --owner-email jane@acme.example',
    'feedmirror accounts invite --expires 2d --owner-email jane@example.com --owner-name "Jane Doe" --json',
  );

  const set = accounts
    .command('set')
    .description(
      "set an account's owner (who gets the expiry and reauth alerts with a reconnect link when OWNER_ALERTS is on), or clear it",
    )
    .addArgument(accountIdArgument())
    .addOption(new Option('--owner-email <email>', "the owner's email address").argParser(ownerEmailArg))
    .addOption(new Option('--owner-name <name>', "the owner's name, used to greet them").argParser(ownerNameArg))
    .addOption(
      new Option('--owner-language <code>', "the owner's language (only en is offered)").argParser(ownerLanguageArg),
    )
    .addOption(new Option('--owner-alerts <on|off>', "whether this account's owner gets alerts").choices(['on', 'off']))
    .addOption(
      new Option(
        '--clear-owner',
        'forget the owner (alerts go to the operator only; open reconnect links stop working)',
      ).conflicts(['ownerEmail', 'ownerName', 'ownerLanguage', 'ownerAlerts']),
    )
    .option('--json', "print the account's owner as JSON")
    .action(async (id: string, opts: SetOptions) => cli.setExit(await setAccountCommand(id, opts, cli.io)));
  withExamples(
    set,
    'feedmirror accounts set 17841400000000001 --owner-email jane@example.com --owner-name "Jane Doe"',
    'feedmirror accounts set 17841400000000001 --owner-alerts off',
    'feedmirror accounts set 17841400000000001 --clear-owner --json',
  );

  const link = accounts
    .command('reconnect-link')
    .description(
      "a new one-time reconnect link for an account waiting for its owner's login (earlier links stop working): printed for you to pass on, or with --send emailed to the owner",
    )
    .addArgument(accountIdArgument())
    .option(
      '--send',
      "email it to the account's owner with the reauth alert's email (SMTP_URL; without it the email is only written to OUTBOX_DIR)",
    )
    .option('--json', 'print the link (or to whom it was emailed) and its expiry as JSON')
    .action(async (id: string, opts: { send?: boolean; json?: boolean }) =>
      cli.setExit(await reconnectLinkCommand(id, opts, cli.io)),
    );
  withExamples(
    link,
    'feedmirror accounts reconnect-link 17841400000000001',
    'feedmirror accounts reconnect-link 17841400000000001 --send --json',
  );

  const show = accounts
    .command('show')
    .description('show one account: status, token expiry, last sync, health and owner')
    .addArgument(accountIdArgument())
    .option('--json', 'print the account as JSON')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await showAccountCommand(id, opts, cli.io)));
  withExamples(show, 'feedmirror accounts show 17841400000000001', 'feedmirror accounts show 17841400000000001 --json');

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
  app?: string;
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
      apps: ctx.apps,
      clock: ctx.clock,
      logger: ctx.logger,
      // The account and its token are committed first, then the lifecycle makes it active and
      // schedules it (R-TOK-8): its first sync and refresh check always find it.
      lifecycle: ctx.lifecycle,
      events: ctx.events,
    };
    const { DEFAULT_APP, requireApp, AppInputError } = await import('../../store/apps.ts');
    const app = opts.app !== undefined && opts.app !== DEFAULT_APP ? opts.app : null;
    if (app !== null)
      try {
        await requireApp(db, app);
      } catch (err) {
        if (!(err instanceof AppInputError)) throw err;
        reportFailure(io, 'usage', err.message);
        return EXIT.usage;
      }
    const account = opts.longLived
      ? await importLongLivedToken(deps, token, { ...(expiresAt ? { expiresAt } : {}), app })
      : await connectWithShortLivedToken(deps, token, { app });
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
      healthById(db, {
        now,
        syncIntervalMs: ctx.config.SYNC_INTERVAL_MINUTES * 60_000,
        apiVersion: { version: ctx.config.GRAPH_API_VERSION, warnDays: ctx.config.PLATFORM_VERSION_WARN_DAYS },
      }),
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
          owner: ownerJson(a.owner),
          // The platform app it is connected through (feedmirror apps list).
          app: a.app ?? 'default',
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

interface InviteOptions {
  expires: number;
  app?: string;
  json?: boolean;
  ownerEmail?: string;
  ownerName?: string;
  send?: boolean;
}

async function inviteCommand(opts: InviteOptions, io: CliIO): Promise<number> {
  if (opts.ownerName !== undefined && opts.ownerEmail === undefined) {
    reportFailure(io, 'usage', '--owner-name needs --owner-email');
    return EXIT.usage;
  }
  if (opts.send && opts.ownerEmail === undefined) {
    reportFailure(io, 'usage', '--send needs --owner-email (the address the invitation is emailed to)');
    return EXIT.usage;
  }
  return withContext(io, async (ctx) => {
    const { DEFAULT_APP, requireApp, AppInputError } = await import('../../store/apps.ts');
    const named = opts.app !== undefined && opts.app !== DEFAULT_APP ? opts.app : null;
    // An invitation leads to the platform's login: useless without its app.
    if (named === null) ctx.requireApp();
    else
      try {
        await requireApp(await ctx.migratedDb(), named);
      } catch (err) {
        if (!(err instanceof AppInputError)) throw err;
        reportFailure(io, 'usage', err.message);
        return EXIT.usage;
      }
    // A mail server that does not answer fails here, within seconds, before anything is made.
    if (opts.send) await ctx.ensureSmtp();
    const { createInvitation } = await import('../../store/invitations.ts');
    const { invitationUrl } = await import('../../http/connect.ts');
    const db = await ctx.migratedDb();
    // The templates are read (and an unusable override refused) before the invitation is made.
    const mail = opts.send
      ? {
          db,
          // The mailer is made at the email: a mail setting at fault is this email's failure, in one line.
          mailer: { send: (m: MailMessage) => ctx.mailer.send(m) },
          clock: ctx.clock,
          logger: ctx.logger,
          emailTemplates: ctx.emailTemplates,
          brand: ctx.brand,
        }
      : null;
    // R-OWN-10: the account this invitation connects gets its owner.
    const owner = opts.ownerEmail ? { email: opts.ownerEmail, name: opts.ownerName ?? null, language: null } : null;
    const inv = await createInvitation(db, ctx.clock.now(), opts.expires, 'cli', owner, named);
    const url = invitationUrl(ctx.config.PUBLIC_URL, inv.token);
    let email: InvitationEmailOutcome | null = null;
    if (mail && owner) {
      const { emailInvitation } = await import('../../alerts/invitation-email.ts');
      email = await emailInvitation(mail, { hash: inv.hash, url, expiresAt: inv.expiresAt, owner });
    }
    if (opts.json)
      printJson(io, {
        url,
        expiresAt: inv.expiresAt.toISOString(),
        owner: owner ? { email: owner.email, name: owner.name } : null,
        app: named ?? DEFAULT_APP,
        emailed: email?.emailed ?? false,
        email: email ? invitationEmailJson(email) : null,
      });
    else {
      const recorded = "recorded as the account's owner when it connects";
      const until = `works once, until ${inv.expiresAt.toISOString()}`;
      io.stdout.write(
        email?.emailed
          ? `${url}\n${until}; emailed to ${email.to} (${recorded})\n`
          : `${url}\n${until}; send it to the account's owner${owner ? ` (${owner.email}, ${recorded})` : ''}\n`,
      );
    }
    if (email && !email.emailed) {
      if (email.via === 'outbox')
        // The deployment's mail goes to a folder: the invitation is made, the owner has nothing yet.
        io.stderr.write(
          `not emailed: SMTP_URL is not set, so the invitation email was written to ${email.path ?? ctx.config.OUTBOX_DIR} instead; send the link above to ${email.to}\n`,
        );
      else {
        reportFailure(io, 'failed', `not emailed: ${email.error}; send the link above to ${email.to}`);
        return EXIT.failed;
      }
    }
    return EXIT.ok;
  });
}

/** The email of an invitation as --json prints it. */
function invitationEmailJson(e: InvitationEmailOutcome) {
  if (e.via === null) return { to: e.to, via: null, error: e.error };
  return { to: e.to, at: e.at.toISOString(), via: e.via, ...(e.via === 'outbox' ? { path: e.path } : {}) };
}

function ownerEmailArg(raw: string): string {
  const r = ownerEmailSchema.safeParse(raw);
  if (!r.success) throw new InvalidArgumentError(firstIssue(r.error));
  return r.data;
}

function ownerNameArg(raw: string): string {
  const r = ownerNameSchema.safeParse(raw);
  if (!r.success) throw new InvalidArgumentError(firstIssue(r.error));
  return r.data;
}

function ownerLanguageArg(raw: string): string {
  const r = ownerLanguageSchema.safeParse(raw);
  if (!r.success) throw new InvalidArgumentError(firstIssue(r.error));
  return r.data;
}

/** The owner as --json prints it (null: none recorded). */
export function ownerJson(owner: AccountOwner | null) {
  return owner ? { name: owner.name, email: owner.email, language: owner.language, alerts: owner.alerts } : null;
}

interface SetOptions {
  ownerEmail?: string;
  ownerName?: string;
  ownerLanguage?: string;
  ownerAlerts?: 'on' | 'off';
  clearOwner?: boolean;
  json?: boolean;
}

async function setAccountCommand(id: string, opts: SetOptions, io: CliIO): Promise<number> {
  const changes =
    opts.ownerEmail !== undefined ||
    opts.ownerName !== undefined ||
    opts.ownerLanguage !== undefined ||
    opts.ownerAlerts !== undefined;
  if (!changes && !opts.clearOwner) {
    reportFailure(
      io,
      'usage',
      'nothing to set: give --owner-email, --owner-name, --owner-language, --owner-alerts or --clear-owner',
    );
    return EXIT.usage;
  }
  return withContext(io, async (ctx) => {
    const { getAccount } = await import('../../store/accounts.ts');
    const { clearOwner, setOwner } = await import('../../store/owners.ts');
    const db = await ctx.migratedDb();
    const now = ctx.clock.now();
    const account = await getAccount(db, id);
    if (!account) {
      reportFailure(io, 'not_found', `no account with id ${id}`);
      return EXIT.failed;
    }
    if (opts.clearOwner) {
      await clearOwner(db, id, now);
    } else {
      if (!account.owner && opts.ownerEmail === undefined) {
        reportFailure(io, 'usage', `@${account.username} has no owner yet: give --owner-email first`);
        return EXIT.usage;
      }
      await setOwner(
        db,
        id,
        {
          ...(opts.ownerEmail !== undefined ? { email: opts.ownerEmail } : {}),
          ...(opts.ownerName !== undefined ? { name: opts.ownerName } : {}),
          ...(opts.ownerLanguage !== undefined ? { language: opts.ownerLanguage } : {}),
          ...(opts.ownerAlerts !== undefined ? { alerts: opts.ownerAlerts === 'on' } : {}),
        },
        now,
      );
    }
    const after = (await getAccount(db, id))!;
    ctx.logger.info({ accountId: id, owner: after.owner ? 'set' : 'none' }, 'account owner changed');
    if (opts.json) printJson(io, { id, username: after.username, owner: ownerJson(after.owner) });
    else io.stdout.write(`@${after.username}: ${ownerLine(after.owner, ctx.config.OWNER_ALERTS)}\n`);
    return EXIT.ok;
  });
}

/**
 * A new reconnect link for an account waiting for its owner (R-OWN-12: the earlier ones stop
 * working), the dashboard's two buttons from the command line: shown once to pass on, or emailed
 * to the owner (then the account.owner_notified event, R-OWN-14).
 */
async function reconnectLinkCommand(id: string, opts: { send?: boolean; json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { emailOwnerLink, makeOwnerLink, OwnerLinkRefused } = await import('../../alerts/owner-links.ts');
    const db = await ctx.migratedDb();
    if (opts.send) {
      // Within seconds, before a link is made: the event needs Redis, the email its server.
      await ctx.ensureRedis();
      await ctx.ensureSmtp();
    }
    const deps = {
      db,
      mailer: { send: (m: MailMessage) => ctx.mailer.send(m) },
      clock: ctx.clock,
      logger: ctx.logger,
      publicUrl: ctx.config.PUBLIC_URL,
      // Made at the first event: a link to copy emits none and needs no Redis.
      events: { emit: (e: WebhookEvent) => ctx.events.emit(e) },
      linkTtlMs: ctx.config.RECONNECT_LINK_TTL,
      emailTemplates: opts.send ? ctx.emailTemplates : undefined,
      brand: ctx.brand,
    };
    try {
      if (opts.send) {
        const sent = await emailOwnerLink(deps, id);
        if (opts.json)
          printJson(io, {
            id,
            username: sent.username,
            emailed: sent.delivered === 'smtp',
            to: sent.to,
            via: sent.delivered,
            expiresAt: sent.expiresAt.toISOString(),
          });
        else
          io.stdout.write(
            `a new reconnect link for @${sent.username} was ${sent.delivered === 'smtp' ? 'emailed to' : 'written to the outbox for'} ${sent.to}; it works once, until ${sent.expiresAt.toISOString()}; earlier links no longer work\n`,
          );
        if (sent.delivered === 'outbox')
          io.stderr.write(
            `not emailed: SMTP_URL is not set, so the email was only written to ${ctx.config.OUTBOX_DIR}; run without --send for a link to pass on\n`,
          );
        return EXIT.ok;
      }
      const made = await makeOwnerLink(deps, id);
      if (opts.json)
        printJson(io, { id, username: made.username, url: made.url, expiresAt: made.expiresAt.toISOString() });
      else
        io.stdout.write(
          `${made.url}\nworks once, until ${made.expiresAt.toISOString()}, and only for @${made.username}; earlier links no longer work: pass it on to the account's owner\n`,
        );
      return EXIT.ok;
    } catch (err) {
      if (!(err instanceof OwnerLinkRefused)) throw err;
      reportFailure(io, /no such account/.test(err.message) ? 'not_found' : 'failed', `no link made: ${err.message}`);
      return EXIT.failed;
    }
  });
}

/**
 * `accounts show`'s line about the owner, saying whether they get alerts now and why not
 * (docs/getting-started.md's tour prints it word for word).
 */
export function ownerLine(owner: Pick<AccountOwner, 'email' | 'name' | 'alerts'> | null, deployment: boolean): string {
  if (!owner) return 'owner:     none recorded (alerts go to the operator only)';
  const who = owner.name ? `${owner.name} <${owner.email}>` : owner.email;
  const alerts = !owner.alerts
    ? 'owner alerts off for this account'
    : deployment
      ? 'gets the expiry and reauth alerts with a reconnect link'
      : 'owner alerts on for this account, but OWNER_ALERTS is off for the deployment';
  return `owner:     ${who}; ${alerts}`;
}

async function showAccountCommand(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { listAccounts } = await import('../../store/accounts.ts');
    const { syncSummary } = await import('../../accounts/sync-summary.ts');
    const { healthById, healthLine } = await import('../../accounts/health.ts');
    const db = await ctx.migratedDb();
    const now = ctx.clock.now();
    const a = (await listAccounts(db, now)).find((x) => x.id === id);
    if (!a) {
      reportFailure(io, 'not_found', `no account with id ${id}`);
      return EXIT.failed;
    }
    const health = (
      await healthById(db, {
        now,
        syncIntervalMs: ctx.config.SYNC_INTERVAL_MINUTES * 60_000,
        apiVersion: { version: ctx.config.GRAPH_API_VERSION, warnDays: ctx.config.PLATFORM_VERSION_WARN_DAYS },
      })
    ).get(id) ?? { verdict: 'fail' as const, reasons: [] };
    if (opts.json) {
      printJson(io, {
        id: a.id,
        username: a.username,
        status: a.status,
        statusReason: a.statusReason,
        expiresAt: a.expiresAt?.toISOString() ?? null,
        daysLeft: a.daysLeft,
        lastSyncAt: a.lastSyncAt?.toISOString() ?? null,
        lastCompleteSyncAt: a.lastCompleteSyncAt?.toISOString() ?? null,
        lastSync: syncSummary(a).text,
        owner: ownerJson(a.owner),
        health: {
          verdict: health.verdict,
          reasons: health.reasons.map((r) => ({ kind: r.kind, level: r.level, text: r.text })),
        },
      });
    } else {
      const expiry = a.expiresAt
        ? `expires ${a.expiresAt.toISOString().slice(0, 10)} (${a.daysLeft} days left)`
        : 'no token';
      io.stdout.write(
        [
          `@${a.username} (id ${a.id})`,
          `status:    ${a.status}${a.statusReason ? ` (${a.statusReason})` : ''}`,
          `token:     ${expiry}`,
          `last sync: ${syncSummary(a).text}`,
          `health:    ${healthLine(health, 3)}`,
          ownerLine(a.owner, ctx.config.OWNER_ALERTS),
        ].join('\n') + '\n',
      );
    }
    return EXIT.ok;
  });
}
