// Two memgate instances on one Memcached whose clocks disagree, with every optimization on
// (settled counts kept in memory, denials answered from memory, a skew allowance of 2 s).
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { parsePolicies } from '../src/config/policies.js';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached();
const stores: CounterStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

/** Instances sharing one key prefix; instance i reads the real clock plus offsetsMs[i]. */
function instances(policies: object, realMs: () => number, offsetsMs: readonly number[]): Limiter[] {
  const keyPrefix = uniquePrefix();
  return offsetsMs.map((offset) => {
    // A deadline far past the default 250 ms: a call late on a loaded host would be allowed as degraded,
    // and these tests judge counts, not deadlines.
    const store = createMemcachedStore({ servers: memcached().servers, timeoutMs: 5000 });
    stores.push(store);
    return createLimiter({ policies: parsePolicies(policies), store, keyPrefix, now: () => realMs() + offset });
  });
}

describe('a second instance whose clock is off by up to the allowed 2 s', () => {
  it.each([1500, -1500, 2000, -2000])(
    'never admits more than the limit from concurrent bursts across a minute boundary (offset %i ms)',
    async (offset) => {
      const policies = { events: { api: { limits: [{ limit: 50, window: '1m' }] } } };
      // Bursts 2.5 s before to 3.5 s after a minute starts: buckets settle, and minutes turn, between them.
      const minute = Math.floor(Date.now() / 60_000) * 60_000 + 60_000;
      const real = { ms: minute - 2500 };
      const [a, b] = instances(policies, () => real.ms, [0, offset]) as [Limiter, Limiter];
      const check = (i: number) => (i % 3 === 0 ? b : a).check({ event: 'api', feature: 'shared' });
      let admitted = 0;
      for (const at of [-2500, -1200, 300, 1100, 3500]) {
        real.ms = minute + at;
        const allowed = (await Promise.all(Array.from({ length: 16 }, (_, i) => check(i)))).filter(
          (decision) => decision.allowed,
        ).length;
        // Every earlier request is inside every instance's window. While all fit, all pass; once
        // they do not, checks in flight together may deny each other (each sees the other's
        // increment before it is taken back), but never admit past the limit.
        if (admitted + 16 <= 50) expect(allowed).toBe(16);
        else expect(allowed).toBeLessThanOrEqual(50 - admitted);
        admitted += allowed;
      }
      // One at a time, checks take exactly what is left.
      for (let i = 0; i < 4; i++) if ((await check(i)).allowed) admitted++;
      expect(admitted).toBe(50);
    },
  );

  /** Admitted requests (real second) per limit window length; sequential checks. */
  function windowCount(admitted: readonly number[], from: number, to: number): number {
    return admitted.filter((t) => t > from && t <= to).length;
  }

  it.each([0, 1000, -1000, 2000, -2000])(
    'decides between exact sliding logs of window − skew and window + skew (offset %i ms)',
    async (offset) => {
      const skew = Math.abs(offset) / 1000;
      const limits = [
        { limit: 4, window: 10 },
        { limit: 12, window: 60 },
      ];
      const policies = {
        events: { api: { limits: limits.map(({ limit, window }) => ({ limit, window: `${window}s` })) } },
      };
      const start = Math.floor(Date.now() / 1000);
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ gap: fc.nat(4), instance: fc.nat(1) }), { minLength: 50, maxLength: 150 }),
          async (requests) => {
            const real = { ms: start * 1000 };
            const limiters = instances(policies, () => real.ms, [0, offset]);
            const admitted: number[] = [];
            let t = start;
            for (const { gap, instance } of requests) {
              t += gap;
              real.ms = t * 1000;
              const decision = await (limiters[instance] as Limiter).check({ event: 'api', feature: 'client' });
              if (decision.allowed) {
                admitted.push(t);
                // Never more than the limit in any window shortened by the skew.
                for (const { limit, window } of limits)
                  expect(windowCount(admitted, t - window + skew, t)).toBeLessThanOrEqual(limit);
              } else {
                // Never denied unless a window lengthened by the skew is full.
                expect(
                  limits.some(({ limit, window }) => windowCount(admitted, t - window - skew, t) + 1 > limit),
                ).toBe(true);
              }
            }
          },
        ),
        { numRuns: 15 },
      );
    },
  );
});
