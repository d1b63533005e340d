import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cruise, type ICruiseResult, type IForbiddenRuleType } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

/**
 * The layer table of docs/architecture.md, enforced: dependency-cruiser reads every import of src/ and jobs/
 * and fails on one that points the wrong way, or on an import cycle. Each row says what a
 * folder may import of ours; anything else is a violation. Keep this table and the docs' in
 * step (docs/architecture.md, "Layers").
 */
const LAYERS: Array<{ from: string; mayImport: string[] }> = [
  { from: 'src/schema/', mayImport: [] },
  { from: 'src/util/', mayImport: [] },
  { from: 'src/platform/', mayImport: ['src/util/'] },
  { from: 'src/config.ts', mayImport: ['src/util/', 'src/platform/identifiers.ts'] },
  { from: 'src/convert/', mayImport: ['src/schema/', 'src/platform/', 'src/util/'] },
  // A post is stored as its raw item and converted when read; a copy's variant keys are derived
  // from its original's (migrations/018).
  { from: 'src/store/', mayImport: ['src/schema/', 'src/util/', 'src/convert/', 'src/storage/keys.ts'] },
  { from: 'src/storage/', mayImport: ['src/config.ts', 'src/util/'] },
  // The deletion guard reads PostgreSQL and storage; a feed's content hash (src/util) proves an
  // upgraded deployment's storage its own.
  { from: 'src/deletion/', mayImport: ['src/schema/', 'src/storage/', 'src/store/', 'src/util/'] },
  { from: 'src/mirror/', mayImport: ['src/config.ts', 'src/platform/', 'src/storage/', 'src/util/'] },
  { from: 'src/webhooks/', mayImport: ['src/store/', 'src/util/'] },
  { from: 'src/metrics/', mayImport: ['src/platform/', 'src/util/'] },
  { from: 'src/demo/', mayImport: ['src/platform/', 'src/schema/', 'src/util/'] },
  // The embed script, its static markup and its publication: the widget document's contract is
  // src/schema/widget-document.ts, beside schema v1, so nothing here reaches up to src/widgets/.
  { from: 'src/embed/', mayImport: ['src/storage/', 'src/util/', 'src/schema/'] },
  { from: 'src/simulator/', mayImport: ['src/platform/', 'src/util/'] },
  {
    from: 'src/accounts/',
    mayImport: [
      'src/platform/',
      'src/store/',
      'src/storage/',
      'src/mirror/',
      'src/webhooks/',
      'src/util/',
      'src/deletion/',
    ],
  },
  {
    from: 'src/feeds/',
    mayImport: [
      'src/accounts/',
      'src/convert/',
      'src/deletion/',
      'src/demo/',
      'src/metrics/',
      'src/mirror/',
      'src/platform/',
      'src/schema/',
      'src/storage/',
      'src/store/',
      'src/webhooks/',
      'src/util/',
    ],
  },
  {
    from: 'src/widgets/',
    mayImport: [
      'src/deletion/',
      'src/embed/',
      'src/feeds/',
      'src/platform/identifiers.ts',
      'src/schema/',
      'src/storage/',
      'src/store/',
      'src/util/',
    ],
  },
  // The status documents and the widget script are checked and repaired with the functions
  // that publish them.
  {
    from: 'src/verify/',
    mayImport: [
      'src/accounts/status-document.ts',
      'src/deletion/',
      'src/feeds/',
      'src/schema/',
      'src/storage/',
      'src/store/',
      'src/util/',
      'src/embed/index.ts',
      'src/widgets/',
    ],
  },
  { from: 'src/alerts/', mayImport: ['src/accounts/', 'src/config.ts', 'src/store/', 'src/webhooks/', 'src/util/'] },
  // The top: jobs/ and src/http/ use the rest; src/cli/ (the composition root) uses everything.
  { from: 'jobs/', mayImport: ['jobs/', 'src/'] },
  { from: 'src/http/', mayImport: ['src/', 'jobs/'] },
];
// What the top layers must still never import.
const NEVER: Array<{ from: string; to: string; why: string }> = [
  { from: '^jobs/', to: '^src/(http|cli)/', why: 'jobs never import the HTTP server or the CLI' },
  { from: '^src/http/', to: '^src/cli/', why: 'the HTTP server never imports the CLI' },
];

