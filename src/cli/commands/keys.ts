import type { Command } from 'commander';
import { EXIT } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';

/**
 * `feedmirror keys list|rotate`: the keys of TOKEN_ENCRYPTION_KEY (each by its id, derived from
 * the key: R-KEY-1) and what they encrypt; re-encryption of every stored secret with the first.
 */
export function register(program: Command, cli: Cli): void {
  const keys = program.command('keys').description('manage the token encryption keys (TOKEN_ENCRYPTION_KEY)');
  withExamples(keys, 'feedmirror keys list', 'feedmirror keys rotate');

  const list = keys
    .command('list')
    .description(
      'each key of TOKEN_ENCRYPTION_KEY by id, which one encrypts (the first), and how many stored tokens and webhook secrets each opens; exit 1 when a stored secret is opened by none',
    )
    .option('--json', 'print the keys as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { io } = cli;
      const code = await withContext(io, async (ctx) => {
        const { auditSecrets } = await import('../../store/secrets.ts');
        const { describeKeyEntry } = await import('../../store/crypto.ts');
        const audit = await auditSecrets(await ctx.migratedDb(), ctx.cipher);
        const stale = audit.keys.filter((k) => !k.primary && k.tokens + k.webhookSecrets + k.appSecrets > 0);
        if (opts.json) printJson(io, audit);
        else {
          const rows = [
            ['key', 'label', 'encrypts', 'tokens', 'webhook secrets', 'app secrets'],
            ...audit.keys.map((k) => [
              k.id,
              k.label ?? '-',
              k.primary ? 'yes (primary)' : 'no',
              String(k.tokens),
              String(k.webhookSecrets),
              String(k.appSecrets),
            ]),
          ];
          const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
          for (const r of rows)
            io.stdout.write(
              r
                .map((c, i) => c.padEnd(widths[i]!))
                .join('  ')
                .trimEnd() + '\n',
            );
          for (const u of audit.unopened) io.stdout.write(`no key opens ${u.what} (it records key ${u.keyId})\n`);
          if (stale.length)
            io.stdout.write(
              `secrets remain under ${stale.map(describeKeyEntry).join(', ')}: run \`feedmirror keys rotate\`, then those keys can be removed\n`,
            );
          else if (audit.keys.length > 1 && !audit.unopened.length)
            io.stdout.write('every stored secret is under the primary key: the keys after it can be removed\n');
        }
        if (audit.unopened.length) {
          io.stderr.write(
            `${audit.unopened.length} stored secret${audit.unopened.length === 1 ? ' is' : 's are'} opened by no key of TOKEN_ENCRYPTION_KEY (key ${[...new Set(audit.unopened.map((u) => u.keyId))].join(', ')}): add that key back after the first one\n`,
          );
          return EXIT.failed;
        }
        return EXIT.ok;
      });
      cli.setExit(code);
    });
  withExamples(list, 'feedmirror keys list', 'feedmirror keys list --json | jq ".keys[] | {id, tokens}"');

  const rotate = keys
    .command('rotate')
    .description(
      're-encrypt every token, webhook secret and app secret with the first key of TOKEN_ENCRYPTION_KEY; keys listed after it can then be removed',
    )
    .option('--json', 'print the outcome as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { io } = cli;
      const code = await withContext(io, async (ctx) => {
        const { rotateKeys } = await import('../../store/tokens.ts');
        const { rotateWebhookKeys } = await import('../../store/webhooks.ts');
        const db = await ctx.migratedDb();
        const { rotated } = await rotateKeys(db, ctx.cipher);
        // Webhook signing secrets are sealed with the same key.
        const webhooks = await rotateWebhookKeys(db, ctx.cipher);
        // And the platform apps' secrets (feedmirror apps).
        const { rotateAppKeys } = await import('../../store/apps.ts');
        const apps = await rotateAppKeys(db, ctx.cipher);
        const key = ctx.cipher.describeKey(ctx.cipher.currentKeyId);
        if (opts.json)
          printJson(io, {
            rotated,
            webhookSecrets: webhooks.rotated,
            appSecrets: apps.rotated,
            keyId: ctx.cipher.currentKeyId,
          });
        else
          io.stdout.write(
            `re-encrypted ${rotated} tokens, ${webhooks.rotated} webhook secrets and ${apps.rotated} app secrets with key ${key}; the keys listed after it can now be removed\n`,
          );
        return EXIT.ok;
      });
      cli.setExit(code);
    });
  withExamples(
    rotate,
    'TOKEN_ENCRYPTION_KEY=new:<new key>,old:<old key> feedmirror keys rotate',
    'feedmirror keys rotate --json',
  );
}
