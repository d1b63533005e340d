// ESLint flat config. Type-aware rules where a mistake is silent at run time (a promise nobody
// awaits, a promise passed where a callback's result is ignored); the recommended sets for the
// rest. Formatting is Prettier's job, so every stylistic rule is turned off (eslint-config-prettier).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

export default tseslint.config(
  {
    ignores: ['node_modules/**', 'dist/**', 'data/**', 'test-artifacts/**', 'coverage/**', 'bench/results/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A promise left floating loses its error (an unhandled rejection ends the process).
      '@typescript-eslint/no-floating-promises': 'error',
      // A promise where a void callback is expected (an event handler, forEach) is never awaited.
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // `_`-prefixed names are deliberate: a parameter a signature needs, a value destructured away.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Plain JavaScript outside the TypeScript project: no type information to lint with.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  prettier,
);
