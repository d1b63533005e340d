#!/usr/bin/env node
// feedmirror runs from its TypeScript sources through tsx (no build step to forget).
import { fileURLToPath } from 'node:url';
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
// Loaded here rather than imported above, so that a checkout whose dependencies were never
// installed gets one line saying so instead of a module-resolution stack trace.
const tsx = await import('tsx/esm/api').catch((err) => {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
  const home = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
  process.stderr.write(
    `feedmirror: its dependencies are not installed; run \`npm ci\` in ${home}, then run this again\n`,
  );
  process.exit(1);
});
tsx.register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
