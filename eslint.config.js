// @ts-check
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/',
      '**/node_modules/',
      'coverage/',
      'scripts/bench/connect-floor/',
      // Written by scripts/policy-validator.ts (ajv's standalone code), checked by its test.
      'src/config/policy-shape-validator.ts',
      // Written by scripts/contract-schemas.ts (the contract's schemas as JSON), checked by its test.
      'src/shared/contract-schemas.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  ...tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/consistent-type-definitions': 'off',
      'no-console': 'error',
      // Prefer an explicit `as T` over `!`, which the strict set forbids.
      '@typescript-eslint/non-nullable-type-assertion-style': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  // Layout is prettier's (npm run format); eslint judges the code only.
  prettier,
  {
    // Scripts and memgate's commands are command-line tools: printing is their job.
    files: ['scripts/**', 'src/commands/**'],
    rules: { 'no-console': 'off' },
  },
);