// What the lower layers must not know of the outside world (docs/architecture.md, "Layers"): the platform
// client talks HTTP to the platform and nothing else, so Redis, Postgres, queues, object storage
// and image code stay out of it (shared state such as the call pacer's count lives in jobs/).
const OUTSIDE_SYSTEMS = '(^|node_modules/)(ioredis|pg|bullmq|@aws-sdk/[^/]+|sharp|rate-limiter-flexible)(/|$)';
const NO_OUTSIDE_SYSTEMS = ['src/platform/', 'src/schema/', 'src/convert/'];

// The embed script runs in visitors' browsers, bundled on its own by esbuild (src/embed/bundle.ts):
// outside its folder it imports types only (the widget document's contract, schema v1), and no
// package or Node module, so nothing but its own code reaches a page.
const BROWSER_ONLY = 'src/embed/script/';

/**
 * Imports that run back up the table: a folder importing a module of a folder that imports it.
 * The table allows only these (a file each, named in its row); any other pair is a failure.
 */
const BACK_IMPORTS: Array<[string, string]> = [];

const esc = (p: string) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function layerRules(): IForbiddenRuleType[] {
  const rules: IForbiddenRuleType[] = [
    { name: 'no-circular', severity: 'error', comment: 'import cycles', from: {}, to: { circular: true } },
  ];
  for (const layer of LAYERS) {
    const own = layer.from.endsWith('/') ? layer.from : null;
    const allowed = [...layer.mayImport, ...(own ? [own] : [])];
    rules.push({
      name: `layer:${layer.from}`,
      severity: 'error',
      comment: `${layer.from} may import only ${allowed.join(', ') || 'nothing of ours'}`,
      from: { path: `^${esc(layer.from)}` },
      to: { path: '^(src|jobs)/', ...(allowed.length ? { pathNot: `^(${allowed.map(esc).join('|')})` } : {}) },
    });
  }
  for (const from of NO_OUTSIDE_SYSTEMS) {
    rules.push({
      name: `no-outside-systems:${from}`,
      severity: 'error',
      comment: `${from} knows nothing of Redis, Postgres, queues, storage or images`,
      from: { path: `^${esc(from)}` },
      to: { path: OUTSIDE_SYSTEMS },
    });
  }
  rules.push({
    name: `browser-only:${BROWSER_ONLY}`,
    severity: 'error',
    comment: `${BROWSER_ONLY} imports only types from outside its folder, and no package`,
    from: { path: `^${esc(BROWSER_ONLY)}` },
    to: { pathNot: `^${esc(BROWSER_ONLY)}`, dependencyTypesNot: ['type-only'] },
  });
  for (const n of NEVER)
    rules.push({
      name: `never:${n.from}->${n.to}`,
      severity: 'error',
      comment: n.why,
      from: { path: n.from },
      to: { path: n.to },
    });
  return rules;
}

async function cruised(files: string[], baseDir?: string): Promise<ICruiseResult> {
  const result = await cruise(files, {
    validate: true,
    ruleSet: { forbidden: layerRules() },
    // node_modules stay in the graph as leaves (not followed), so imports of packages can be judged.
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    ...(baseDir ? { baseDir } : {}),
  });
  return result.output as ICruiseResult;
}

function violations(out: ICruiseResult): string[] {
  return out.summary.violations.map((v) => `${v.from} -> ${v.to} (${v.rule.name})`);
}

