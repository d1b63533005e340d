import { parseArgs } from 'node:util';
import { EXIT, readAll, type CliIO } from '../io.ts';
import { AppContext } from '../context.ts';
import { connectWithShortLivedToken, importLongLivedToken } from '../../accounts/connect.ts';
import { listAccounts, removeAccount } from '../../store/accounts.ts';
import { scheduleAccount, unscheduleAccount } from '../../../jobs/catalogue.ts';

const USAGE = `usage:
  feedmirror accounts add [--json] [--long-lived [--expires-at <date>]]   (token on standard input)
  feedmirror accounts list [--json]
  feedmirror accounts remove <id>
`;

/**
 * `feedmirror accounts`. The token is read from standard input, never from an argument, where
 * shells and process lists would keep it (R-TOK-11).
 */
export async function accountsCommand(argv: string[], io: CliIO, ctxFactory = () => new AppContext(io.env)): Promise<number> {
  const [sub, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    options: { json: { type: 'boolean' }, 'long-lived': { type: 'boolean' }, 'expires-at': { type: 'string' } },
    allowPositionals: true,
  });
  if (!sub || !['add', 'list', 'remove'].includes(sub)) {
    io.stderr.write(USAGE);
    return EXIT.usage;
  }
  const ctx = ctxFactory();
  try {
    const db = await ctx.migratedDb();
    if (sub === 'add') {
      const token = (await readAll(io.stdin)).trim();
      if (!token) {
        io.stderr.write('no token on standard input: pipe it in, e.g. `feedmirror accounts add < token.txt`\n');
        return EXIT.usage;
      }
      if (/\s/.test(token)) {
        io.stderr.write('standard input holds more than one word; give the token alone\n');
        return EXIT.usage;
      }
      let expiresAt: Date | undefined;
      if (values['expires-at']) {
        expiresAt = new Date(values['expires-at']);
        if (Number.isNaN(expiresAt.getTime())) {
          io.stderr.write(`--expires-at: not a date: ${values['expires-at']}\n`);
          return EXIT.usage;
        }
      }
      const deps = { db, cipher: ctx.cipher, platform: ctx.platform, clock: ctx.clock, logger: ctx.logger };
      const account = values['long-lived'] ? await importLongLivedToken(deps, token, { expiresAt }) : await connectWithShortLivedToken(deps, token);
      await scheduleAccount(ctx.queues, account.id, ctx.schedules);
      if (values.json) io.stdout.write(JSON.stringify({ id: account.id, username: account.username, expiresAt: account.expiresAt.toISOString() }) + '\n');
      else io.stdout.write(`connected @${account.username} (id ${account.id}); token valid until ${account.expiresAt.toISOString()}\n`);
      return EXIT.ok;
    }
    if (sub === 'list') {
      const rows = await listAccounts(db, ctx.clock.now());
      if (values.json) {
        io.stdout.write(
          JSON.stringify(
            rows.map((a) => ({ id: a.id, username: a.username, status: a.status, expiresAt: a.expiresAt?.toISOString() ?? null, daysLeft: a.daysLeft, lastSyncAt: a.lastSyncAt?.toISOString() ?? null, statusReason: a.statusReason })),
            null,
            2,
          ) + '\n',
        );
      } else if (rows.length === 0) {
        io.stdout.write('no accounts connected yet: open PUBLIC_URL/connect or use `feedmirror accounts add`\n');
      } else {
        for (const a of rows) {
          const expiry = a.expiresAt ? `expires ${a.expiresAt.toISOString().slice(0, 10)} (${a.daysLeft} days left)` : 'no token';
          io.stdout.write(`${a.id}\t@${a.username}\t${a.status}\t${expiry}${a.statusReason ? `\t${a.statusReason}` : ''}\n`);
        }
      }
      return EXIT.ok;
    }
    const id = positionals[0];
    if (!id) {
      io.stderr.write(USAGE);
      return EXIT.usage;
    }
    await unscheduleAccount(ctx.queues, id);
    const removed = await removeAccount(db, id, ctx.clock.now());
    if (!removed) {
      io.stderr.write(`no account with id ${id}\n`);
      return EXIT.failed;
    }
    io.stdout.write(`removed account ${id}: its token is deleted and its jobs stopped\n`);
    return EXIT.ok;
  } finally {
    await ctx.close();
  }
}
