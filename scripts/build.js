#!/usr/bin/env node
// npm run build: feedmirror as JavaScript in dist/, for the container image and release installs.
// tsc (tsconfig.build.json) compiles src/ and jobs/; the embed script is bundled by esbuild
// (src/embed/bundle.ts) into dist/src/embed/feedmirror-widget.js, since the image has no esbuild
// to bundle it when it starts; every other file they read at run time (email templates, the
// dashboard's CSS, the simulator's photos) is copied beside them, and
// the files they find relative to themselves (migrations/, package.json, .env.example) are copied
// to the same places relative to dist/. dist/build.json is written last: bin/feedmirror.js runs
// dist/ only when it is there, so a build cut short is never used.
import { spawnSync } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// --out DIR builds somewhere else (the build test does, to leave the checkout's dist/ alone).
const at = process.argv.indexOf('--out');
const out = at === -1 ? join(root, 'dist') : resolve(process.argv[at + 1] ?? '');
const say = (line) => process.stderr.write(`[build] ${line}\n`);

await rm(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
say('compiling src/ and jobs/ (tsc -p tsconfig.build.json)');
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out], {
  stdio: 'inherit',
});
if (compiled.status !== 0) {
  say(`tsc failed (exit ${compiled.status}); nothing usable in dist/`);
  process.exit(1);
}

/** Every file under `dir` (relative to the root) that is not TypeScript. */
async function assets(dir) {
  const found = [];
  for (const entry of await readdir(join(root, dir), { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || /\.(ts|mts|cts)$/.test(entry.name)) continue;
    found.push(relative(root, join(entry.parentPath, entry.name)));
  }
  return found;
}
let copied = 0;
for (const file of [...(await assets('src')), ...(await assets('jobs'))]) {
  await mkdir(dirname(join(out, file)), { recursive: true });
  await cp(join(root, file), join(out, file));
  copied++;
}
// The bundler's configuration is TypeScript (src/embed/bundle.ts, also used when running from the
// sources): loaded through tsx, which the build has as it has tsc.
const { register } = await import('tsx/esm/api');
register();
const { bundleWidget } = await import('../src/embed/bundle.ts');
const { WIDGET_FILENAME } = await import('../src/embed/index.ts');
const script = await bundleWidget();
await writeFile(join(out, 'src/embed', WIDGET_FILENAME), script);
say(`bundled the embed script: src/embed/${WIDGET_FILENAME}, ${script.length} bytes`);
await cp(join(root, 'migrations'), join(out, 'migrations'), { recursive: true });
await cp(join(root, '.env.example'), join(out, '.env.example'));
const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
await cp(join(root, 'package.json'), join(out, 'package.json'));
await writeFile(
  join(out, 'build.json'),
  `${JSON.stringify({ name: pkg.name, version: pkg.version, node: process.versions.node }, null, 2)}\n`,
);
say(`${out} ready: ${copied} files beside the JavaScript, migrations/, package.json, .env.example`);
