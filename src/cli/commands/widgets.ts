import { InvalidArgumentError, type Command } from 'commander';
import { reportFailure } from '../failure.ts';
import { EXIT, type CliIO } from '../io.ts';
import { intIn, printJson, withContext, withExamples, type Cli } from '../command.ts';
import type { AppContext } from '../context.ts';
import type { WidgetView } from '../../widgets/widgets.ts';

/**
 * `feedmirror widgets add|list|show|set|hide|unhide|remove`: widgets as objects (one or more
 * accounts merged, a layout and its options, hidden posts), each published as widgets/<id>.json
 * and widgets/<id>.html next to the feeds. Every change republishes the widget (src/widgets/).
 */
const LAYOUTS = 'grid, list, carousel or masonry';

const collect = (value: string, previous: string[] = []) => [...previous, value];
/** A comma list (repeatable); an empty value gives an empty list (clears a filter). */
const collectList = (value: string, previous: string[] = []) => [
  ...previous,
  ...value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
];
const columnsArg = (raw: string) => {
  const parts = raw.split(',').map((s) => Number(s.trim()));
  if (parts.length !== 3 || parts.some((n) => !Number.isInteger(n) || n < 1 || n > 8))
    throw new InvalidArgumentError('must be three whole numbers from 1 to 8: phone,tablet,desktop (e.g. 2,3,4)');
  return { phone: parts[0]!, tablet: parts[1]!, desktop: parts[2]! };
};

interface SetOptions {
  name?: string;
  layout?: string;
  account?: string[];
  limit?: number;
  maxPosts?: number;
  columns?: { phone: number; tablet: number; desktop: number };
  header?: boolean;
  captions?: string;
  date?: boolean;
  badges?: boolean;
  radius?: number;
  gap?: number;
  theme?: string;
  types?: string[];
  includeTag?: string[];
  excludeTag?: string[];
  json?: boolean;
}

export function register(program: Command, cli: Cli): void {
  const widgets = program
    .command('widgets')
    .description('widgets embedded by id: accounts merged, layout, options, hidden posts');
  withExamples(widgets, 'feedmirror widgets add --name "Shop" --account 17841400000000001 --layout carousel --json');

  const add = widgets
    .command('add')
    .description('create a widget and publish it (widgets/<id>.json and .html); prints its id and embed snippet')
    .option('--name <name>', 'a name for the dashboard (1-100 characters; required)')
    .option('--account <id>', 'an account whose posts it shows (repeat for several, merged newest first)', collect)
    .option('--layout <layout>', LAYOUTS + ' (default grid)')
    .option('--limit <n>', 'posts shown before "Load more" (default 12)', intIn(1, 200))
    .option('--max-posts <n>', 'posts the widget document carries at most (default 60)', intIn(1, 200))
    .option('--json', 'print the widget as JSON')
    .action(async (opts: SetOptions) => cli.setExit(await addCommand(opts, cli.io)));
  withExamples(
    add,
    'feedmirror widgets add --name "Shop" --account 17841400000000001 --account 17841400000000002 --layout grid --limit 9',
    'feedmirror widgets add --name "Shop" --account 17841400000000001 --json | jq -r .id',
  );

  const list = widgets
    .command('list')
    .description('list the widgets with their accounts and layout')
    .option('--json', 'print them as JSON')
    .action(async (opts: { json?: boolean }) => cli.setExit(await listCommand(opts, cli.io)));
  withExamples(list, 'feedmirror widgets list --json');

  const show = widgets
    .command('show')
    .description("a widget: its options, embed snippet, public addresses and its accounts' posts (hidden or not)")
    .argument('<widget-id>', 'w_...')
    .option('--json', 'print it as JSON')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await showCommand(id, opts, cli.io)));
  withExamples(show, 'feedmirror widgets show w_abcdefgh23');

  const set = widgets
    .command('set')
    .description('change a widget (only the options given) and republish it')
    .argument('<widget-id>', 'w_...')
    .option('--name <name>', 'its name')
    .option('--layout <layout>', LAYOUTS)
    .option('--account <id>', 'replace its accounts with these (repeat for several)', collect)
    .option('--limit <n>', 'posts shown before "Load more"', intIn(1, 200))
    .option('--max-posts <n>', 'posts the widget document carries at most', intIn(1, 200))
    .option('--columns <phone,tablet,desktop>', 'grid and masonry columns per screen size, e.g. 2,3,4', columnsArg)
    .option('--header', 'show the header (avatar, username, follow link)')
    .option('--no-header', 'hide the header')
    .option('--captions <mode>', 'show, hover (on hover and focus) or hide')
    .option('--date', 'show each post’s date')
    .option('--no-date', 'hide the dates')
    .option('--badges', 'show post-type badges (reel, carousel, video)')
    .option('--no-badges', 'hide the badges')
    .option('--radius <px>', 'rounded corners in pixels (0-48)', intIn(0, 48))
    .option('--gap <px>', 'space between tiles in pixels (0-64)', intIn(0, 64))
    .option('--theme <theme>', 'light, dark or auto')
    .option('--types <list>', 'show only these post types: image,video,carousel,text,link ("" = all)', collectList)
    .option(
      '--include-tag <tags>',
      'show only posts whose caption has one of these hashtags ("" = no such filter)',
      collectList,
    )
    .option('--exclude-tag <tags>', 'never show posts whose caption has one of these hashtags ("" = none)', collectList)
    .option('--json', 'print the widget as JSON')
    .action(async (id: string, opts: SetOptions) => cli.setExit(await setCommand(id, opts, cli.io)));
  withExamples(
    set,
    'feedmirror widgets set w_abcdefgh23 --layout masonry --limit 8 --theme dark',
    'feedmirror widgets set w_abcdefgh23 --types image,carousel --exclude-tag ad,sponsored',
  );

  const hide = widgets
    .command('hide')
    .description('hide a post in a widget (it stays hidden through re-syncs and reconnects)')
    .argument('<widget-id>', 'w_...')
    .argument('<post-id>', 'the post id (see `feedmirror widgets show <widget-id>`)')
    .option('--json', 'print the widget as JSON')
    .action(async (id: string, postId: string, opts: { json?: boolean }) =>
      cli.setExit(await hideCommand(id, postId, true, opts, cli.io)),
    );
  withExamples(hide, 'feedmirror widgets hide w_abcdefgh23 17900000000000001');

  const unhide = widgets
    .command('unhide')
    .description('show a hidden post again')
    .argument('<widget-id>', 'w_...')
    .argument('<post-id>', 'the hidden post id')
    .option('--json', 'print the widget as JSON')
    .action(async (id: string, postId: string, opts: { json?: boolean }) =>
      cli.setExit(await hideCommand(id, postId, false, opts, cli.io)),
    );
  withExamples(unhide, 'feedmirror widgets unhide w_abcdefgh23 17900000000000001');

  const remove = widgets
    .command('remove')
    .description('delete a widget and its published objects (sites embedding it show nothing)')
    .argument('<widget-id>', 'w_...')
    .option('--json', 'print the outcome as JSON')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await removeCommand(id, opts, cli.io)));
  withExamples(remove, 'feedmirror widgets remove w_abcdefgh23');
}

