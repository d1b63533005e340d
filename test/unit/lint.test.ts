import { ESLint } from 'eslint';
import * as prettier from 'prettier';
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

  it('Prettier refuses code that is not in its format, with the project settings', async () => {
    const file = `${ROOT}src/util/clock.ts`;
    const options = { ...(await prettier.resolveConfig(file)), filepath: file };
    expect(await prettier.check('export const a = {b:1}\n', options)).toBe(false);
    expect(await prettier.check('export const a = { b: 1 };\n', options)).toBe(true);
  });
});
