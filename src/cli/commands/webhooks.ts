import type { Command } from 'commander';
import { reportFailure } from '../failure.ts';
import { EXIT, type CliIO } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';

/**
 * `feedmirror webhooks add|list|remove|rotate|deliveries`: the endpoints that receive feedmirror's
 * events (feed.updated, account.reauth_required, token.expiring, account.removed), signed with
 * each endpoint's secret. The secret is printed once, when made (add, rotate), and never again.
 */
const ENDPOINT_ID = /^wh_[a-z0-9]{8,32}$/;

export function register(program: Command, cli: Cli): void {
  const webhooks = program
    .command('webhooks')
    .description('endpoints that receive signed event notifications (feed.updated, ...)');
  withExamples(webhooks, 'feedmirror webhooks add https://www.example.com/api/feedmirror --events feed.updated');

  const add = webhooks
    .command('add')
    .description('register an endpoint; prints its signing secret once')
    .argument('<url>', 'where events are POSTed (http or https; private addresses need WEBHOOK_ALLOW_PRIVATE=true)')
    .option(
      '--events <list>',
      'comma list of feed.updated, account.reauth_required, token.expiring, account.removed (default: all)',
    )
    .option('--description <text>', 'a note for the dashboard')
    .option('--json', 'print the endpoint and its secret as JSON')
    .action(async (url: string, opts: { events?: string; description?: string; json?: boolean }) =>
      cli.setExit(await addEndpoint(url, opts, cli.io)),
    );
  withExamples(
    add,
    'feedmirror webhooks add https://www.example.com/api/feedmirror --events feed.updated --description "marketing site"',
  );

  const list = webhooks
    .command('list')
    .description('list the endpoints (never their secrets)')
    .option('--json', 'print them as JSON')
    .action(async (opts: { json?: boolean }) => cli.setExit(await listCommand(opts, cli.io)));
  withExamples(list, 'feedmirror webhooks list --json');

  const remove = webhooks
    .command('remove')
    .description('remove an endpoint and its delivery log')
    .argument('<endpoint-id>', 'wh_...')
    .option('--json', 'print the outcome as JSON')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await removeCommand(id, opts, cli.io)));
  withExamples(remove, 'feedmirror webhooks remove wh_0123456789abcdef');

  const rotate = webhooks
    .command('rotate')
    .description('make a new signing secret (printed once); the old one also signs for 24 hours')
    .argument('<endpoint-id>', 'wh_...')
    .option('--json', 'print the new secret as JSON')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await rotateCommand(id, opts, cli.io)));
  withExamples(rotate, 'feedmirror webhooks rotate wh_0123456789abcdef');

  const deliveries = webhooks
    .command('deliveries')
    .description("an endpoint's delivery log, newest first: event, status, attempts, last answer")
    .argument('<endpoint-id>', 'wh_...')
    .option('--limit <n>', 'how many (default 20)')
    .option('--json', 'print them as JSON')
    .action(async (id: string, opts: { limit?: string; json?: boolean }) =>
      cli.setExit(await deliveriesCommand(id, opts, cli.io)),
    );
  withExamples(deliveries, 'feedmirror webhooks deliveries wh_0123456789abcdef --limit 50');
}

function checkId(id: string, io: CliIO): boolean {
  if (ENDPOINT_ID.test(id)) return true;
  io.stderr.write(`endpoint id must look like wh_0123456789abcdef, got ${JSON.stringify(id.slice(0, 40))}\n`);
  return false;
}

