import { InvalidArgumentError, type Command } from 'commander';
import { EXIT, type CliIO } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';
import { idSchema } from '../../util/ids.ts';
import { reportFailure } from '../failure.ts';

/**
 * `feedmirror verify [--account <id>] [--repair [--force]] [--json]`: do PostgreSQL, Redis and the
 * storage agree (src/verify/verify.ts)? Exit 0 when they do, 1 with each problem named otherwise;
 * with --repair, exit 0 once everything was repaired (checked again after the repair). --force
 * lets the repair past the deletion guard's cap (R-DEL-4), never past the rest of the guard.
 */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('verify')
    .description(
      'check that the stores agree: schedules, published feeds, every image the feeds and the records call for in storage (size and type), no orphaned copies, every stored secret readable, widgets and the widget script, status documents as PUBLISH_STATUS says; exit 1 naming each problem',
    )
    .option('--account <id>', 'only this account', (raw: string) => {
      const id = accountId.safeParse(raw);
      if (!id.success) throw new InvalidArgumentError(id.error.issues[0]?.message ?? 'invalid account id');
      return id.data;
    })
    .option(
      '--repair',
      'in one run: copy missing images again (links renewed first), then publish feeds, widgets, status documents and the widget script again, set schedules again, delete orphans past the grace period and status documents PUBLISH_STATUS does not want; then check again',
    )
    .option(
      '--force',
      "with --repair: delete orphans even when they are more than DELETE_CAP_OBJECTS and DELETE_CAP_SHARE of an account's objects (never in a storage without this deployment's marker, never a name feedmirror does not write)",
    )
    .option(
      '--inventory <manifest>',
      'take what the bucket holds from an S3 Inventory report (its manifest.json, CSV data files beside it as AWS writes them) instead of listing the bucket; what the report alone says is wrong is confirmed with a HEAD',
    )
    .option('--json', 'print the report as one JSON document (no progress lines)')
    .action(async (opts: VerifyCliOptions) => {
      if (opts.force && !opts.repair) {
        reportFailure(cli.io, 'usage', '--force goes with --repair: only the repair deletes anything');
        return cli.setExit(EXIT.usage);
      }
      cli.setExit(await verify(opts, cli.io));
    });
  withExamples(
    cmd,
    'feedmirror verify',
    'feedmirror verify --account 17841400000000001 --repair',
    'feedmirror verify --account 17841400000000001 --repair --force   # after looking at the orphans it held',
    'feedmirror verify --inventory ./inventory/2026-11-27T01-00Z/manifest.json',
    "npm run -s feedmirror -- verify --json | jq '.problems[]'",
  );
}
const accountId = idSchema('account id');

interface VerifyCliOptions {
  account?: string;
  repair?: boolean;
  force?: boolean;
  json?: boolean;
  inventory?: string;
}

