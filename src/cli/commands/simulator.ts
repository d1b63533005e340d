import { Argument, InvalidArgumentError, Option, type Command } from 'commander';
import { accountIdArgument, intIn, withExamples, type Cli } from '../command.ts';
import { reportFailure } from '../failure.ts';
import { EXIT } from '../io.ts';
import type { SimulatorOptions } from '../start/simulator.ts';

/**
 * `feedmirror simulator`: the platform simulator by hand, with a ready short-lived token; and its
 * verbs, which drive a running simulator (the demo's, found through data/demo/demo.env) through
 * its control API: `post add|edit|delete`, `revoke`, `expire-token`, `rate-limit`, `accounts`.
 */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('simulator')
    .description(
      "run the platform simulator (print the settings that point feedmirror at it and a ready short-lived token), or drive a running one (the demo's): add, edit and delete posts, revoke or expire tokens, start a rate limit",
    )
    .option('--port <port>', 'port to listen on (0: any free port)', '0')
    .option('--image-port <port>', "the image host's port (0: any free port)", '0')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--accounts <n>', 'accounts to create (1-100)', '1')
    .option('--posts <n>', 'posts per account')
    .option(
      '--clock <real|manual>',
      'real: simulated time follows the wall clock; manual: only through POST /__sim/clock',
      'real',
    )
    .action(async (opts: SimulatorOptions) => {
      const { simulatorCommand } = await import('../start/simulator.ts');
      cli.setExit(await simulatorCommand(opts, cli.io));
    });
  withExamples(
    cmd,
    'APP_SECRET=dev-secret feedmirror simulator --port 4000 --accounts 2 --posts 30',
    'feedmirror simulator accounts',
    'feedmirror simulator post add 17841400000000001 --caption "Fresh bread #bakery"',
  );

  const where = () =>
    new Option(
      '--simulator <url>',
      "the simulator's address (default: SIMULATOR_URL from the environment or data/demo/demo.env)",
    );
  const json = (what: string) => new Option('--json', `print ${what} as JSON`);

  const post = cmd.command('post').description("add, edit or delete a post of a simulated account (the demo's)");
  withExamples(post, 'feedmirror simulator post add 17841400000000001 --type carousel');

  const add = post
    .command('add')
    .description('add a post (a generated photo, carousel or video) to an account on the simulated platform')
    .addArgument(accountIdArgument())
    .option(
      '--caption <text>',
      "its caption (default: a generated one with hashtags; on the demo's photo accounts, its photo's own, and a given caption picks the photo it talks about: coffee, figs, dogs, wine, birds…)",
    )
    .addOption(
      new Option('--type <type>', 'what it is').choices(['image', 'carousel', 'video', 'reel']).default('image'),
    )
    .addOption(where())
    .addOption(json('the new post'))
    .action(async (id: string, opts: { caption?: string; type: string; simulator?: string; json?: boolean }) => {
      const { postAdd } = await import('../start/simulator-control.ts');
      cli.setExit(await postAdd(id, opts, cli.io));
    });
  withExamples(
    add,
    'feedmirror simulator post add 17841400000000001',
    'feedmirror simulator post add 17841400000000001 --type carousel --caption "Three loaves #sourdough" --json',
  );

  const edit = post
    .command('edit')
    .description("change a post's caption on the simulated platform")
    .addArgument(accountIdArgument())
    .addArgument(postIdArgument())
    .option('--caption <text>', 'the new caption (required)')
    .addOption(where())
    .addOption(json('the edited post'))
    .action(async (id: string, postId: string, opts: { caption?: string; simulator?: string; json?: boolean }) => {
      if (opts.caption === undefined)
        return cli.setExit(usage(cli, "required option '--caption <text>' not specified"));
      const { postEdit } = await import('../start/simulator-control.ts');
      cli.setExit(await postEdit(id, postId, { ...opts, caption: opts.caption }, cli.io));
    });
  withExamples(
    edit,
    'feedmirror simulator post edit 17841400000000001 17900000000000003 --caption "Sold out, thank you!"',
  );

  const del = post
    .command('delete')
    .description('delete a post on the simulated platform (the next sync prunes it from the feed)')
    .addArgument(accountIdArgument())
    .addArgument(postIdArgument())
    .addOption(where())
    .addOption(json('the outcome'))
    .action(async (id: string, postId: string, opts: { simulator?: string; json?: boolean }) => {
      const { postDelete } = await import('../start/simulator-control.ts');
      cli.setExit(await postDelete(id, postId, opts, cli.io));
    });
  withExamples(del, 'feedmirror simulator post delete 17841400000000001 17900000000000003');

  const revoke = cmd
    .command('revoke')
    .description('revoke every token of an account, as its owner removing the app does (it then needs its owner)')
    .addArgument(accountIdArgument())
    .addOption(where())
    .addOption(json('the outcome'))
    .action(async (id: string, opts: { simulator?: string; json?: boolean }) => {
      const { revoke: run } = await import('../start/simulator-control.ts');
      cli.setExit(await run(id, opts, cli.io));
    });
  withExamples(revoke, 'feedmirror simulator revoke 17841400000000001');

  const expire = cmd
    .command('expire-token')
    .description("make every live token of an account expire now (its next call answers 'session has expired')")
    .addArgument(accountIdArgument())
    .addOption(where())
    .addOption(json('the outcome'))
    .action(async (id: string, opts: { simulator?: string; json?: boolean }) => {
      const { expireToken } = await import('../start/simulator-control.ts');
      cli.setExit(await expireToken(id, opts, cli.io));
    });
  withExamples(expire, 'feedmirror simulator expire-token 17841400000000001');

  const rate = cmd
    .command('rate-limit')
    .description('answer every platform call with the rate limit (code 4) for N seconds (0 ends it)')
    .option('--seconds <n>', 'how long (0 to 604800; required)', intIn(0, 604_800))
    .addOption(where())
    .addOption(json('the window'))
    .action(async (opts: { seconds?: number; simulator?: string; json?: boolean }) => {
      if (opts.seconds === undefined) return cli.setExit(usage(cli, "required option '--seconds <n>' not specified"));
      const { rateLimit } = await import('../start/simulator-control.ts');
      cli.setExit(await rateLimit({ ...opts, seconds: opts.seconds }, cli.io));
    });
  withExamples(rate, 'feedmirror simulator rate-limit --seconds 120');

  const apps = cmd.command('apps').description("the simulated platform's apps (one per client)");
  withExamples(apps, 'feedmirror simulator apps add --json');
  const addApp = apps
    .command('add')
    .description('register a further app with the simulated platform and print its id and secret')
    .addOption(where())
    .addOption(json('{appId, appSecret}'))
    .action(async (opts: { simulator?: string; json?: boolean }) => {
      const { addApp: add } = await import('../start/simulator-control.ts');
      cli.setExit(await add(opts, cli.io));
    });
  withExamples(addApp, 'feedmirror simulator apps add --json');

  const accounts = cmd
    .command('accounts')
    .description("list the simulated platform's accounts and their posts' ids, newest first")
    .addOption(where())
    .addOption(json('the accounts and their posts'))
    .action(async (opts: { simulator?: string; json?: boolean }) => {
      const { listAccounts } = await import('../start/simulator-control.ts');
      cli.setExit(await listAccounts(opts, cli.io));
    });
  withExamples(
    accounts,
    'feedmirror simulator accounts',
    "feedmirror simulator accounts --json | jq -r '.[0].posts[0].id'",
  );
}

/** A missing required option: said once (as commander says it), exit 2. */
function usage(cli: Cli, message: string): number {
  reportFailure(cli.io, 'usage', `error: ${message}`);
  return EXIT.usage;
}

function postIdArgument(): Argument {
  return new Argument('<post-id>', "the post's id (see `feedmirror simulator accounts`)").argParser((raw: string) => {
    if (!/^\d{1,30}$/.test(raw)) throw new InvalidArgumentError('a post id is digits only');
    return raw;
  });
}
