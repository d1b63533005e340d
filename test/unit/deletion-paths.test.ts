import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * R-DEL-1..4: every delete from storage goes through the deletion guard (src/deletion/guard.ts).
 * Outside the guard and the storage implementations, nothing in src/ or jobs/ calls a storage's
 * delete, deletePrefix or sweepLeftovers itself: a new deleting path must ask the guard.
 */
const ROOT = path.resolve('.');
const ALLOWED = ['src/deletion/', 'src/storage/'];
const CALL = /storage\??\.(delete|deletePrefix|sweepLeftovers)\(/i;

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...(await files(rel)));
    else if (e.name.endsWith('.ts')) out.push(rel);
  }
  return out;
}

describe('the deletion guard is the only way to delete from storage', () => {
  it('no storage delete, deletePrefix or sweepLeftovers call outside src/deletion/ and src/storage/', async () => {
    const offenders: string[] = [];
    for (const f of [...(await files('src')), ...(await files('jobs'))]) {
      if (ALLOWED.some((a) => f.startsWith(a))) continue;
      (await readFile(path.join(ROOT, f), 'utf8')).split('\n').forEach((line, i) => {
        if (CALL.test(line)) offenders.push(`${f}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  it('the check finds such a call (the code before the guard deleted orphans this way)', () => {
    expect(CALL.test('        await deps.storage.delete(key);')).toBe(true);
    expect(
      CALL.test('  for (const mediaId of orphans) await storage.deletePrefix(mediaPrefix(accountId, mediaId));'),
    ).toBe(true);
    expect(CALL.test('      ? await deps.storage.sweepLeftovers(new Date())')).toBe(true);
    expect(CALL.test('    await auth.sessions.delete(cookie);')).toBe(false);
  });
});
