#!/usr/bin/env node
// feedmirror runs from its TypeScript sources through tsx (no build step to forget).
import { register } from 'tsx/esm/api';
import { quietNodeVersionWarning } from './quiet-node-warning.js';

quietNodeVersionWarning();
// A reader that stops early (`feedmirror feeds get <id> | head`) closes the pipe: that ends the
// output, as for any Unix command, rather than a stack trace from an unhandled EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}
register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
