// A real memcached frozen with SIGSTOP under traffic and thawed with SIGCONT: what a feature
// has counted afterwards must be what was admitted. A frozen server still receives the
// requests memgate wrote before it gave up on them, and applies them when it wakes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { startMemcachedProcess, uniquePrefix, type MemcachedProcess } from './helpers/memcached.js';

const DEADLINE_MS = 100;
const FEATURES = ['a', 'b', 'c', 'd'];
const WORKERS = 24;

let memcached: MemcachedProcess;
const stores: CounterStore[] = [];
beforeAll(async () => {
  memcached = await startMemcachedProcess();
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  await memcached.stop();
});

function limiterFor(
  onStoreError: 'allow' | 'deny',
  limit: number,
  keyPrefix: string,
  caches: { cacheBytes?: number; maxDenialCacheMs?: number } = {},
): Limiter {
  const store = createMemcachedStore({ servers: memcached.servers, timeoutMs: DEADLINE_MS });
  stores.push(store);
  const policies = { events: { api: { onStoreError, limits: [{ limit, window: '1h' }] } } };
  return createLimiter({ policies, store, keyPrefix, ...caches });
}

interface Tally {
  admitted: number;
  admittedChecked: number;
  degraded: number;
}

/** Checks from many workers, freezing memcached for `frozenMs` in the middle. */
async function trafficThroughStall(limiter: Limiter, frozenMs: number): Promise<Map<string, Tally>> {
  const tallies = new Map(FEATURES.map((feature) => [feature, { admitted: 0, admittedChecked: 0, degraded: 0 }]));
  let running = true;
  const workers = Array.from({ length: WORKERS }, async (_, w) => {
    const feature = FEATURES[w % FEATURES.length] as string;
    const tally = tallies.get(feature) as Tally;
    while (running) {
      const decision = await limiter.check({ event: 'api', feature });
      if (decision.allowed) tally.admitted++;
      if (decision.allowed && !decision.degraded) tally.admittedChecked++;
      if (decision.degraded) tally.degraded++;
      // Decisions made without I/O (a server known to be down) must not starve the timers.
      await new Promise(setImmediate);
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await memcached.pause();
  await new Promise((resolve) => setTimeout(resolve, frozenMs));
  memcached.process.kill('SIGCONT');
  await new Promise((resolve) => setTimeout(resolve, 400));
  running = false;
  await Promise.all(workers);
  return tallies;
}

/**
 * What each feature has counted, read once the store has settled by a fresh instance whose
 * limit no count can reach (keys do not depend on the limit), so counts over the limit show.
 */
async function counted(keyPrefix: string): Promise<Map<string, number>> {
  await new Promise((resolve) => setTimeout(resolve, 300));
  const limit = 1_000_000_000;
  const reader = limiterFor('allow', limit, keyPrefix, { cacheBytes: 0 });
  const result = new Map<string, number>();
  for (const feature of FEATURES) {
    const decision = await reader.peek({ event: 'api', feature });
    expect(decision.degraded).toBeUndefined();
    result.set(feature, limit - (decision.limits[0]?.remaining ?? 0));
  }
  return result;
}

describe('a memcached frozen under traffic, then thawed', () => {
  it.each([300, 1500])(
    'onStoreError deny: refused requests are not counted; each feature counts exactly what it admitted (frozen %i ms)',
    async (frozenMs) => {
      const keyPrefix = uniquePrefix();
      const limit = 1_000_000;
      const tallies = await trafficThroughStall(limiterFor('deny', limit, keyPrefix), frozenMs);
      const counts = await counted(keyPrefix);
      for (const [feature, tally] of tallies) {
        expect(tally.degraded, `feature ${feature} saw the stall`).toBeGreaterThan(0);
        expect(counts.get(feature), `feature ${feature}`).toBe(tally.admitted);
      }
    },
  );

  it('onStoreError deny near the limit: no phantom count locks a client out, and none is over the limit', async () => {
    const keyPrefix = uniquePrefix();
    const limit = 400;
    // Every denial asks the store, so denied requests are in flight when it freezes.
    const tallies = await trafficThroughStall(limiterFor('deny', limit, keyPrefix, { maxDenialCacheMs: 0 }), 800);
    const counts = await counted(keyPrefix);
    for (const [feature, tally] of tallies) {
      expect(tally.admitted).toBeLessThanOrEqual(limit);
      expect(counts.get(feature), `feature ${feature}`).toBe(tally.admitted);
    }
  });

  it('onStoreError allow: degraded allows may stay counted, nothing else is', async () => {
    const keyPrefix = uniquePrefix();
    const limit = 1_000_000;
    const tallies = await trafficThroughStall(limiterFor('allow', limit, keyPrefix), 800);
    const counts = await counted(keyPrefix);
    for (const [feature, tally] of tallies) {
      expect(tally.degraded).toBeGreaterThan(0);
      expect(counts.get(feature)).toBeGreaterThanOrEqual(tally.admittedChecked);
      expect(counts.get(feature)).toBeLessThanOrEqual(tally.admitted);
    }
  });
});
