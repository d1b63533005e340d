import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configSchema, loadConfig, settings } from '../../src/config.ts';
import { configurationPage, settingRows } from '../../src/config-doc.ts';

/**
 * R-SET-2: docs/configuration.md is what `npm run docs:config` writes from src/config.ts, every
 * setting says which processes read it and what a change takes, its example is a value the schema
 * accepts, and .env.example names exactly the settings the schema has.
 */
const ROOT = path.resolve('.');
const EXAMPLE_KEYS = readFileSync(path.join(ROOT, '.env.example'), 'utf8')
  .split('\n')
  .map((l) => /^([A-Z0-9_]+)=/.exec(l)?.[1])
  .filter((k): k is string => !!k);

describe('the configuration reference', () => {
  it('the committed docs/configuration.md is exactly what `npm run docs:config` writes', () => {
    const committed = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
    expect(committed, 'docs/configuration.md is stale: run `npm run docs:config`').toBe(configurationPage());
  });

  it('every setting carries its documentation: a description, an example, who reads it, what a change takes', () => {
    const rows = settingRows();
    expect(rows.map((r) => r.name)).toEqual(Object.keys(configSchema.shape));
    for (const r of rows) {
      expect(r.description.length, r.name).toBeGreaterThan(5);
      expect(r.readBy.length, r.name).toBeGreaterThan(0);
      expect(r.change, r.name).toMatch(/restart (worker|serve)|the next command/);
    }
    // A long-running reader always needs a restart; a setting only commands read never does.
    const byName = new Map(rows.map((r) => [r.name, r]));
    expect(byName.get('MEDIA_VARIANT_FORMATS')).toMatchObject({ readBy: ['worker', 'cli'] });
    expect(byName.get('MEDIA_VARIANT_FORMATS')!.change).toMatch(/^restart worker; .*feedmirror media rebuild/);
    expect(byName.get('PORT')).toMatchObject({ readBy: ['serve'], change: 'restart serve' });
    expect(byName.get('TOKEN_ENCRYPTION_KEY')).toMatchObject({ requiredBy: ['worker', 'serve'] });
  });

  it('a setting without documentation is named with what to add', () => {
    const bare = z.string();
    expect(settings.get(bare)).toBeUndefined();
    const shape = configSchema.shape as Record<string, z.ZodType>;
    shape.UNDOCUMENTED_SETTING = bare;
    try {
      expect(() => settingRows()).toThrow(/UNDOCUMENTED_SETTING has no documentation: add \.register\(settings/);
    } finally {
      delete shape.UNDOCUMENTED_SETTING;
    }
  });

  it('every example (but placeholders) is a value the schema accepts', () => {
    for (const r of settingRows()) {
      if (/[(<]/.test(r.example)) continue;
      expect(() => loadConfig({ [r.name]: r.example }), `${r.name}=${r.example}`).not.toThrow();
    }
  });

  it('the page lists every setting with its type, default and readers', () => {
    const page = configurationPage();
    for (const name of Object.keys(configSchema.shape)) expect(page).toContain(`| \`${name}\` |`);
    expect(page).toContain(
      '| `SESSION_IDLE_TIMEOUT` | duration (`90m`, `12h`, `7d`) | `7d` | `12h` | serve | restart serve |',
    );
    expect(page).toContain('| `PORT` | integer 0–65535 | `8080` | `8090` | serve | restart serve |');
  });
});

describe('.env.example and the schema', () => {
  it('names every setting the schema has, and nothing the schema lacks', () => {
    const schema = Object.keys(configSchema.shape);
    expect(
      EXAMPLE_KEYS.filter((k) => !schema.includes(k)),
      'in .env.example, not in src/config.ts',
    ).toEqual([]);
    expect(
      schema.filter((k) => !EXAMPLE_KEYS.includes(k)),
      'in src/config.ts, not in .env.example',
    ).toEqual([]);
  });

  it('names every setting a process requires', () => {
    const required = settingRows().filter((r) => r.requiredBy.length);
    expect(required.length).toBeGreaterThan(0);
    for (const r of required) expect(EXAMPLE_KEYS, r.name).toContain(r.name);
  });
});
