import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          // Beside their module; no memcached, nginx, chromium or process of memgate's own.
          include: ['src/**/*.test.ts', 'scripts/**/*.test.ts'],
          // They change no global state, so files share a worker's modules instead of each
          // loading its own; and they wait on no server, so they may use every core (vitest
          // leaves one free by default: on two cores, a single worker).
          isolate: false,
          maxWorkers: '100%',
          // Before the integration tests, which then have the machine to themselves.
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // Against real memcached, nginx, chromium and service processes, one file at a time.
          include: ['test/**/*.test.ts'],
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
