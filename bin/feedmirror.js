#!/usr/bin/env node
// feedmirror runs the JavaScript build in dist/ when there is one and it is newer than the sources
// (the container image, a release installed with `npm run build`), else its TypeScript sources
// through tsx (a checkout: no build step to forget while developing).
import { existsSync, readdirSync, statSync } from 'node:fs';
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
const home = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const built = new URL('../dist/build.json', import.meta.url);

/** The newest modification time under the folders dist/ is built from (0 when there are none). */
function newestSource() {
  let newest = 0;
  for (const dir of ['src', 'jobs', 'migrations']) {
    const path = `${home}/${dir}`;
    if (!existsSync(path)) continue;
    for (const entry of readdirSync(path, { withFileTypes: true, recursive: true }))
      if (entry.isFile()) newest = Math.max(newest, statSync(`${entry.parentPath}/${entry.name}`).mtimeMs);
  }
  return newest;
}

const distIsCurrent = existsSync(built) && newestSource() <= statSync(built).mtimeMs;
let main;
if (distIsCurrent) {
  ({ main } = await import('../dist/src/cli/main.js'));
} else {
  // Loaded here rather than imported above, so that a checkout whose dependencies were never
  // installed gets one line saying so instead of a module-resolution stack trace.
  const tsx = await import('tsx/esm/api').catch((err) => {
    if (err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    process.stderr.write(
      existsSync(built)
        ? `feedmirror: dist/ is older than the sources in ${home} and tsx is not installed; run \`npm ci && npm run build\` there, then run this again\n`
        : `feedmirror: its dependencies are not installed; run \`npm ci\` in ${home}, then run this again\n`,
    );
    process.exit(1);
  });
  tsx.register();
  ({ main } = await import('../src/cli/main.ts'));
}
process.exitCode = await main(process.argv.slice(2));