async function verify(opts: VerifyCliOptions, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { runVerify } = await import('../../verify/verify.ts');
    const { scheduleCheck } = await import('../../../jobs/verify-schedules.ts');
    const { getAccount } = await import('../../store/accounts.ts');
    const { HOUR } = await import('../../util/clock.ts');
    // Every store answers first: an unreachable one is one line and exit 3, not a report.
    await ctx.ensureStorage();
    const queues = await ctx.readyQueues();
    const deps = await ctx.feedDeps();
    if (opts.account !== undefined && !(await getAccount(deps.db, opts.account))) {
      reportFailure(io, 'not_found', `no account with id ${opts.account}`);
      return EXIT.failed;
    }
    let listing;
    if (opts.inventory !== undefined) {
      const { openInventory, InventoryError } = await import('../../verify/inventory.ts');
      const location = (deps.storage as { location?: { bucket: string; prefix: string } }).location;
      if (!location) {
        reportFailure(io, 'usage', '--inventory reads an S3 Inventory report: STORAGE_URL is not s3://');
        return EXIT.usage;
      }
      try {
        listing = await openInventory(opts.inventory, location);
      } catch (err) {
        if (!(err instanceof InventoryError)) throw err;
        reportFailure(io, 'usage', err.message);
        return EXIT.usage;
      }
    }
    // Progress on a terminal only: a pipe or a log gets the report alone.
    const tty = !opts.json && (io.stderr as { isTTY?: boolean }).isTTY === true;
    const progress = progressLine(Date.now);
    const report = await runVerify(
      {
        ...deps,
        schedules: scheduleCheck({ db: deps.db, queues, schedules: ctx.schedules }),
        widgets: ctx.widgetDeps,
        publishStatus: ctx.config.PUBLISH_STATUS,
      },
      {
        trigger: 'cli',
        repair: opts.repair === true,
        ...(opts.force ? { force: true } : {}),
        orphanGraceMs: ctx.config.VERIFY_ORPHAN_GRACE_HOURS * HOUR,
        ...(opts.account !== undefined ? { accountId: opts.account } : {}),
        ...(listing ? { listing } : {}),
        ...(tty ? { onProgress: (p) => io.stderr.write(progress(p)) } : {}),
      },
    );
    if (opts.json) {
      printJson(io, {
        ok: report.ok,
        ...(opts.account !== undefined ? { accountId: opts.account } : {}),
        repair: opts.repair === true,
        counts: report.counts,
        problems: report.problems,
        ...(report.found ? { found: report.found } : {}),
        repaired: report.repaired,
      });
      if (!report.ok) reportFailure(io, 'failed', disagree(report.problems.length, report.found !== undefined));
      return report.ok ? EXIT.ok : EXIT.failed;
    }
    const c = report.counts;
    const line = (s: string) => io.stdout.write(s + '\n');
    if (report.found) {
      line(`found ${report.found.length} problem(s):`);
      for (const p of report.found) line(`  ${describe(p)}`);
      line(`repaired ${report.repaired.filter((r) => !NOT_REPAIRED.has(r.kind)).length}:`);
      for (const r of report.repaired) line(`  ${describe(r)}`);
    }
    line(
      `checked ${c.accounts} account(s), ${c.feeds} feed(s), ${c.objects} object(s) the feeds point at, ` +
        `${c.storedObjects} stored under media/ (${c.orphans} orphaned, ${c.unreferencedRecent} unreferenced but recent), ` +
        `${c.tokens} token(s), ${c.webhookSecrets} webhook secret(s), ${c.widgets} widget(s), ${c.statusDocuments} status document(s), ${c.scheduleDifferences} schedule difference(s)`,
    );
    if (report.ok) {
      line(report.found ? 'all well after the repair' : 'all well: the stores agree');
      return EXIT.ok;
    }
    line(`${report.problems.length} problem(s)${report.found ? ' left after the repair' : ''}:`);
    for (const p of report.problems) line(`  ${describe(p)}`);
    if (!opts.repair) line('run `feedmirror verify --repair` to repair them');
    reportFailure(io, 'failed', disagree(report.problems.length, report.found !== undefined));
    return EXIT.failed;
  });
}

/**
 * The progress line of a long run on a terminal: done of total, the rate, the time left (from the
 * accounts' rate), rewritten in place; a new line when a phase ends.
 */
export function progressLine(
  now: () => number,
): (p: { phase: string; accountsDone: number; accounts: number; storedObjects?: number; objects: number }) => string {
  let phase = '';
  let since = now();
  return (p) => {
    if (p.phase !== phase) {
      phase = p.phase;
      since = now();
    }
    const seconds = Math.max((now() - since) / 1000, 0.001);
    const objects = p.storedObjects ?? p.objects;
    const rate = objects / seconds;
    const left = p.accountsDone > 0 ? ((p.accounts - p.accountsDone) * seconds) / p.accountsDone : 0;
    const eta =
      p.accountsDone >= p.accounts
        ? 'done'
        : left >= 3600
          ? `${(left / 3600).toFixed(1)} h left`
          : left >= 60
            ? `${Math.round(left / 60)} min left`
            : `${Math.round(left)} s left`;
    return `\r${p.phase}: ${p.accountsDone}/${p.accounts} accounts, ${objects} objects, ${Math.round(rate)} objects/s, ${eta}${p.accountsDone >= p.accounts ? '\n' : ''}`;
  };
}

/** Repair actions that repaired nothing: a failure, and the deletion guard's refusals (R-DEL-1..4). */
const NOT_REPAIRED = new Set(['repair-failed', 'orphan-kept', 'delete-held', 'delete-refused']);

/** The one line on stderr when something is wrong. */
function disagree(problems: number, repaired: boolean): string {
  return `the stores disagree: ${problems} problem(s)${repaired ? ' left after the repair' : ''}`;
}

function describe(p: { kind: string; accountId?: string; key?: string; detail: string }): string {
  return [p.kind, p.accountId ? `account ${p.accountId}` : '', p.key ?? '', p.detail].filter(Boolean).join('  ');
}
