import { join } from 'node:path';

/** Where the suite captures its output for the secrets audit (a test artifact). */
export function captureDirFor(root: string): string {
  return join(root, 'test-artifacts', 'capture');
}
