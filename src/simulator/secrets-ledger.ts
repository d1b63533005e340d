import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where the simulator reports the secrets it creates (app secret, tokens, codes). Under the test
 * suite (FEEDMIRROR_CAPTURE_DIR set) they go to the secrets audit ledger, the same format as
 * test/support/capture.ts, so the audit checks that none of them leaked into captured output
 * (R-TOK-11). Elsewhere: nowhere.
 */
export function defaultSecretSink(env: NodeJS.ProcessEnv = process.env): (secret: string) => void {
  const dir = env.FEEDMIRROR_CAPTURE_DIR;
  if (!dir) return () => {};
  return (secret) => {
    if (!secret) return;
    mkdirSync(dir, { recursive: true });
    appendFileSync(join(dir, `secrets.${process.pid}.ledger`), `${JSON.stringify(secret)}\n`);
  };
}
