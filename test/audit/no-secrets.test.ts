import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Runs after the whole suite (second vitest run of `npm test`): no token, app secret or
 * encryption key, and no access_token / client_secret query value, appears in any log line,
 * error, email or HTTP response the suite captured (R-TOK-11, R-LNK-7, R-MED-6).
 */
const dir = process.env.FEEDMIRROR_CAPTURE_DIR ?? '';

describe('secrets audit over everything the suite captured (R-TOK-11, R-LNK-7)', () => {
  const files = dir && existsSync(dir) ? readdirSync(dir) : [];
  const ledgers = files.filter((f) => f.endsWith('.ledger'));
  const captured = files.filter((f) => f.endsWith('.txt'));

  it('the suite captured output and registered secrets to check', () => {
    expect(captured.length, `nothing captured in ${dir}`).toBeGreaterThan(0);
    expect(ledgers.length, `no secret ledger in ${dir}`).toBeGreaterThan(0);
  });

  it('no registered secret and no secret query value appears in captured output', () => {
    const secrets = new Set<string>();
    for (const f of ledgers) {
      for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
        if (line.trim()) secrets.add(JSON.parse(line) as string);
      }
    }
    const findings: string[] = [];
    const paramRe = /\b(access_token|client_secret)=(?!\[redacted\])[^&\s"'<>]{4,}/;
    for (const f of captured) {
      const text = readFileSync(join(dir, f), 'utf8');
      for (const s of secrets) {
        if (s.length >= 8 && text.includes(s)) findings.push(`${f}: contains a secret starting ${s.slice(0, 4)}…`);
      }
      const m = paramRe.exec(text);
      if (m) findings.push(`${f}: contains ${m[1]}=<value>`);
    }
    expect(findings).toEqual([]);
  });
});