/** Options given on the command line, as the widget's option changes. */
function optionChanges(opts: SetOptions): Record<string, unknown> {
  const filters = {
    ...(opts.types !== undefined ? { types: opts.types } : {}),
    ...(opts.includeTag !== undefined ? { includeTags: opts.includeTag } : {}),
    ...(opts.excludeTag !== undefined ? { excludeTags: opts.excludeTag } : {}),
  };
  return {
    ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
    ...(opts.maxPosts !== undefined ? { maxPosts: opts.maxPosts } : {}),
    ...(opts.columns !== undefined ? { columns: opts.columns } : {}),
    ...(opts.header !== undefined ? { header: opts.header } : {}),
    ...(opts.captions !== undefined ? { captions: opts.captions } : {}),
    ...(opts.date !== undefined ? { date: opts.date } : {}),
    ...(opts.badges !== undefined ? { badges: opts.badges } : {}),
    ...(opts.radius !== undefined ? { radius: opts.radius } : {}),
    ...(opts.gap !== undefined ? { gap: opts.gap } : {}),
    ...(opts.theme !== undefined ? { theme: opts.theme } : {}),
    ...(Object.keys(filters).length > 0 ? { filters } : {}),
  };
}

/** Run a widget operation; its refusals (unknown widget, account or post; bad input) are one line. */
async function run(io: CliIO, fn: (ctx: AppContext) => Promise<number>): Promise<number> {
  return withContext(io, async (ctx) => {
    const { WidgetInputError, WidgetNotFoundError } = await import('../../widgets/widgets.ts');
    try {
      return await fn(ctx);
    } catch (err) {
      if (err instanceof WidgetNotFoundError) {
        reportFailure(io, 'not_found', err.message);
        return EXIT.failed;
      }
      if (err instanceof WidgetInputError) {
        reportFailure(io, err.kind, err.message);
        return err.kind === 'usage' ? EXIT.usage : EXIT.failed;
      }
      throw err;
    }
  });
}

async function widgetDeps(ctx: AppContext) {
  await ctx.migratedDb();
  await ctx.ensureStorage();
  return ctx.widgetDeps;
}

function describe(w: WidgetView): string {
  const o = w.options;
  return [
    `${w.id}  ${w.name}`,
    `  layout ${w.layout}, ${o.limit} shown of at most ${o.maxPosts}, theme ${o.theme}, captions ${o.captions}, header ${o.header ? 'on' : 'off'}`,
    `  accounts: ${w.accounts.join(', ') || '(none: every account was removed)'}`,
    ...(o.filters.types.length || o.filters.includeTags.length || o.filters.excludeTags.length
      ? [
          `  filters: types ${o.filters.types.join(',') || 'all'}; include #${o.filters.includeTags.join(' #') || '-'}; exclude #${o.filters.excludeTags.join(' #') || '-'}`,
        ]
      : []),
    ...(w.hiddenPosts.length ? [`  hidden posts: ${w.hiddenPosts.join(', ')}`] : []),
  ].join('\n');
}

