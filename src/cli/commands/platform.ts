import type { Command } from 'commander';
import { reportFailure } from '../failure.ts';
import { EXIT, type CliIO } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';
import { ID_PATTERN } from '../../util/ids.ts';
import { knownVersions } from '../../platform/versions.ts';
import { DROPPABLE_FIELDS } from '../../platform/media-item.ts';
import type { VersionComparison, DifferenceSummary } from '../../convert/version-compare.ts';

/**
 * `feedmirror platform compare --version <v> [--account <id>] [--json]` (R-MED-13): read the same
 * media of every connected account (or one) through the pinned API version and a candidate, and
 * say what differs, field by field, in the platform's items and in the schema v1 posts they
 * convert to, and whether moving would change a published feed. It reads only: nothing is stored,
 * published or queued; each listing is paced like a sync's (R-OWN-1).
 */
export function register(program: Command, cli: Cli): void {
  const platform = program.command('platform').description('the platform API: compare versions before moving');
  withExamples(platform, 'feedmirror platform compare --version v26.0');
  const compare = platform
    .command('compare')
    .description(
      'read the same media through the pinned API version (GRAPH_API_VERSION) and another, and report every difference in the items and in the posts they convert to, and whether moving would change a published feed',
    )
    .option('--version <v>', `the candidate version, required (${knownVersions().join(', ')})`)
    .option('--account <id>', 'only this account (default: every connected account)')
    .option('--json', 'print the comparison as JSON')
    .action(async (opts: CompareOptions) => cli.setExit(await compareCommand(opts, cli.io)));
  compare.addHelpText(
    'after',
    '\nIt reads only: nothing is stored, published or queued. Move by setting GRAPH_API_VERSION and restarting\nworker and serve once the comparison shows no feed would change, or you accept the changes it names\n(docs/platform-versions.md).\n',
  );
  withExamples(
    compare,
    'feedmirror platform compare --version v26.0',
    'feedmirror platform compare --version v26.0 --account 17841400000000001 --json',
  );
}

interface CompareOptions {
  version?: string;
  account?: string;
  json?: boolean;
}

interface AccountResult {
  accountId: string;
  username: string;
  /** The comparison, or why the account could not be compared. */
  comparison?: VersionComparison;
  error?: string;
}

async function compareCommand(given: CompareOptions, io: CliIO): Promise<number> {
  if (given.version === undefined) {
    reportFailure(
      io,
      'usage',
      `--version <v> is required: the version to compare with (${knownVersions().join(', ')})`,
    );
    return EXIT.usage;
  }
  const opts = { ...given, version: given.version };
  if (!knownVersions().includes(opts.version)) {
    reportFailure(
      io,
      'usage',
      `--version: ${opts.version} is not a version feedmirror knows (${knownVersions().join(', ')})`,
    );
    return EXIT.usage;
  }
  if (opts.account !== undefined && !ID_PATTERN.test(opts.account)) {
    reportFailure(io, 'usage', '--account: account id must be 1-128 characters of A-Z a-z 0-9 _ -');
    return EXIT.usage;
  }
  return withContext(io, async (ctx) => {
    const pinned = ctx.config.GRAPH_API_VERSION;
    if (opts.version === pinned) {
      reportFailure(
        io,
        'usage',
        `--version: ${pinned} is the pinned version already (GRAPH_API_VERSION); name another`,
      );
      return EXIT.usage;
    }
    const { getAccount, listAccounts } = await import('../../store/accounts.ts');
    const { loadToken } = await import('../../store/tokens.ts');
    const { compareListings } = await import('../../convert/version-compare.ts');
    const { versionAvailability } = await import('../../platform/versions.ts');
    const { PlatformError } = await import('../../platform/errors.ts');
    const db = await ctx.migratedDb();
    const now = ctx.clock.now();
    let accounts;
    if (opts.account !== undefined) {
      const a = await getAccount(db, opts.account);
      if (!a) {
        reportFailure(io, 'not_found', `no account with id ${opts.account}`);
        return EXIT.failed;
      }
      accounts = [a];
    } else accounts = await listAccounts(db, now, { status: 'active', withTokenOnly: true });

    const clients = { pinned: ctx.platformAt(pinned), candidate: ctx.platformAt(opts.version) };
    const results: AccountResult[] = [];
    for (const account of accounts) {
      const result: AccountResult = { accountId: account.id, username: account.username };
      results.push(result);
      const token = account.status === 'active' ? await loadToken(db, ctx.cipher, account.id) : null;
      if (!token) {
        result.error =
          account.status === 'active'
            ? 'no token is stored: connect the account first'
            : 'the account needs its owner to connect again: nothing can be read';
        continue;
      }
      const list = (client: typeof clients.pinned) =>
        client.listMedia(token.accessToken, {
          accountId: account.id,
          // Only names the client knows (as the sync passes them): a stored name it did not know would drop a field.
          refusedFields: DROPPABLE_FIELDS.filter((f) => account.refusedFields.includes(f)),
          maxItems: ctx.config.LISTING_MAX_ITEMS,
        });
      try {
        const [p, c] = [await list(clients.pinned), await list(clients.candidate)];
        const failed = [p, c].find((l) => l.error && l.items.length === 0);
        if (failed?.error) {
          result.error = `${failed === p ? pinned : opts.version}: ${failed.error.message}`;
          continue;
        }
        result.comparison = compareListings(
          { version: pinned, items: p.items, skipped: p.skipped, complete: p.complete },
          { version: opts.version, items: c.items, skipped: c.skipped, complete: c.complete },
          { copyrightItems: ctx.config.COPYRIGHT_ITEMS },
        );
      } catch (err) {
        // An account's own refusal (a dead token) is that account's line; anything else (Redis,
        // the database) ends the command with its own exit code.
        if (!(err instanceof PlatformError)) throw err;
        result.error = err.message;
      }
    }

    const changing = results.filter((r) => r.comparison?.feedWouldChange);
    const failed = results.filter((r) => r.error);
    const availability = versionAvailability(pinned, now, ctx.config.PLATFORM_VERSION_WARN_DAYS);
    if (opts.json)
      printJson(io, {
        pinned,
        candidate: opts.version,
        pinnedAvailability: availability,
        feedWouldChange: changing.length > 0,
        feedsChanging: changing.map((r) => r.accountId),
        accounts: results,
      });
    else io.stdout.write(humanReport(pinned, opts.version, availability.text, results, changing.length));
    if (failed.length > 0) {
      reportFailure(
        io,
        'failed',
        `platform compare: ${failed.length} of ${results.length} account${results.length === 1 ? '' : 's'} could not be compared (${failed[0]!.accountId}: ${failed[0]!.error})`,
      );
      return EXIT.failed;
    }
    return EXIT.ok;
  });
}

