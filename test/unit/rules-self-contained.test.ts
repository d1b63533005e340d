import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The repository stands on its own: every rule id cited in src/, jobs/ and test/ resolves in
 * docs/RULES.md, and nothing points outside the repository (a clone has neither the shared folder
 * nor the design document that sit beside the working copy here).
 */
const ROOT = path.resolve('.');
const SKIP = new Set(['node_modules', '.git', 'data', 'test-artifacts']);

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (SKIP.has(e.name)) continue;
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await files(full)));
    else if (/\.(ts|js|mjs|json|md|ya?ml|sh|sql|html|css|txt)$|Dockerfile$|\.env\.example$/.test(e.name))
      out.push(full);
  }
  return out;
}

describe('a self-contained repository', () => {
  it('docs/RULES.md has one line per rule id, each with its text', async () => {
    const text = await readFile(path.join(ROOT, 'docs', 'RULES.md'), 'utf8');
    const ids = [...text.matchAll(/^- (R-[A-Z]+-\d+) (.+)$/gm)].map((m) => m[1]!);
    expect(ids.length).toBeGreaterThanOrEqual(62);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('every rule id cited in src/, jobs/ and test/ resolves in docs/RULES.md', async () => {
    const text = await readFile(path.join(ROOT, 'docs', 'RULES.md'), 'utf8');
    const known = new Set([...text.matchAll(/^- (R-[A-Z]+-\d+) /gm)].map((m) => m[1]!));
    const missing: string[] = [];
    let cited = 0;
    for (const dir of ['src', 'jobs', 'test', 'bench']) {
      for (const f of await files(path.join(ROOT, dir))) {
        const body = await readFile(f, 'utf8');
        // R-TOK-7, and ranges written R-SCH-1..11
        for (const m of body.matchAll(/\bR-([A-Z]{3})-(\d+)(?:\.\.(\d+))?/g)) {
          const [group, from, to] = [m[1]!, Number(m[2]), m[3] ? Number(m[3]) : Number(m[2])];
          cited++;
          for (let n = from; n <= to; n++)
            if (!known.has(`R-${group}-${n}`)) missing.push(`${path.relative(ROOT, f)}: R-${group}-${n}`);
        }
      }
    }
    expect(cited).toBeGreaterThan(100);
    expect(missing).toEqual([]);
  });

  it('nothing points outside the repository: no shared folder beside the repository, DESIGN.md, ENVIRONMENT.md or the spec file', async () => {
    const offenders: string[] = [];
    for (const f of await files(ROOT)) {
      if (f === __filename || f.endsWith('rules-self-contained.test.ts')) continue;
      const body = await readFile(f, 'utf8');
      body.split('\n').forEach((line, i) => {
        if (/\.\.\/shared\b|\/work\/shared\b|DESIGN\.md|ENVIRONMENT\.md|platform-and-schema-v1/.test(line))
          offenders.push(`${path.relative(ROOT, f)}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
  });
});