/** Pairs of top-level folders (src/<folder>/, jobs/) that import each other, each pair once, sorted. */
function mutualFolders(out: ICruiseResult): Array<[string, string]> {
  const folder = (p: string) => /^(jobs\/|src\/[^/]+\/)/.exec(p)?.[1];
  const edges = new Set<string>();
  for (const m of out.modules)
    for (const d of m.dependencies) {
      const [a, b] = [folder(m.source), folder(d.resolved)];
      if (a && b && a !== b) edges.add(`${a} ${b}`);
    }
  return [...edges]
    .map((e) => e.split(' ') as [string, string])
    .filter(([a, b]) => a < b && edges.has(`${b} ${a}`))
    .sort();
}

let ours: Promise<ICruiseResult> | undefined;
const cruiseOurs = () => (ours ??= cruised(['src', 'jobs']));

describe('architecture: the layer table of docs/architecture.md', () => {
  it('every import of src/ and jobs/ points the way the table allows, and nothing imports in a circle', async () => {
    expect(violations(await cruiseOurs())).toEqual([]);
  }, 60_000);

  it('imports run one way: no two folders import each other but the back imports the table names', async () => {
    expect(mutualFolders(await cruiseOurs())).toEqual(BACK_IMPORTS.map(([a, b]) => [a, b].sort()));
  }, 60_000);

  it('the rules catch an import that breaks the table (store -> http), a cycle, and Redis in the platform layer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fm-layers-'));
    try {
      await mkdir(join(dir, 'src', 'store'), { recursive: true });
      await mkdir(join(dir, 'src', 'http'), { recursive: true });
      await mkdir(join(dir, 'src', 'util'), { recursive: true });
      await writeFile(
        join(dir, 'src', 'store', 'bad.ts'),
        "import { page } from '../http/page.ts';\nexport const x = page;\n",
      );
      await writeFile(join(dir, 'src', 'http', 'page.ts'), 'export const page = 1;\n');
      await writeFile(join(dir, 'src', 'util', 'a.ts'), "import { b } from './b.ts';\nexport const a = b;\n");
      await writeFile(join(dir, 'src', 'util', 'b.ts'), "import { a } from './a.ts';\nexport const b = () => a;\n");
      await mkdir(join(dir, 'src', 'platform'), { recursive: true });
      await writeFile(
        join(dir, 'src', 'platform', 'pace.ts'),
        "import type { Redis } from 'ioredis';\nexport type R = Redis;\n",
      );
      // The embed script: a type from outside its folder is fine, a value or a package is not.
      await mkdir(join(dir, 'src', 'embed', 'script'), { recursive: true });
      await mkdir(join(dir, 'src', 'schema'), { recursive: true });
      await writeFile(join(dir, 'src', 'schema', 'doc.ts'), 'export type Doc = { id: string };\n');
      await writeFile(join(dir, 'src', 'schema', 'limits.ts'), 'export const LIMIT = 1;\n');
      await writeFile(
        join(dir, 'src', 'embed', 'script', 'main.ts'),
        "import type { Doc } from '../../schema/doc.ts';\nimport { LIMIT } from '../../schema/limits.ts';\n" +
          "import { readFileSync } from 'node:fs';\nexport const f = (d: Doc) => [d.id, LIMIT, readFileSync];\n",
      );
      const found = violations(await cruised(['src'], dir));
      expect(found).toContain('src/embed/script/main.ts -> src/schema/limits.ts (browser-only:src/embed/script/)');
      expect(found.filter((v) => v.includes('schema/doc.ts'))).toEqual([]);
      expect(found.some((v) => /^src\/embed\/script\/main\.ts -> (node:)?fs \(browser-only/.test(v))).toBe(true);
      expect(found).toContain('src/store/bad.ts -> src/http/page.ts (layer:src/store/)');
      expect(found.some((v) => v.includes('(no-circular)'))).toBe(true);
      expect(found).toContain('src/platform/pace.ts -> ioredis (no-outside-systems:src/platform/)');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