async function addCommand(opts: SetOptions, io: CliIO): Promise<number> {
  if (opts.name === undefined || !opts.account?.length) {
    reportFailure(io, 'usage', 'widgets add needs --name <name> and at least one --account <id>');
    return EXIT.usage;
  }
  return run(io, async (ctx) => {
    const { createWidget } = await import('../../widgets/widgets.ts');
    const { widget, publish } = await createWidget(await widgetDeps(ctx), {
      name: opts.name,
      accounts: opts.account,
      ...(opts.layout !== undefined ? { layout: opts.layout } : {}),
      options: optionChanges(opts),
    });
    if (opts.json) printJson(io, widget);
    else {
      io.stdout.write(`${describe(widget)}\n  published: ${widget.documentUrl} (${publishedPosts(publish)})\n`);
      io.stdout.write(`embed it with:\n${widget.embed}\n`);
    }
    return EXIT.ok;
  });
}

function publishedPosts(p: { outcome: string; posts?: number }): string {
  return p.posts === undefined ? p.outcome : `${p.posts} posts, ${p.outcome}`;
}

async function listCommand(opts: { json?: boolean }, io: CliIO): Promise<number> {
  return run(io, async (ctx) => {
    const { listWidgetViews } = await import('../../widgets/widgets.ts');
    const list = await listWidgetViews({ db: await ctx.migratedDb(), storage: ctx.storage });
    if (opts.json) printJson(io, list);
    else if (list.length === 0)
      io.stdout.write('no widgets; add one with `feedmirror widgets add --name <name> --account <id>`\n');
    else
      for (const w of list)
        io.stdout.write(`${w.id}  ${w.layout.padEnd(8)}  ${w.accounts.length} account(s)  ${w.name}\n`);
    return EXIT.ok;
  });
}

async function showCommand(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return run(io, async (ctx) => {
    const { requireWidget, widgetCandidates, widgetView } = await import('../../widgets/widgets.ts');
    const deps = await widgetDeps(ctx);
    const w = await requireWidget(deps, id);
    const posts = await widgetCandidates(deps, w);
    const view = widgetView(deps, w);
    if (opts.json) {
      printJson(io, { ...view, posts });
      return EXIT.ok;
    }
    io.stdout.write(`${describe(view)}\n`);
    io.stdout.write(`  document: ${view.documentUrl}\n  static HTML: ${view.fragmentUrl}\n`);
    io.stdout.write(`embed it with:\n${view.embed}\n`);
    io.stdout.write(`posts of its accounts (newest first; ${posts.length}):\n`);
    for (const p of posts) {
      const state = p.hidden ? 'hidden  ' : p.filtered ? 'filtered' : 'shown   ';
      const caption = p.text.replace(/\s+/g, ' ').slice(0, 60);
      io.stdout.write(`  ${state}  ${p.id}  @${p.username}  ${p.publishedAt.slice(0, 10)}  ${p.type}  ${caption}\n`);
    }
    return EXIT.ok;
  });
}

async function setCommand(id: string, opts: SetOptions, io: CliIO): Promise<number> {
  const options = optionChanges(opts);
  if (
    opts.name === undefined &&
    opts.layout === undefined &&
    opts.account === undefined &&
    !Object.keys(options).length
  ) {
    reportFailure(io, 'usage', 'nothing to change: give at least one option (see feedmirror widgets set --help)');
    return EXIT.usage;
  }
  return run(io, async (ctx) => {
    const { changeWidget } = await import('../../widgets/widgets.ts');
    const { widget, publish } = await changeWidget(await widgetDeps(ctx), id, {
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      ...(opts.layout !== undefined ? { layout: opts.layout } : {}),
      ...(opts.account !== undefined ? { accounts: opts.account } : {}),
      ...(Object.keys(options).length ? { options } : {}),
    });
    if (opts.json) printJson(io, widget);
    else io.stdout.write(`${describe(widget)}\n  published: ${widget.documentUrl} (${publishedPosts(publish)})\n`);
    return EXIT.ok;
  });
}

async function hideCommand(
  id: string,
  postId: string,
  hide: boolean,
  opts: { json?: boolean },
  io: CliIO,
): Promise<number> {
  return run(io, async (ctx) => {
    const { hidePost, unhidePost } = await import('../../widgets/widgets.ts');
    const deps = await widgetDeps(ctx);
    const { widget, publish } = hide ? await hidePost(deps, id, postId) : await unhidePost(deps, id, postId);
    if (opts.json) printJson(io, widget);
    else
      io.stdout.write(
        `${hide ? 'hid' : 'showing again'} ${postId} in ${widget.id} (${publishedPosts(publish)}; ${widget.hiddenPosts.length} hidden)\n`,
      );
    return EXIT.ok;
  });
}

async function removeCommand(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return run(io, async (ctx) => {
    const { removeWidget } = await import('../../widgets/widgets.ts');
    const w = await removeWidget(await widgetDeps(ctx), id);
    if (opts.json) printJson(io, { id: w.id, removed: true });
    else io.stdout.write(`removed ${w.id} (${w.name}) and its published objects\n`);
    return EXIT.ok;
  });
}