const show = (v: unknown, present: boolean) => (present ? JSON.stringify(v) : '(absent)');

function differenceLine(d: DifferenceSummary): string {
  const what = d.side === 'item' ? 'item' : 'post';
  const ids = `${d.count} ${d.count === 1 ? what : `${what}s`}: ${d.ids.join(', ')}${d.count > d.ids.length ? ', …' : ''}`;
  return `  ${what.padEnd(4)} ${d.path}: ${show(d.pinned, 'pinned' in d)} -> ${show(d.candidate, 'candidate' in d)} (${ids})\n`;
}

function humanReport(
  pinned: string,
  candidate: string,
  availability: string,
  results: readonly AccountResult[],
  changing: number,
): string {
  let out = `Comparing ${pinned} (pinned) with ${candidate}: ${availability}\n`;
  if (results.length === 0) out += 'No connected account to read through: connect one first.\n';
  for (const r of results) {
    out += `\n@${r.username} (${r.accountId}): `;
    if (r.error) {
      out += `not compared: ${r.error}\n`;
      continue;
    }
    const c = r.comparison!;
    const f = c.feedChanges;
    const feed = c.feedWouldChange
      ? `its feed WOULD CHANGE (${[
          f.changed ? `${f.changed} post${f.changed === 1 ? '' : 's'} different` : '',
          f.leftOut ? `${f.leftOut} post${f.leftOut === 1 ? '' : 's'} no longer converted` : '',
          f.added ? `${f.added} post${f.added === 1 ? '' : 's'} converted only under ${candidate}` : '',
          c.complete && c.onlyPinned.length + c.onlyCandidate.length > 0 ? 'a different listing' : '',
        ]
          .filter(Boolean)
          .join(', ')})`
      : 'its feed would not change';
    out += `${c.compared} item${c.compared === 1 ? '' : 's'} compared, ${c.differing.length} differ; ${feed}\n`;
    for (const d of c.summary) out += differenceLine(d);
    if (c.onlyPinned.length) out += `  listed only under ${pinned}: ${c.onlyPinned.slice(0, 5).join(', ')}\n`;
    if (c.onlyCandidate.length) out += `  listed only under ${candidate}: ${c.onlyCandidate.slice(0, 5).join(', ')}\n`;
    if (!c.complete) out += '  a listing stopped early: items missing from one side say nothing\n';
  }
  const compared = results.filter((r) => r.comparison).length;
  const notCompared = results.length - compared;
  out +=
    notCompared > 0 && changing === 0
      ? `\n${notCompared} account${notCompared === 1 ? '' : 's'} could not be compared (above): whether moving to ${candidate} would change ${notCompared === 1 ? 'its feed' : 'their feeds'} is unknown; the other ${compared} would not change.\n`
      : changing > 0
        ? `\nMoving to ${candidate} would change ${changing} published feed${changing === 1 ? '' : 's'} (of ${compared} compared): stay on ${pinned} until the differences above are understood (docs/platform-versions.md).\n`
        : `\nMoving to ${candidate} would change no published feed (${compared} compared): set GRAPH_API_VERSION=${candidate} and restart worker and serve.\n`;
  return out;
}
