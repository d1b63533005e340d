import { processIO, EXIT, type CliIO, type Command } from './io.ts';

/**
 * The feedmirror command. Each subcommand lives in its own module, loaded only when called, so
 * `feedmirror validate` does not pull in BullMQ, pg or sharp.
 */
interface Entry {
  summary: string;
  load: () => Promise<Command>;
}

const commands: Record<string, Entry> = {
  validate: { summary: 'validate <file|->        check a feed against schema v1', load: async () => (await import('./commands/validate.ts')).validateCommand },
  demo: { summary: 'demo [--out file]        write a demo feed (demo: true) with every kind of post', load: async () => (await import('./commands/demo.ts')).demoCommand },
  simulator: { summary: 'simulator [--port N]     run the platform simulator and print a ready token', load: async () => (await import('../simulator/cli.ts')).simulatorCommand },
  migrate: { summary: 'migrate                  apply database migrations (safe from several processes)', load: async () => (await import('./commands/ops.ts')).migrateCommand },
  accounts: { summary: 'accounts add|list|remove connect (token on stdin), list or remove accounts', load: async () => (await import('./commands/accounts.ts')).accountsCommand },
  refresh: { summary: 'refresh <id>             refresh one account\'s token now', load: async () => (await import('./commands/ops.ts')).refreshCommand },
  'check-expiry': { summary: 'check-expiry             run the expiry alert sweep once, now', load: async () => (await import('./commands/ops.ts')).checkExpiryCommand },
  keys: { summary: 'keys rotate              re-encrypt every token with the current key', load: async () => (await import('./commands/ops.ts')).keysCommand },
  sync: { summary: 'sync <id> [--wait]       read, copy and publish one account now', load: async () => (await import('./commands/sync.ts')).syncCommand },
  feeds: { summary: 'feeds get <id>           print the published feed', load: async () => (await import('./commands/feeds.ts')).feedsCommand },
  worker: { summary: 'worker                   run the job workers until SIGTERM', load: async () => (await import('./commands/worker.ts')).workerCommand },
  serve: { summary: 'serve                    run the HTTP server (connect, callback, health)', load: async () => (await import('./commands/serve.ts')).serveCommand },
  'demo-run': { summary: 'demo-run                 the main job end to end on embedded defaults (npm run demo)', load: async () => (await import('./commands/demo-run.ts')).demoRunCommand },
};

export function usage(): string {
  const lines = Object.values(commands).map((c) => `  feedmirror ${c.summary}`);
  return `usage:\n${lines.join('\n')}\n`;
}

export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(usage());
    return name ? EXIT.ok : EXIT.usage;
  }
  const entry = commands[name];
  if (!entry) {
    io.stderr.write(`feedmirror: unknown command '${name}'\n${usage()}`);
    return EXIT.usage;
  }
  try {
    const command = await entry.load();
    return await command(rest, io);
  } catch (err) {
    // Last line of defence: say what failed in words, without a stack trace full of URLs.
    const { redactText } = await import('../util/redact.ts');
    const e = err as Error;
    io.stderr.write(`feedmirror ${name}: ${redactText(e.message ?? String(err))}\n`);
    if (process.env.LOG_LEVEL === 'debug' && e.stack) io.stderr.write(redactText(e.stack) + '\n');
    return EXIT.failed;
  }
}
