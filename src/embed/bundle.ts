import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

/**
 * The embed script as a page downloads it: src/embed/script/ (TypeScript modules, type-checked
 * against the widget document's contract) bundled by esbuild into one minified, dependency-free
 * ES2017 file. `npm run build` writes it into dist/ (scripts/build.js), so the production image,
 * which has no esbuild, serves the bytes it built; run from the sources, src/embed/index.ts bundles
 * it in memory once per process. The same sources and esbuild version give the same bytes, which
 * `feedmirror verify` relies on (it compares the stored script with what publishWidget writes).
 */
const ENTRY = fileURLToPath(new URL('./script/main.ts', import.meta.url));

/** Kept at the top of the minified file: what a site's developer sees when they open it. */
const HEADER = `/*! feedmirror widget: renders a widget configured on the dashboard, or a schema v1 feed. Usage:
 *   <div data-feedmirror-widget="w_abcdefghij"></div>   (reads ../widgets/<id>.json beside this script)
 *   <div data-feedmirror-feed="https://bucket.example/feeds/123.json" data-layout="grid" data-limit="12"></div>
 *   <script defer src="https://bucket.example/widget/feedmirror-widget.js"></script>
 * Plain ES2017, no dependencies. It reads a public JSON file and holds no secret (R-TOK-11).
 * Feed strings reach the page through textContent / setAttribute only, never as HTML.
 */`;

/** Bundle and minify the script; any warning of esbuild's is an error (nothing questionable ships). */
export async function bundleWidget(): Promise<Buffer> {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    // The syntax of 2017's browsers: newer syntax in the sources is lowered, not shipped.
    target: 'es2017',
    minify: true,
    // The header above and the ThumbHash licence notice (`/*!` comments) stay in place.
    legalComments: 'inline',
    // Strict mode for the whole file, as the modules were written for.
    banner: { js: `${HEADER}\n'use strict';` },
    // Not read from a tsconfig.json: the bytes depend on these sources and this file only.
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
    logLevel: 'silent',
  });
  const problems = [...result.errors, ...result.warnings];
  if (problems.length) throw new Error(`bundling the widget script: ${problems.map((p) => p.text).join('; ')}`);
  return Buffer.from(result.outputFiles[0]!.contents);
}
