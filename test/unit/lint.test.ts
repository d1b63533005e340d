import { ESLint } from 'eslint';
import * as prettier from 'prettier';
import ts from 'typescript';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The lint and format steps of `npm test` catch what they are there for. The text is linted as if
 * it were a file of src/ (the type-aware rules need the project's types), without writing it.
 */
describe('lint and format', () => {
  it('ESLint refuses a promise left floating or passed where a callback returns void, in src/', async () => {
    const eslint = new ESLint({ cwd: ROOT });
    const code = [
      'export async function later(): Promise<void> {}',
      'export function now(): void {',
      '  later();',
      '  [1, 2].forEach(async () => later());',
      '}',
      '',
    ].join('\n');
    const [result] = await eslint.lintText(code, { filePath: `${ROOT}src/util/clock.ts` });
    const rules = result!.messages.map((m) => m.ruleId);
    expect(rules).toContain('@typescript-eslint/no-floating-promises');
    expect(rules).toContain('@typescript-eslint/no-misused-promises');
  }, 120_000);

  it('ESLint refuses a switch that misses a member of its union, what strictTypeChecked refuses and `as never`, in src/ and test/', async () => {
    const eslint = new ESLint({ cwd: ROOT });
    const code = [
      "type Kind = 'a' | 'b';",
      'export function name(k: Kind): string {',
      '  switch (k) {',
      "    case 'a':",
      "      return 'A';",
      '  }',
      "  return 'other';",
      '}',
      // A string is never nullish: strictTypeChecked's no-unnecessary-condition (not in recommended).
      "export const label = (s: string): string => s ?? 'none';",
      'export const anything = (v: unknown): string => v as never;',
      '',
    ].join('\n');
    for (const file of ['src/util/clock.ts', 'test/unit/lint.test.ts']) {
      const [result] = await eslint.lintText(code, { filePath: `${ROOT}${file}` });
      const rules = result!.messages.map((m) => m.ruleId);
      expect(rules, file).toContain('@typescript-eslint/switch-exhaustiveness-check');
      expect(rules, file).toContain('no-restricted-syntax');
      if (file.startsWith('src/')) expect(rules, file).toContain('@typescript-eslint/no-unnecessary-condition');
    }
  }, 180_000);

  it('the type check reads optional properties exactly and index reads as possibly missing', () => {
    const { config } = ts.readConfigFile(`${ROOT}tsconfig.json`, (p) => ts.sys.readFile(p)) as {
      config: { compilerOptions: Record<string, unknown> };
    };
    expect(config.compilerOptions).toMatchObject({
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
    });
  });

  it('Prettier refuses code that is not in its format, with the project settings', async () => {
    const file = `${ROOT}src/util/clock.ts`;
    const options = { ...(await prettier.resolveConfig(file)), filepath: file };
    expect(await prettier.check('export const a = {b:1}\n', options)).toBe(false);
    expect(await prettier.check('export const a = { b: 1 };\n', options)).toBe(true);
  });
});
