// Limits made while serving (Envoy's per-request limit) on a configured event's counters: they
// count in the event's bucket sizes for as long as its own windows read them.
import { describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../store/embedded-store.js';
import { createLimiter } from './limiter.js';
import { MAX_KEYS_PER_CHECK } from './plan.js';
import { RuntimePlans, type RuntimeLimit } from './runtime-plans.js';

const T0 = Date.UTC(2026, 10, 26, 12, 0, 0);

describe('a limit made while serving', () => {
  it("keeps the configured event's counters alive: requests with and without it share one window", async () => {
    const clock = { ms: T0 };
    const now = () => clock.ms;
    const limiter = createLimiter({
      policies: { events: { api: { limits: [{ limit: 100, window: '1m' }] } } },
      store: createEmbeddedStore({ now }),
      now,
    });
    const perSecond: RuntimeLimit = {
      name: 'o',
      limit: 1000,
      window: 1,
      algorithm: 'sliding',
      granularity: 1,
      onStoreError: 'allow',
    };
    let plain = 0;
    for (let second = 0; second < 50; second++) {
      clock.ms = T0 + second * 1000;
      // The first request of each second carries the override: it makes the second's keys.
      expect((await limiter.checkTogether([{ event: 'api', feature: 'f', limit: perSecond }])).allowed).toBe(true);
      for (let i = 0; i < 5; i++) if ((await limiter.check({ event: 'api', feature: 'f' })).allowed) plain++;
    }
    // 6 counted a second: full after 16 s and 4 requests of the 17th (1 override, 3 plain).
    expect(plain).toBe(16 * 5 + 3);
  });

  it('counts a sliding window that would read too many keys as fixed windows', () => {
    const year: RuntimeLimit = {
      name: 'y',
      limit: 2,
      window: 365 * 86_400,
      algorithm: 'sliding',
      granularity: 1,
      onStoreError: 'allow',
    };
    const plan = new RuntimePlans().planFor('api', year);
    expect(plan.algorithm).toBe('fixed');
    expect(plan.limits[0]?.keysPerCheck.max).toBeLessThanOrEqual(MAX_KEYS_PER_CHECK);
    const day = new RuntimePlans().planFor('api', { ...year, window: 86_400 });
    expect([day.algorithm, day.limits[0]?.keysPerCheck.max]).toEqual(['sliding', 142]);
  });
});
