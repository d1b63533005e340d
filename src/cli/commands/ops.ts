import { parseArgs } from 'node:util';
import { EXIT, type CliIO } from '../io.ts';
import { AppContext } from '../context.ts';
import { migrate } from '../../store/migrate.ts';
import { rotateKeys } from '../../store/tokens.ts';
import { runExpirySweep } from '../../alerts/sweep.ts';
import { alertReauthRequired } from '../../alerts/sweep.ts';
import { refreshAccountToken } from '../../accounts/token-refresh.ts';
import { unscheduleAccount } from '../../../jobs/catalogue.ts';

/** Operator commands that do one thing now: migrate, refresh, check-expiry, keys rotate. */

export async function migrateCommand(_argv: string[], io: CliIO): Promise<number> {
  const ctx = new AppContext(io.env);
  try {
    const { applied, current } = await migrate(ctx.db, { logger: ctx.logger });
    io.stdout.write(applied.length ? `applied ${applied.join(', ')}; database at ${current}\n` : `database already at ${current}\n`);
    return EXIT.ok;
  } finally {
    await ctx.close();
  }
}

export async function refreshCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, values } = parseArgs({ args: argv, options: { json: { type: 'boolean' } }, allowPositionals: true });
  const id = positionals[0];
  if (!id) {
    io.stderr.write('usage: feedmirror refresh <account id> [--json]\n');
    return EXIT.usage;
  }
  const ctx = new AppContext(io.env);
  try {
    const db = await ctx.migratedDb();
    const sweepDeps = { db, mailer: ctx.mailer, clock: ctx.clock, logger: ctx.logger, publicUrl: ctx.config.PUBLIC_URL };
    // `force`: refresh now even before 30 days, but never before 24 hours (R-TOK-5).
    const outcome = await refreshAccountToken(
      {
        db,
        cipher: ctx.cipher,
        platform: ctx.platform,
        clock: ctx.clock,
        logger: ctx.logger,
        refreshAfterMs: ctx.refreshAfterMs,
        onReauthRequired: async (accountId) => {
          await unscheduleAccount(ctx.queues, accountId);
          await alertReauthRequired(sweepDeps, accountId);
        },
      },
      { accountId: id, force: true },
    );
    if (values.json) io.stdout.write(JSON.stringify(outcome) + '\n');
    else io.stdout.write(describeOutcome(outcome) + '\n');
    return outcome.outcome === 'refreshed' ? EXIT.ok : EXIT.failed;
  } finally {
    await ctx.close();
  }
}

function describeOutcome(o: Awaited<ReturnType<typeof refreshAccountToken>>): string {
  switch (o.outcome) {
    case 'refreshed':
      return `refreshed; the token is now valid until ${o.expiresAt.toISOString()}`;
    case 'not-due':
      return `not refreshed: the platform refreshes tokens only once they are 24 hours old; possible from ${o.dueAt.toISOString()}`;
    case 'backoff':
      return `not refreshed: the last attempt failed; next attempt after ${o.nextAttemptAt.toISOString()}`;
    case 'reauth-required':
      return `the account needs its owner to log in again: ${o.reason}`;
    case 'failed':
      return `refresh failed; the stored token is kept (valid until ${o.expiresAt.toISOString()}): ${o.reason}`;
    case 'skipped':
      return `not refreshed: ${o.reason}`;
  }
}

export async function checkExpiryCommand(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: 'boolean' } } });
  const ctx = new AppContext(io.env);
  try {
    const db = await ctx.migratedDb();
    const result = await runExpirySweep({ db, mailer: ctx.mailer, clock: ctx.clock, logger: ctx.logger, publicUrl: ctx.config.PUBLIC_URL });
    if (values.json) io.stdout.write(JSON.stringify(result) + '\n');
    else {
      io.stdout.write(`checked ${result.checked} accounts; ${result.sent.length} alerts sent\n`);
      for (const s of result.sent) io.stdout.write(`  ${s.kind} alert for ${s.accountId}${s.kind === 'expiry' ? ` (< ${s.thresholdDays} days left)` : ''}\n`);
      for (const f of result.failed) io.stdout.write(`  FAILED for ${f.accountId}: ${f.error}\n`);
    }
    return result.failed.length ? EXIT.failed : EXIT.ok;
  } finally {
    await ctx.close();
  }
}

export async function keysCommand(argv: string[], io: CliIO): Promise<number> {
  if (argv[0] !== 'rotate') {
    io.stderr.write('usage: feedmirror keys rotate   (re-encrypts every token with the first key of TOKEN_ENCRYPTION_KEY)\n');
    return EXIT.usage;
  }
  const ctx = new AppContext(io.env);
  try {
    const db = await ctx.migratedDb();
    const { rotated } = await rotateKeys(db, ctx.cipher);
    io.stdout.write(`re-encrypted ${rotated} tokens with key ${ctx.cipher.currentKeyId}; keys no longer listed first can now be removed\n`);
    return EXIT.ok;
  } finally {
    await ctx.close();
  }
}
