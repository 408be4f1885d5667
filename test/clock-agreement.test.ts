// Instances that read one Memcached's clock at different moments agree on it, and a token
// bucket shared by them admits what one clock would. Memcached's second turns when a timer
// fires, about a millisecond later each second and later again after a freeze, so two
// instances that pinned its turns at different moments used to be hundreds of ms apart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePolicies } from '../src/config/policies.js';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { startMemcachedProcess, uniquePrefix, type MemcachedProcess } from './helpers/memcached.js';

const RATE = 100;
const BURST = 20;
/** How far apart the instances' clocks may be (docs/operations.md, "Clocks"). */
const AGREEMENT_MS = 20;

let memcached: MemcachedProcess;
const stores: CounterStore[] = [];
beforeAll(async () => {
  memcached = await startMemcachedProcess();
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  await memcached.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Freezes the server across at least one of its timer's firings: its second turns late ever after. */
async function shiftTurns(): Promise<void> {
  await memcached.pause();
  await sleep(1100);
  memcached.resume();
}

async function instance(): Promise<CounterStore> {
  const store = createMemcachedStore({ servers: memcached.servers });
  stores.push(store);
  await store.clock?.ready();
  return store;
}

describe('two instances that first read the server on either side of a shift of its turns', () => {
  let first: CounterStore;
  let second: CounterStore;
  beforeAll(async () => {
    first = await instance();
    await sleep(4000); // the first watches turns until its clock is the one others take
    await shiftTurns();
    await sleep(300);
    second = await instance();
  }, 30_000);

  it('give the same time within the stated bound, through another shift', { timeout: 30_000 }, async () => {
    let widest = 0;
    const started = performance.now();
    let shifted = false;
    while (performance.now() - started < 6000) {
      if (!shifted && performance.now() - started > 2000) {
        shifted = true;
        await shiftTurns();
        await sleep(100); // the turn after the freeze is watched by both before it counts
      }
      const apart = Math.abs((first.clock?.now('k') ?? 0) - (second.clock?.now('k') ?? 0));
      widest = Math.max(widest, apart);
      await sleep(37);
    }
    expect(widest).toBeLessThanOrEqual(AGREEMENT_MS);
  });

  it(
    'admit, through one token bucket, at most burst + rate × elapsed + 1 in any span',
    { timeout: 30_000 },
    async () => {
      const policies = parsePolicies({
        events: { api: { algorithm: 'token-bucket', limits: [{ rate: `${RATE}/s`, burst: BURST }] } },
      });
      const keyPrefix = uniquePrefix();
      const [a, b] = [first, second].map((store) => createLimiter({ policies, store, keyPrefix })) as [
        Limiter,
        Limiter,
      ];
      const admitted: { sent: number; received: number }[] = [];
      /** Checks through one instance for a while, as fast as it answers. */
      const hammer = async (limiter: Limiter, ms: number) => {
        const until = performance.now() + ms;
        while (performance.now() < until) {
          const sent = performance.now();
          const decision = await limiter.check({ event: 'api', feature: 'one-client' });
          expect(decision.degraded).toBeUndefined();
          if (decision.allowed) admitted.push({ sent, received: performance.now() });
        }
      };
      // From a full bucket, drained through one instance, then asked through the other: an
      // instance whose clock is ahead finds tokens the other has not yet refilled.
      for (const [drains, asks] of [
        [a, b],
        [b, a],
      ] as const) {
        await sleep((BURST / RATE) * 1000 * 2); // full again
        await hammer(drains, 400);
        await hammer(asks, 400);
      }
      admitted.sort((x, y) => x.sent - y.sent);
      let worst = -Infinity;
      for (let i = 0; i < admitted.length; i++)
        for (let j = i; j < admitted.length; j++) {
          // The most time that can have passed between the two decisions.
          const elapsedS =
            ((admitted[j] as { received: number }).received - (admitted[i] as { sent: number }).sent) / 1000;
          worst = Math.max(worst, j - i + 1 - (BURST + RATE * elapsedS));
        }
      expect(admitted.length).toBeGreaterThan(RATE * 1.5); // the bucket was kept busy, not starved
      expect(worst).toBeLessThanOrEqual(1);
    },
  );
});

describe('two instances that start together on a fresh server, through its restart', () => {
  it('agree from the start, and keep their time across the restart (no jump)', { timeout: 40_000 }, async () => {
    const fresh = await startMemcachedProcess();
    const port = fresh.port;
    const open = () => {
      const store = createMemcachedStore({ servers: fresh.servers });
      stores.push(store);
      return store;
    };
    const [a, b] = [open(), open()];
    await Promise.all([a.clock?.ready(), b.clock?.ready()]);
    const apart = () => Math.abs((a.clock?.now('k') ?? 0) - (b.clock?.now('k') ?? 0));
    await sleep(1500);
    expect(apart()).toBeLessThanOrEqual(AGREEMENT_MS);
    // Time as the instances give it, against this process's monotonic clock, before and after.
    const drift = () => (a.clock?.now('k') ?? 0) - performance.now();
    const before = drift();
    await fresh.stop();
    const restarted = await startMemcachedProcess({ port });
    try {
      await sleep(4000); // reconnected, and a few turns of the new server watched
      expect(apart()).toBeLessThanOrEqual(AGREEMENT_MS);
      expect(Math.abs(drift() - before)).toBeLessThanOrEqual(AGREEMENT_MS);
    } finally {
      await restarted.stop();
    }
  });
});
