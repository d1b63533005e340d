import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Everything the suite produces that a person could read (log lines, error messages, emails,
 * HTTP response bodies) is appended under FEEDMIRROR_CAPTURE_DIR, and every secret the suite
 * creates (tokens issued by the simulator, app secrets, encryption keys) is written to a ledger
 * there. test/audit/no-secrets.test.ts then checks that no secret appears in anything captured
 * (R-TOK-11, R-LNK-7, R-MED-6).
 */
export function captureDir(): string | undefined {
  return process.env.FEEDMIRROR_CAPTURE_DIR;
}

export function recordCaptured(kind: string, text: string): void {
  const dir = captureDir();
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  appendFileSync(join(dir, `${kind}.${process.pid}.txt`), text.endsWith('\n') ? text : `${text}\n`);
}

export function registerSecretForAudit(secret: string): void {
  const dir = captureDir();
  if (!dir || !secret) return;
  mkdirSync(dir, { recursive: true });
  appendFileSync(join(dir, `secrets.${process.pid}.ledger`), `${JSON.stringify(secret)}\n`);
}
