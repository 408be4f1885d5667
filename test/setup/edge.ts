/**
 * Opt-in hostile harness: starts every test right before a second's (or a minute's) end, so that
 * its first steps straddle the edge. A test that counts on the real clock staying in one second
 * (second buckets, a denial or the room left remembered for a second, a minute window) then fails
 * every run instead of once in a while on a loaded CI host.
 *
 *   MEMGATE_TEST_EDGE=second npx vitest run --project unit
 *   MEMGATE_TEST_EDGE=second CI=true npx vitest run --project integration    (after npm run build)
 *   MEMGATE_TEST_EDGE=minute CI=true npx vitest run --project integration test/some.test.ts
 *
 * `second`: each test starts at a random moment in the last 30 ms of a second (it waits up to a
 * second). `minute`: in the last 100 ms of a minute (it waits up to a minute, so run it on chosen
 * files). The moment is random so that runs again put the edge between different steps of a
 * test; MEMGATE_TEST_EDGE_LEAD_MS widens the span, say to 300 for tests whose first steps take
 * that long before they count. Unset: does nothing. Service processes a
 * test spawns read the same real clock, so they are caught at the edge too. A test that has
 * faked the clock before this hook runs is left alone.
 *
 * Where the run shares a memcached (the integration and slow projects), the edges are that
 * memcached's: memgate's windows turn by its store's clock, which ticks in whole seconds from
 * its own start, up to a second away from this host's.
 */
import { afterAll, beforeAll, beforeEach, inject, vi } from 'vitest';
import type { CounterStore } from '../../src/store/counter-store.js';
import { createMemcachedStore } from '../../src/store/memcached/memcached-store.js';

const MODES = { second: { periodMs: 1000, leadMs: 30 }, minute: { periodMs: 60_000, leadMs: 100 } } as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const mode = process.env.MEMGATE_TEST_EDGE;
if (mode !== undefined && mode !== '') {
  if (!(mode in MODES)) throw new Error(`MEMGATE_TEST_EDGE is 'second' or 'minute', not '${mode}'`);
  const { periodMs, leadMs: defaultLead } = MODES[mode as keyof typeof MODES];
  const leadMs = Number(process.env.MEMGATE_TEST_EDGE_LEAD_MS ?? defaultLead);
  if (!(leadMs > 0 && leadMs < periodMs)) throw new Error(`MEMGATE_TEST_EDGE_LEAD_MS must be within (0, ${periodMs})`);
  let store: CounterStore | undefined;
  let clock = () => Date.now();
  beforeAll(async () => {
    const servers = inject('sharedMemcached') as string | undefined;
    if (servers === undefined) return;
    const shared = createMemcachedStore({ servers });
    store = shared;
    const { clock: storeClock } = shared;
    if (storeClock === undefined) return;
    await storeClock.ready();
    // Its offset, read once: the hook then reads only this host's clock, whatever the store does
    // later (a test of accuracy-cli once waited out the hook's timeout reading the store's).
    const offsetMs = storeClock.now('edge') - Date.now();
    if (Math.abs(offsetMs) < 5000) clock = () => Date.now() + offsetMs;
  });
  afterAll(async () => {
    await store?.close();
  });
  beforeEach(
    async () => {
      if (vi.isFakeTimers()) return;
      const lead = 1 + Math.floor(Math.random() * leadMs);
      // Never more than two periods: a harness that cannot find the edge leaves the test to run.
      const giveUpAt = Date.now() + 2 * periodMs;
      for (;;) {
        const left = periodMs - (clock() % periodMs);
        if (left <= lead || Date.now() > giveUpAt) return;
        // Sleep to a few ms before the lead starts, then spin those few: a timer fires late, and
        // one that overshoots the edge sleeps again rather than spinning through a whole period.
        if (left - lead > 8) await sleep(left - lead - 5);
        else while (periodMs - (clock() % periodMs) > lead); // spin at most 8 ms
      }
    },
    2 * periodMs + 10_000,
  );
}
