// Calendar windows counted in a real Memcached by two memgate instances on a driven clock: a
// month anchored on the 15th in Europe/Berlin resets at 00:00 local on the 15th, before and
// after the change to summer time, with resetSeconds and retryAfter exact to that midnight.
import { afterAll, describe, expect, it } from 'vitest';
import { parsePolicies } from '../src/config/policies.js';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached();
const stores: CounterStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

/** Two instances on one prefix, both reading the driven clock. */
function twoInstances(policies: object, clock: { ms: number }): [Limiter, Limiter] {
  const keyPrefix = uniquePrefix();
  const make = () => {
    const store = createMemcachedStore({ servers: memcached().servers });
    stores.push(store);
    return createLimiter({ policies: parsePolicies(policies), store, keyPrefix, now: () => clock.ms });
  };
  return [make(), make()];
}

const LIMIT = 6;
const policies = {
  events: {
    quota: {
      algorithm: 'fixed',
      limits: [{ limit: LIMIT, window: '1mo', anchor: 15, timezone: 'Europe/Berlin' }],
    },
  },
};

/** Checks `count` times, alternating instances; how many were admitted. */
async function admitted(instances: readonly Limiter[], count: number, feature: string): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < count; i++) {
    const decision = await (instances[i % instances.length] as Limiter).check({ event: 'quota', feature });
    if (decision.allowed) allowed++;
  }
  return allowed;
}

describe('a month anchored on the 15th in Europe/Berlin, on two instances', () => {
  it('resets at 00:00 local on the 15th, in winter time and in summer time', async () => {
    // 23:59:50 CET on 14 March 2026: ten seconds before the month turns.
    const clock = { ms: Date.parse('2026-03-14T22:59:50Z') };
    const instances = twoInstances(policies, clock);
    const [a, b] = instances;
    expect(await admitted(instances, LIMIT + 4, 'tenant-1')).toBe(LIMIT);
    const refused = await b.check({ event: 'quota', feature: 'tenant-1' });
    expect(refused).toMatchObject({ allowed: false, retryAfter: 10 });
    expect(refused.limits[0]).toMatchObject({ name: 'quota-1mo', remaining: 0, resetSeconds: 10 });

    // 00:00:00 CET on the 15th: a new month for both instances.
    clock.ms = Date.parse('2026-03-14T23:00:00Z');
    const fresh = await a.check({ event: 'quota', feature: 'tenant-1' });
    expect(fresh.allowed).toBe(true);
    // The month runs to 00:00 CEST on 15 April, 22:00Z: 31 days less the hour summer time took.
    const end = Date.parse('2026-04-14T22:00:00Z');
    expect(fresh.limits[0]?.resetSeconds).toBe((end - clock.ms) / 1000);
    expect(await admitted(instances, LIMIT + 3, 'tenant-1')).toBe(LIMIT - 1);

    // After the change to summer time (29 March), one second before the month turns: still refused.
    clock.ms = end - 1000;
    const last = await b.check({ event: 'quota', feature: 'tenant-1' });
    expect(last).toMatchObject({ allowed: false, retryAfter: 1 });
    clock.ms = end - 1;
    expect((await a.check({ event: 'quota', feature: 'tenant-1' })).allowed).toBe(false);
    // 00:00:00 CEST on 15 April: the next month.
    clock.ms = end;
    expect(await admitted(instances, LIMIT + 2, 'tenant-1')).toBe(LIMIT);
    // Another tenant was never counted.
    expect(await admitted(instances, 1, 'tenant-2')).toBe(1);
  });

  it('keeps a UTC day on the epoch-aligned counters, and days of 23 and 25 hours in Berlin', async () => {
    const clock = { ms: Date.parse('2026-10-24T22:30:00Z') }; // 00:30 CEST on Sunday 25 October
    const [a, b] = twoInstances(
      {
        events: {
          daily: {
            algorithm: 'fixed',
            limits: [
              { name: 'berlin', limit: 100, window: '1d', timezone: 'Europe/Berlin' },
              { name: 'utc', limit: 100, window: '1d' },
            ],
          },
        },
      },
      clock,
    );
    const decision = await a.check({ event: 'daily', feature: 'x' });
    // The Berlin day of the change back to winter time lasts 25 hours: it ends at 23:00Z on the 25th.
    const berlin = decision.limits.find((limit) => limit.name === 'berlin');
    const utc = decision.limits.find((limit) => limit.name === 'utc');
    expect(berlin?.resetSeconds).toBe((Date.parse('2026-10-25T23:00:00Z') - clock.ms) / 1000);
    expect(utc?.resetSeconds).toBe((Date.parse('2026-10-25T00:00:00Z') - clock.ms) / 1000);
    // Past UTC midnight, the UTC day is new; the Berlin day still holds the first check.
    clock.ms = Date.parse('2026-10-25T01:00:00Z');
    const later = await b.check({ event: 'daily', feature: 'x' });
    expect(later.limits.map((limit) => [limit.name, limit.remaining])).toEqual([
      ['berlin', 98],
      ['utc', 99],
    ]);
  });
});
