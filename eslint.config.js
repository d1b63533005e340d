// ESLint flat config: typescript-eslint's strictTypeChecked everywhere (src/, jobs/, test/, bench/,
// scripts/), with the switch-exhaustiveness check on top; the few options and relaxations below each
// say why. Formatting is Prettier's job, so every stylistic rule is turned off (eslint-config-prettier).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

export default tseslint.config(
  {
    ignores: ['node_modules/**', 'dist/**', 'data/**', 'test-artifacts/**', 'coverage/**', 'bench/results/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
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
      // A switch over a union names every member, or has a default on purpose: a new error kind
      // or job outcome fails the lint where it is not handled.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      // Numbers and booleans print the same everywhere and are the stuff of log lines and messages
      // ("3 posts", "complete: true"); objects, nullish values and unions with them stay refused.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // `() => res.end()` is the callback shorthand, and `return done()` in a function that itself
      // returns void ends it: neither is a misread value; elsewhere a void value used as one is
      // still refused.
      '@typescript-eslint/no-confusing-void-expression': [
        'error',
        { ignoreArrowShorthand: true, ignoreVoidReturningFunctions: true },
      ],
      // noUncheckedIndexedAccess (tsconfig.json) types every index read, regex group and Map.get as
      // possibly undefined, also right after the bounds check, the match or the set that makes it
      // present; `!` states that invariant where it holds. An assertion that changes nothing is still
      // refused (no-unnecessary-type-assertion).
      '@typescript-eslint/no-non-null-assertion': 'off',
      // `as never` fits any parameter: it switches the type check off where it is written.
      'no-restricted-syntax': [
        'error',
        {
          selector: "TSAsExpression[typeAnnotation.type='TSNeverKeyword']",
          message: '`as never` silences the type check; give the value its type (or a fake its interface).',
        },
      ],
      // An async function that implements a promise-returning interface without awaiting anything
      // (an in-memory store, a stub): `async` keeps a throw a rejection, as the interface promises.
      '@typescript-eslint/require-await': 'off',
      // String(x) on a value typed string is where the code does not trust the type at run time
      // (a storage key's part or a slot checked with typeof, a simulator spec from a request):
      // the conversion keeps the error message readable whatever arrived.
      '@typescript-eslint/no-unnecessary-type-conversion': 'off',
    },
  },
  {
    // Express's idiom: a handler or middleware ends with `return next()` or `return res.redirect()`,
    // whose void is the handler's own (Express ignores what it returns). Written out as two
    // statements in every one of them, the routes would say the same thing at twice the length.
    files: ['src/http/**/*.ts'],
    rules: { '@typescript-eslint/no-confusing-void-expression': 'off' },
  },
  {
    // The embed script reads a document fetched at run time, in visitors' browsers of any age: its
    // types say what a valid document and a current browser hold, and the checks that look
    // unnecessary against them are what keeps an older document or browser from breaking a page.
    // For the same reason a value read from the document is made a string with String() whatever
    // its type says.
    files: ['src/embed/script/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unnecessary-condition': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    // Tests and benchmarks: the same rules, less the few that fight what they do on purpose.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // What a beforeAll sets is typed as set, but afterAll runs also when the beforeAll failed half
      // way: the `?.` and `if (x)` of a clean-up are needed, whatever the types say.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // Tests read parsed JSON and YAML (any) and mutate fixtures of it; expect() checks their shape.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // A fake stands in for a class (a storage, a client) by its shape: that is what a fake is.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      // A test drops what it does not compare (or an environment variable it unsets) from a copy
      // it owns.
      '@typescript-eslint/no-dynamic-delete': 'off',
      // A test's catch callback knows what the code under test rejects with (an Error) and adds
      // its message to the failure.
      '@typescript-eslint/use-unknown-in-catch-callback-variable': 'off',
    },
  },
  {
    // Plain JavaScript outside the TypeScript project: no type information to lint with.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  prettier,
);
