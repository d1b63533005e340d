import type { Command } from 'commander';
import { EXIT, type CliIO } from '../io.ts';
import { accountIdArgument, withContext, withExamples, type Cli } from '../command.ts';

/** `feedmirror feeds get <id>`: print the published feed (feeds/<id>.json) from the storage. */
export function register(program: Command, cli: Cli): void {
  const feeds = program.command('feeds').description('read published feeds');
  withExamples(feeds, 'feedmirror feeds get 17841400000000001');
  const get = feeds
    .command('get')
    .description('print the published feed (feeds/<account-id>.json) as stored')
    .addArgument(accountIdArgument())
    .option('--json', 'print it as one compact JSON line (it is JSON either way)')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await getFeed(id, opts, cli.io)));
  withExamples(get, 'feedmirror feeds get 17841400000000001 | jq .posts[0]', 'feedmirror feeds get 17841400000000001 | feedmirror validate -');
}

async function getFeed(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { readPublishedFeed } = await import('../../feeds/publish.ts');
    const obj = await readPublishedFeed(ctx.storage, id);
    if (!obj) {
      io.stderr.write(`no feed published for account ${id} yet; run \`feedmirror sync ${id} --wait\`\n`);
      return EXIT.failed;
    }
    const text = obj.body.toString('utf8');
    io.stdout.write((opts.json ? JSON.stringify(JSON.parse(text)) : text.trimEnd()) + '\n');
    return EXIT.ok;
  });
}
