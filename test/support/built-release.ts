import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

/** What the image leaves out of node_modules: the compiler and the TypeScript runner. */
export const COMPILER_PACKAGES = ['typescript', 'tsx', 'esbuild', '@esbuild'];

export interface BuiltRelease {
  dir: string;
  bin: string;
  close(): Promise<void>;
}

/**
 * The container image's /app without a container engine: `npm run build` (scripts/build.js) into
 * dist/, then bin/, package.json and dist/ in a folder of their own, no src/, and a node_modules
 * whose entries link to this checkout's except the compiler's (COMPILER_PACKAGES), so what runs
 * there cannot reach TypeScript or tsx.
 */
export function buildRelease(): BuiltRelease {
  const dir = mkdtempSync(join(tmpdir(), 'fm-built-release-'));
  const built = spawnSync(process.execPath, [join(ROOT, 'scripts/build.js'), '--out', join(dir, 'dist')], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`npm run build failed: ${built.stderr}${built.stdout}`);
  cpSync(join(ROOT, 'bin'), join(dir, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  const modules = realpathSync(join(ROOT, 'node_modules'));
  mkdirSync(join(dir, 'node_modules'));
  for (const name of readdirSync(modules)) {
    if (COMPILER_PACKAGES.includes(name) || name === '.bin') continue;
    symlinkSync(join(modules, name), join(dir, 'node_modules', name));
  }
  return { dir, bin: join(dir, 'bin/feedmirror.js'), close: () => rm(dir, { recursive: true, force: true }) };
}

/** Which compiler packages code in the built release could load (none, when it is laid out right). */
export function compilerReachable(dir: string): string[] {
  const load = createRequire(join(dir, 'dist/src/cli/main.js'));
  return COMPILER_PACKAGES.filter((name) => {
    try {
      load.resolve(name === '@esbuild' ? '@esbuild/linux-x64/package.json' : `${name}/package.json`);
      return true;
    } catch {
      return false;
    }
  });
}
