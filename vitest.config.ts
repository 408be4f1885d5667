import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        // Beside their module; no memcached, nginx, chromium or process of memgate's own. They
        // change no global state, so files share a worker's modules instead of loading their own.
        test: { name: 'unit', include: ['src/**/*.test.ts', 'scripts/**/*.test.ts'], isolate: false },
      },
      {
        extends: true,
        // Against real memcached, nginx, chromium and service processes.
        test: { name: 'integration', include: ['test/**/*.test.ts'] },
      },
    ],
  },
});
