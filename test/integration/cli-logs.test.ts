import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY } from '../../src/util/clock.ts';
import { registerSecretForAudit, recordCaptured } from '../support/capture.ts';
import { runFeedmirror } from '../support/processes.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { dropQueues } from '../support/queues.ts';

/**
 * What a person at a terminal sees (real processes on a pseudo-terminal, through util-linux's
 * `script`): a command's logs are short human lines, warnings and worse, and its report comes
 * last on stdout; LOG_FORMAT=json keeps JSON; in a pipe the logs stay JSON; `serve` keeps JSON
 * on a terminal too (a service's logs are for its supervisor's collector).
 */
const BIN = fileURLToPath(new URL('../../bin/feedmirror.js', import.meta.url));

interface OnTerminal {
  code: number | null;
  /** stdout and stderr as the terminal shows them, one entry per line. */
  lines: string[];
}

/** `feedmirror <args>` with stdout and stderr on a pseudo-terminal; `until` ends it early (SIGTERM). */
function onTerminal(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { until?: (text: string) => boolean; timeoutMs?: number } = {},
): Promise<OnTerminal> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.FEEDMIRROR_CAPTURE_DIR;
  // The suite runs with LOG_LEVEL=debug; a person's shell has none unless the test sets one.
  if (env.LOG_LEVEL === undefined) delete childEnv.LOG_LEVEL;
  const command = ['exec', process.execPath, BIN, ...args].map((w) => `'${w}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (b: Buffer) => {
    text += b.toString('utf8');
    recordCaptured('process', b.toString('utf8'));
    if (opts.until?.(text)) child.kill('SIGTERM');
  });
  child.stderr.on('data', (b: Buffer) => recordCaptured('process', b.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, lines: text.split(/\r?\n/).filter((l) => l.trim() !== '') });
    }),
  );
}

const isJsonLog = (l: string) => l.startsWith('{"level":');

describe('logs on a terminal', () => {
  let drop: () => Promise<void>;
  let storageDir: string;
  let env: Record<string, string>;
  const redis = redisForTest('cli-logs');

  beforeAll(async () => {
    const db = await freshDatabase('cli_logs');
    drop = db.drop;
    const pool = createPool(db.url);
    await migrate(pool);
    // A token stored under another key than the one the commands get: verify finds it and logs a warning.
    const at = new Date();
    await upsertAccount(pool, { id: '17841400000000001', username: 'logs.test' }, at);
    const otherKey = randomBytes(32).toString('base64');
    registerSecretForAudit(otherKey);
    registerSecretForAudit('token-of-the-logs-test');
    await saveToken(
      pool,
      TokenCipher.fromEnv(otherKey),
      {
        accountId: '17841400000000001',
        accessToken: 'token-of-the-logs-test',
        obtainedAt: at,
        expiresAt: new Date(+at + 50 * DAY),
      },
      'imported',
    );
    await pool.end();
    storageDir = mkdtempSync(join(tmpdir(), 'fm-cli-logs-'));
    const key = randomBytes(32).toString('base64');
    registerSecretForAudit(key);
    env = {
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: redis.prefix,
      STORAGE_URL: storageDir,
      TOKEN_ENCRYPTION_KEY: key,
    };
  });
  afterAll(async () => {
    await dropQueues({ url: redis.url, prefix: redis.prefix });
    await drop?.();
    if (storageDir) await rm(storageDir, { recursive: true, force: true });
  });

  it('a command: its warning is one human line, no JSON, and its report comes last', async () => {
    const r = await onTerminal(['verify'], env);
    expect(r.code, r.lines.join('\n')).toBe(1);
    expect(r.lines.filter(isJsonLog)).toEqual([]);
    const warning = r.lines.findIndex((l) => l.startsWith('warning: verify: the stores disagree (ok=false, problems='));
    expect(warning, r.lines.join('\n')).toBeGreaterThanOrEqual(0);
    const report = r.lines.findIndex((l) => l.startsWith('checked 1 account(s)'));
    expect(report).toBeGreaterThan(warning);
    // After the report, nothing but the report and its one failure line: no log line.
    expect(r.lines.slice(report).filter((l) => /^(warning|error|info): /.test(l))).toEqual([]);
    expect(r.lines.at(-1)).toMatch(/problem/);
  });

  it('LOG_LEVEL on a terminal: error hides the warning; info adds info lines, still human', async () => {
    const quiet = await onTerminal(['verify'], { ...env, LOG_LEVEL: 'error' });
    expect(quiet.code).toBe(1);
    expect(quiet.lines.filter((l) => /^(warning|error|info): |^\{"level"/.test(l))).toEqual([]);
    const fresh = await freshDatabase('cli_logs_migrate');
    try {
      const r = await onTerminal(['migrate'], { ...env, DATABASE_URL: fresh.url, LOG_LEVEL: 'info' });
      expect(r.code, r.lines.join('\n')).toBe(0);
      expect(r.lines.filter(isJsonLog)).toEqual([]);
      expect(r.lines).toContain('info: migration applied (migration=001_accounts_tokens.sql)');
      expect(r.lines.at(-1)).toMatch(/^applied 001_accounts_tokens\.sql, .*; database at /);
    } finally {
      await fresh.drop();
    }
  });

  it('LOG_FORMAT=json on a terminal keeps JSON', async () => {
    const r = await onTerminal(['verify'], { ...env, LOG_FORMAT: 'json' });
    expect(r.code).toBe(1);
    const json = r.lines.filter(isJsonLog).map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(json.map((j) => [j.level, j.msg])).toContainEqual([40, 'verify: the stores disagree']);
    expect(r.lines.filter((l) => l.startsWith('warning: '))).toEqual([]);
  });

  it('in a pipe the same command logs JSON, as before', async () => {
    const childEnv = { ...env, LOG_LEVEL: '' };
    const r = await runFeedmirror(['verify'], childEnv);
    expect(r.code).toBe(1);
    const logs = r.stderr.split('\n').filter(isJsonLog);
    expect(logs.map((l) => (JSON.parse(l) as { msg: string }).msg)).toContain('verify: the stores disagree');
    expect(r.stdout).toMatch(/^checked 1 account\(s\)/m);
    expect(r.stdout).not.toMatch(/\{"level"/);
  });

  it('serve on a terminal keeps JSON logs', async () => {
    const r = await onTerminal(
      ['serve'],
      { ...env, HOST: '127.0.0.1', PORT: '0' },
      {
        until: (text) => /\{"level":3\d/.test(text),
      },
    );
    const json = r.lines.filter(isJsonLog);
    expect(json.length, r.lines.join('\n')).toBeGreaterThan(0);
    expect(r.lines.filter((l) => /^(warning|error|info): /.test(l))).toEqual([]);
  });
});
