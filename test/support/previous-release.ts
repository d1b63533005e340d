import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

/** The git tag or commit id that infra/previous-release names (its one line that is not a comment). */
export function previousReleaseRef(): string {
  const lines = readFileSync(join(ROOT, 'infra/previous-release'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  if (lines.length !== 1)
    throw new Error(`infra/previous-release must hold one tag or commit id, found ${lines.length}`);
  return lines[0]!;
}

export interface ExtractedRelease {
  ref: string;
  commit: string;
  dir: string;
  /** Its bin/feedmirror.js. */
  bin: string;
  close(): Promise<void>;
}

/**
 * A release taken out of git as an operator unpacks one (`git archive`, no history, no build),
 * with this checkout's node_modules linked in: the dependencies of a release one step back are the
 * ones the current lock file installs, or close enough to run its sources through tsx.
 */
export function extractRelease(ref: string): ExtractedRelease {
  const rev = spawnSync('git', ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (rev.status !== 0)
    throw new Error(
      `infra/previous-release names ${ref}, which this clone does not have (a shallow clone? fetch it: git fetch --tags --unshallow)`,
    );
  const commit = rev.stdout.trim();
  const dir = mkdtempSync(join(tmpdir(), 'fm-previous-release-'));
  const unpack = spawnSync('bash', ['-c', 'git archive --format=tar "$1" | tar -x -C "$2"', 'unpack', commit, dir], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (unpack.status !== 0) throw new Error(`git archive ${commit} failed: ${unpack.stderr}`);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return {
    ref,
    commit,
    dir,
    bin: join(dir, 'bin/feedmirror.js'),
    close: () => rm(dir, { recursive: true, force: true }),
  };
}
