import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Unit tests live beside their module (src/, scripts/); integration tests in test/.
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'scripts/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