async function addEndpoint(
  url: string,
  opts: { events?: string; description?: string; json?: boolean },
  io: CliIO,
): Promise<number> {
  return withContext(io, async (ctx) => {
    const { registerEndpoint, EndpointInputError } = await import('../../webhooks/endpoints.ts');
    const db = await ctx.migratedDb();
    try {
      const { endpoint, secret } = await registerEndpoint(
        { db, cipher: ctx.cipher, now: ctx.clock.now(), allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE },
        {
          url,
          ...(opts.events !== undefined ? { events: opts.events } : {}),
          ...(opts.description !== undefined ? { description: opts.description } : {}),
        },
      );
      if (opts.json) printJson(io, { id: endpoint.id, url: endpoint.url, events: endpoint.events, secret });
      else {
        io.stdout.write(
          `added ${endpoint.id} -> ${endpoint.url} (events: ${endpoint.events.length ? endpoint.events.join(', ') : 'all'})\n`,
        );
        io.stdout.write(`signing secret (shown once; put it in the receiver's environment): ${secret}\n`);
      }
      return EXIT.ok;
    } catch (err) {
      if (err instanceof EndpointInputError) {
        io.stderr.write(`${err.message}\n`);
        return EXIT.usage;
      }
      throw err;
    }
  });
}

async function listCommand(opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { listEndpoints } = await import('../../store/webhooks.ts');
    const endpoints = await listEndpoints(await ctx.migratedDb());
    if (opts.json) printJson(io, endpoints);
    else if (endpoints.length === 0)
      io.stdout.write('no webhook endpoints; add one with `feedmirror webhooks add <url>`\n');
    else
      for (const e of endpoints)
        io.stdout.write(
          `${e.id}  ${e.url}  events: ${e.events.length ? e.events.join(',') : 'all'}${e.description ? `  (${e.description})` : ''}\n`,
        );
    return EXIT.ok;
  });
}

async function removeCommand(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  if (!checkId(id, io)) return EXIT.usage;
  return withContext(io, async (ctx) => {
    const { removeEndpoint } = await import('../../store/webhooks.ts');
    if (!(await removeEndpoint(await ctx.migratedDb(), id))) {
      reportFailure(io, 'not_found', `no webhook endpoint ${id}`);
      return EXIT.failed;
    }
    if (opts.json) printJson(io, { id, removed: true });
    else io.stdout.write(`removed ${id} and its delivery log\n`);
    return EXIT.ok;
  });
}

async function rotateCommand(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  if (!checkId(id, io)) return EXIT.usage;
  return withContext(io, async (ctx) => {
    const { rotateSecret } = await import('../../webhooks/endpoints.ts');
    const r = await rotateSecret({ db: await ctx.migratedDb(), cipher: ctx.cipher, now: ctx.clock.now() }, id);
    if (!r) {
      reportFailure(io, 'not_found', `no webhook endpoint ${id}`);
      return EXIT.failed;
    }
    if (opts.json) printJson(io, { id, secret: r.secret, previousValidUntil: r.previousValidUntil.toISOString() });
    else
      io.stdout.write(
        `new signing secret for ${id} (shown once): ${r.secret}\nthe previous secret also signs until ${r.previousValidUntil.toISOString()}\n`,
      );
    return EXIT.ok;
  });
}

async function deliveriesCommand(id: string, opts: { limit?: string; json?: boolean }, io: CliIO): Promise<number> {
  if (!checkId(id, io)) return EXIT.usage;
  const limit = opts.limit === undefined ? 20 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    io.stderr.write('--limit must be a whole number from 1 to 1000\n');
    return EXIT.usage;
  }
  return withContext(io, async (ctx) => {
    const { getEndpoint, listDeliveries } = await import('../../store/webhooks.ts');
    const db = await ctx.migratedDb();
    if (!(await getEndpoint(db, id))) {
      reportFailure(io, 'not_found', `no webhook endpoint ${id}`);
      return EXIT.failed;
    }
    const rows = (await listDeliveries(db, id, limit)).map(({ body: _b, ...d }) => d);
    if (opts.json) printJson(io, rows);
    else if (rows.length === 0) io.stdout.write('no deliveries yet\n');
    else
      for (const d of rows)
        io.stdout.write(
          `${d.createdAt.toISOString()}  ${d.eventType.padEnd(23)} ${d.status.padEnd(9)} attempts ${d.attempts}` +
            `${d.lastHttpStatus !== null ? `  HTTP ${d.lastHttpStatus}` : ''}${d.lastError ? `  ${d.lastError}` : ''}\n`,
        );
    return EXIT.ok;
  });
}
