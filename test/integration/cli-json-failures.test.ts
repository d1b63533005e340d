import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram, main } from '../../src/cli/main.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { memoryIO } from '../support/memory-io.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { dropQueues } from '../support/queues.ts';

/**
 * Every command that takes --json answers a failure with one JSON document on stdout holding
 * `{"error":{"kind":…,"message":…}}`, and the human line once on stderr: a script reading
 * `feedmirror … --json | jq` learns what went wrong without parsing prose.
 */
const ACCOUNT = '17841499999999999';
const ENDPOINT = 'wh_0123456789abcdef';

/** Every `feedmirror …` command path that has a --json option, read from the program itself. */
function jsonCommands(): string[][] {
  const program = buildProgram({ io: memoryIO(), setExit: () => undefined });
  const out: string[][] = [];
  const walk = (cmd: Command, path: string[]) => {
    for (const sub of cmd.commands) {
      const here = [...path, sub.name()];
      if (sub.options.some((o) => o.long === '--json')) out.push(here);
      walk(sub, here);
    }
  };
  walk(program, []);
  return out;
}

/** Arguments that make each command reach its services (or its own check). */
function argsFor(path: string[]): string[] {
  const key = path.join(' ');
  if (['sync', 'refresh', 'feeds get', 'accounts remove'].includes(key)) return [...path, ACCOUNT];
  if (['webhooks remove', 'webhooks rotate', 'webhooks deliveries'].includes(key)) return [...path, ENDPOINT];
  if (key === 'webhooks add') return [...path, 'https://hooks.example.com/feedmirror'];
  if (key === 'validate') return [...path, '/nonexistent/feed.json'];
  if (key === 'media rebuild' || key === 'verify') return [...path, '--account', ACCOUNT];
  return path;
}

function expectJsonFailure(args: string[], out: string, err: string, code: number): { kind: string; message: string } {
  expect(code, `${args.join(' ')}: exit code`).not.toBe(0);
  let doc: { error?: { kind?: unknown; message?: unknown } };
  try {
    doc = JSON.parse(out) as typeof doc;
  } catch {
    throw new Error(`${args.join(' ')}: stdout is not one JSON document: ${JSON.stringify(out.slice(0, 300))}`);
  }
  expect(typeof doc.error?.kind, `${args.join(' ')}: ${out}`).toBe('string');
  expect(typeof doc.error?.message, `${args.join(' ')}: ${out}`).toBe('string');
  const message = doc.error!.message as string;
  // The human line, once, on stderr.
  const human = err.split('\n').filter((l) => l.trim() && !l.startsWith('{"level"'));
  expect(human.filter((l) => l.includes(message.slice(0, 60))).length, `${args.join(' ')} stderr: ${err}`).toBe(1);
  return doc.error as { kind: string; message: string };
}

describe('--json failures: one JSON error object on stdout, the human line once on stderr', () => {
  let sim: Simulator;
  let env: NodeJS.ProcessEnv;
  let drop: () => Promise<void>;
  const redis = redisForTest('clijsonfail');
  const key = randomBytes(32).toString('base64');

  beforeAll(async () => {
    registerSecretForAudit(key);
    sim = await startSimulator();
    const database = await freshDatabase('clijsonfail');
    drop = database.drop;
    env = {
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: redis.prefix,
      GRAPH_URL: sim.graphUrl,
      OAUTH_TOKEN_URL: sim.oauthTokenUrl,
      APP_ID: sim.appId,
      APP_SECRET: sim.appSecret,
      TOKEN_ENCRYPTION_KEY: key,
      STORAGE_URL: `/tmp/fm-clijsonfail-${randomBytes(3).toString('hex')}`,
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => {
    await dropQueues({ url: redis.url, prefix: redis.prefix });
    await drop?.();
    await sim?.close();
  });

  it('covers a known list of commands (the walk finds them all)', () => {
    const found = jsonCommands().map((p) => p.join(' '));
    for (const c of ['refresh', 'accounts remove', 'accounts list', 'feeds get', 'sync', 'check-expiry', 'doctor'])
      expect(found).toContain(c);
  });

  it('every --json command with PostgreSQL and Redis on closed ports', async () => {
    const down = { ...env, DATABASE_URL: 'postgres://fm:pw@127.0.0.1:1/none', REDIS_URL: 'redis://127.0.0.1:1' };
    for (const path of jsonCommands()) {
      const args = [...argsFor(path), '--json'];
      const io = memoryIO({ env: down, stdin: path.join(' ') === 'accounts add' ? 'IGQVJsometoken' : '' });
      const code = await main(args, io);
      const error = expectJsonFailure(args, io.out(), io.err(), code);
      if (code === 3) expect(error.kind, args.join(' ')).toBe('unavailable');
    }
  }, 120_000);

  it('a missing account, endpoint or feed is kind not_found', async () => {
    const cases = [
      ['accounts', 'remove', ACCOUNT],
      ['feeds', 'get', ACCOUNT],
      ['refresh', ACCOUNT],
      ['sync', ACCOUNT, '--wait'],
      ['media', 'rebuild', '--account', ACCOUNT],
      ['webhooks', 'remove', ENDPOINT],
    ];
    for (const c of cases) {
      const args = [...c, '--json'];
      const io = memoryIO({ env });
      const code = await main(args, io);
      expect(code, `${args.join(' ')}: ${io.err()}`).toBe(1);
      expect(expectJsonFailure(args, io.out(), io.err(), code).kind, args.join(' ')).toBe('not_found');
    }
  }, 120_000);

  it('a usage error with --json is kind usage', async () => {
    const io = memoryIO({ env });
    expect(await main(['sync', 'not an id!', '--json'], io)).toBe(2);
    expect((JSON.parse(io.out()) as { error: { kind: string } }).error.kind).toBe('usage');
  });
});
