import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Unit tests live beside their module in src/; integration tests in test/.
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
