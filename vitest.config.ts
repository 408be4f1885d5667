import { defineConfig } from 'vitest/config';

/**
 * Tests that judge time or load (deadlines against a hung server, thousands of connections, a
 * service draining, fuzzing against deadlines): each file runs alone, after the others, with
 * the machine to itself (npm test's type check and lint, beside the run, end during the
 * integration tests). `npm test` runs them too; `npm run test:slow` alone. Not
 * test/clock.test.ts: its faked clock is judged within a second, and it passed seven runs of
 * seven beside two and three busy loops on 2 cores; it runs with the integration tests, where
 * its 21 s of waiting no longer hold up the others.
 */
const SLOW = [
  // Two instances' clocks within 20 ms of each other.
  'test/clock-agreement.test.ts',
  // A node's clients counted elsewhere within a second of its death.
  'test/failover.test.ts',
  'test/faults.test.ts',
  'test/fuzz.test.ts',
  'test/memory.test.ts',
  'test/overload.test.ts',
  'test/shutdown.test.ts',
  'test/usage-stall.test.ts',
];

/**
 * Opt-in (MEMGATE_TEST_EDGE=second|minute): each test starts right before a second's or a minute's
 * end, so tests that assume the real clock stays in one second or minute fail every run.
 */
const EDGE = ['test/setup/edge.ts'];

/**
 * Checks of the build that run the TypeScript compiler over the tree (about 5 s of CPU for
 * its programs, most of it loading them): with the integration tests, not the unit tests,
 * which stay the quick run while editing.
 */
const COMPILER_CHECKS = ['scripts/flat-contract-types.test.ts'];

/**
 * Tests that measure this process's heap: each runs in a worker of its own, as a file with the
 * integration tests would share one with the files before it, whose garbage a collection may
 * free in the middle of a measure.
 */
const HEAP_MEASURES = ['test/memory-estimate.test.ts'];

/**
 * The packages as an app installs them (npm pack, npm install from the tarballs and from git,
 * strict tsc of examples): about 130 s of CPU that waits on no clock. With the integration tests
 * when named with them (`npm run test:integration`); `npm test` runs it in a vitest of its own
 * beside the others, its installs and compiles at the lowest priority, where they take the cores
 * the others leave idle, most of one while the slow project runs (scripts/test.mjs).
 */
const PACKAGES = ['test/packages.test.ts'];

/**
 * One build of dist/ (npm test makes it first) and one memcached for each vitest run
 * (test/setup/shared-run.ts).
 */
const SHARED_RUN = ['test/setup/shared-run.ts'];

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 60_000,
    setupFiles: EDGE,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          // Beside their module; no memcached, nginx, chromium or process of memgate's own.
          include: ['src/**/*.test.ts', 'scripts/**/*.test.ts'],
          exclude: COMPILER_CHECKS,
          // They change no global state, so files share a worker's modules instead of each
          // loading its own; and they wait on no server, so they may use every core (vitest
          // leaves one free by default: on two cores, a single worker), beside npm test's type
          // check and lint (scripts/test.mjs).
          isolate: false,
          maxWorkers: '100%',
          // Before the integration tests.
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // Against real memcached, nginx, chromium and service processes: three files at a
          // time on two cores, as most of their time is spent waiting on those (measured: 130 s
          // against 175 s for two at a time, and 300 s for one).
          include: ['test/**/*.test.ts', ...COMPILER_CHECKS],
          exclude: [...SLOW, ...HEAP_MEASURES, ...PACKAGES],
          globalSetup: SHARED_RUN,
          maxWorkers: 3,
          // Files share a worker's modules, as the unit tests do: what they test runs mostly in
          // the processes they start, and loading src/ and its packages again for each of its
          // 70 files cost about 35 s of CPU in a phase that keeps both cores busy (measured,
          // the project alone: 366 s wall and 647 s of CPU isolated, 352 s and 609 s not).
          isolate: false,
          // A spy a failing test left in place would reach the next files in its worker.
          restoreMocks: true,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'heap',
          include: HEAP_MEASURES,
          // With the integration tests, and as many workers (vitest runs projects of one group
          // order on one pool), but isolated.
          maxWorkers: 3,
          isolate: true,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'packages',
          include: PACKAGES,
          globalSetup: SHARED_RUN,
          // Its tests and set-up wait on installs and compiles (the one from git about a
          // minute), which npm test runs at the lowest priority (test/helpers/beside.ts): there
          // they take as long as the other tests leave them idle cores.
          testTimeout: process.env.PACKAGE_TESTS_BESIDE ? 600_000 : 300_000,
          hookTimeout: 600_000,
          // As the integration tests, whose group it joins when run with them.
          maxWorkers: 3,
          isolate: false,
          restoreMocks: true,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'slow',
          include: SLOW,
          globalSetup: SHARED_RUN,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
