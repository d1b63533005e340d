import type { Command } from 'commander';
import { EXIT } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';

/** `feedmirror keys rotate`: re-encrypt every stored token with the current (first) key. */
export function register(program: Command, cli: Cli): void {
  const keys = program.command('keys').description('manage the token encryption keys (TOKEN_ENCRYPTION_KEY)');
  withExamples(keys, 'feedmirror keys rotate');
  const rotate = keys
    .command('rotate')
    .description(
      're-encrypt every token with the first key of TOKEN_ENCRYPTION_KEY; keys listed after it can then be removed',
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
        if (opts.json) printJson(io, { rotated, webhookSecrets: webhooks.rotated, keyId: ctx.cipher.currentKeyId });
        else
          io.stdout.write(
            `re-encrypted ${rotated} tokens and ${webhooks.rotated} webhook secrets with key ${ctx.cipher.currentKeyId}; keys no longer listed first can now be removed\n`,
          );
        return EXIT.ok;
      });
      cli.setExit(code);
    });
  withExamples(rotate, 'TOKEN_ENCRYPTION_KEY="$NEW_KEY,$OLD_KEY" feedmirror keys rotate');
}
