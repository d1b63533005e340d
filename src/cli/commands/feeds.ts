import { z } from 'zod';
import { EXIT, type CliIO } from '../io.ts';
import { AppContext } from '../context.ts';
import { readPublishedFeed } from '../../feeds/publish.ts';
import { idSchema } from '../../util/ids.ts';

const USAGE = 'usage: feedmirror feeds get <account-id>   print the published feed (feeds/<id>.json)\n';
const accountIdSchema = idSchema('account id');

export async function feedsCommand(argv: string[], io: CliIO, ctxFactory = () => new AppContext(io.env)): Promise<number> {
  const [sub, idArg, ...extra] = argv;
  const id = accountIdSchema.safeParse(idArg);
  if (sub !== 'get' || extra.length > 0 || !id.success) {
    io.stderr.write(id.success || idArg === undefined ? USAGE : `${id.error.issues[0]?.message}\n${USAGE}`);
    return EXIT.usage;
  }
  const ctx = ctxFactory();
  try {
    const obj = await readPublishedFeed(ctx.storage, id.data);
    if (!obj) {
      io.stderr.write(`no feed published for account ${id.data} yet; run \`feedmirror sync ${id.data} --wait\`\n`);
      return EXIT.failed;
    }
    io.stdout.write(obj.body.toString('utf8') + '\n');
    return EXIT.ok;
  } finally {
    await ctx.close();
  }
}
