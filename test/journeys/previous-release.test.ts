import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MIGRATIONS_DIR, readMigrations } from '../../src/store/migrate.ts';
import { extractRelease, previousReleaseRef, type ExtractedRelease } from '../support/previous-release.ts';
import { openStage, type Stage } from './stage.ts';

/**
 * Expand and contract (CONTRIBUTING.md): an upgrade migrates while the previous release still
 * runs, and a rollback starts the previous release on the migrated database. So the release named
 * in infra/previous-release, taken out of git, runs its worker and serve on a database the current
 * code migrated: an account it adds is synced and published, and its /readyz answers.
 */
describe('journey: the previous release runs on the schema the current one migrated', () => {
  let release: ExtractedRelease;
  let stage: Stage;
  beforeAll(async () => {
    release = extractRelease(previousReleaseRef());
    stage = await openStage('prevrelease');
  });
  afterAll(async () => {
    await stage?.close();
    await release?.close();
  });

  it('every migration since that release names one of its migrations in -- compatible-with', async () => {
    const theirs = new Set((await readMigrations(join(release.dir, 'migrations'))).map((m) => m.name));
    const ours = await readMigrations(DEFAULT_MIGRATIONS_DIR);
    for (const m of ours.filter((f) => !theirs.has(f.name)))
      expect(
        m.compatibleWith && theirs.has(m.compatibleWith),
        `${m.name} must say "-- compatible-with: <a migration of ${release.ref}>" and keep that release working`,
      ).toBe(true);
  });

  it('migrated by the current code, then its worker syncs an account and its serve is ready', async () => {
    const migrated = await stage.cli(['migrate']);
    expect(migrated.code, migrated.stderr).toBe(0);
    const serve = await stage.startServe({ bin: release.bin });
    const worker = await stage.startWorker({ bin: release.bin });
    const acc = await stage.connect({ username: 'old.release', posts: 4, bin: release.bin });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    await stage
      .until(async () => (await stage.feed(acc.id))?.posts.length === 4, 'the previous release to publish', 90_000)
      .catch((err: Error) => {
        throw new Error(`${err.message}; its worker said:\n${worker.output().slice(-6000)}`);
      });
    const ready = await fetch(`${serve.url}/readyz`);
    expect(ready.status, await ready.text()).toBe(200);
    // It ran on the schema as it found it: the current code's migrations, nothing of its own.
    expect(worker.output()).not.toMatch(/database is newer than this feedmirror/);
  }, 180_000);
});
