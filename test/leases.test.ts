// Quota leases and refunds against a real Memcached, two instances sharing it on a driven
// clock: a lease never admits beyond the limit, its unspent units come back to every
// instance once returned, and its spent ones count from the return on.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { LimiterInputError } from '../src/counting/errors.js';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const LIMIT = 20;
const LIFE = 5;
const MAX_UNITS = 10;
const policies = {
  events: {
    api: { limits: [{ limit: LIMIT, window: '1m' }], lease: { maxUnits: MAX_UNITS, life: `${LIFE}s` } },
    plain: { limits: [{ limit: LIMIT, window: '1m' }] },
  },
};
const HOLD = LIFE + DEFAULTS.leaseReturnGraceSeconds;

const memcached = useMemcached();
let store: CounterStore;
beforeAll(() => {
  store = createMemcachedStore({ servers: memcached().servers, timeoutMs: 5000 });
});
afterAll(async () => {
  await store.close();
});

/** Two instances sharing one Memcached and one driven clock, in whole seconds. */
function twoInstances(startSecond = 1_900_000_000) {
  const clock = { second: startSecond };
  const keyPrefix = uniquePrefix();
  const make = () => createLimiter({ policies, store, keyPrefix, now: () => clock.second * 1000 + 500 });
  return { clock, keyPrefix, a: make(), b: make() };
}

const code = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return 'no error';
  } catch (error) {
    return error instanceof LimiterInputError ? error.code : String(error);
  }
};

let features = 0;
const feature = () => `lease-client-${String(++features)}`;

describe('quota leases', () => {
  it('count at most what was asked, what remains and maxUnits, before a unit is spent', async () => {
    const { a, b } = twoInstances();
    const who = feature();
    const first = await a.lease({ event: 'api', feature: who, units: 50 });
    expect(first.lease?.units).toBe(MAX_UNITS);
    expect(first.limits[0]?.remaining).toBe(LIMIT - MAX_UNITS);
    // The other instance sees the units at once.
    expect((await b.peek({ event: 'api', feature: who })).limits[0]?.remaining).toBe(LIMIT - MAX_UNITS);
    for (let i = 0; i < 7; i++) expect((await b.check({ event: 'api', feature: who })).allowed).toBe(true);
    const second = await a.lease({ event: 'api', feature: who, units: 10 });
    expect(second.lease?.units).toBe(3);
    const third = await a.lease({ event: 'api', feature: who, units: 1 });
    expect(third.allowed).toBe(false);
    expect(third.lease).toBeUndefined();
    // A denial on an event with leases asks again within a lease's hold: one may come back.
    expect(third.retryAfter).toBeLessThanOrEqual(HOLD);
    expect(third.retryAfter).toBeGreaterThan(0);
  });

  it('give unspent units back to every instance, even one that keeps settled counts', async () => {
    // Taken 2 s before a minute ends: the window covers its second in 1 s buckets, which b keeps once settled.
    const { clock, a, b } = twoInstances(1_900_000_020 + 58);
    const who = feature();
    for (let i = 0; i < LIMIT - MAX_UNITS; i++) await b.check({ event: 'api', feature: who });
    const lease = (await a.lease({ event: 'api', feature: who, units: MAX_UNITS })).lease;
    if (!lease) throw new Error('no lease');
    // b checks every second of the lease's life: it keeps what it may of the window in memory.
    for (let s = 1; s <= LIFE; s++) {
      clock.second++;
      expect((await b.check({ event: 'api', feature: who })).allowed).toBe(false);
    }
    expect(await a.returnLease({ event: 'api', feature: who, id: lease.id, unused: 8 })).toEqual({
      returned: 8,
      spent: 2,
    });
    // b admits the 8 returned units once its last denial, repeated from memory for at most a second, is over.
    clock.second++;
    const after = [];
    for (let i = 0; i < 10; i++) after.push((await b.check({ event: 'api', feature: who })).allowed);
    expect(after.filter(Boolean)).toHaveLength(8);
  });

  it('count spent units at the second of the return, so no window loses them early', async () => {
    const { clock, a, b } = twoInstances();
    const who = feature();
    const taken = clock.second;
    const lease = (await a.lease({ event: 'api', feature: who, units: MAX_UNITS })).lease;
    if (!lease) throw new Error('no lease');
    clock.second += LIFE;
    await a.returnLease({ event: 'api', feature: who, id: lease.id, unused: 0 });
    // A minute after the lease was taken, the spent units were spent within the last minute: still counted.
    clock.second = taken + 60;
    expect((await b.peek({ event: 'api', feature: who })).limits[0]?.remaining).toBe(LIMIT - MAX_UNITS);
    // A minute after the return, they have left.
    clock.second = taken + LIFE + 60;
    expect((await b.peek({ event: 'api', feature: who })).limits[0]?.remaining).toBe(LIMIT);
  });

  it('are returned once, in time, by their holder, and a faulty return leaves the units counted', async () => {
    const { clock, a } = twoInstances();
    const who = feature();
    const take = async () => {
      const lease = (await a.lease({ event: 'api', feature: who, units: 4 })).lease;
      if (!lease) throw new Error('no lease');
      return lease.id;
    };
    const id = await take();
    expect(await code(a.returnLease({ event: 'api', feature: feature(), id, unused: 4 }))).toBe('unknown_lease');
    expect(await code(a.returnLease({ event: 'api', feature: who, id: 'made-up', unused: 4 }))).toBe('unknown_lease');
    expect(await code(a.returnLease({ event: 'api', feature: who, id, unused: 5 }))).toBe('invalid_cost');
    // The faulty return used the lease up: its 4 units stay counted.
    expect(await code(a.returnLease({ event: 'api', feature: who, id, unused: 4 }))).toBe('lease_returned');
    const late = await take();
    clock.second += HOLD + 1;
    expect(await code(a.returnLease({ event: 'api', feature: who, id: late, unused: 4 }))).toBe('lease_expired');
    expect((await a.peek({ event: 'api', feature: who })).limits[0]?.remaining).toBe(LIMIT - 8);
    expect(await code(a.lease({ event: 'plain', feature: who, units: 4 }))).toBe('lease_off');
    expect(await code(a.lease({ event: 'api', feature: who, units: 0 }))).toBe('invalid_cost');
  });

  it('are not taken back by policies that count in other buckets (a reload between lease and return)', async () => {
    const { clock, keyPrefix, a } = twoInstances();
    const who = feature();
    const lease = (await a.lease({ event: 'api', feature: who, units: 5 })).lease;
    if (!lease) throw new Error('no lease');
    // The same event reloaded with an hour window: its buckets are hours, minutes and seconds.
    const reloaded = createLimiter({
      policies: { events: { api: { limits: [{ limit: LIMIT, window: '1h' }], lease: { life: `${LIFE}s` } } } },
      store,
      keyPrefix,
      now: () => clock.second * 1000 + 500,
    });
    expect(await code(reloaded.returnLease({ event: 'api', feature: who, id: lease.id, unused: 5 }))).toBe(
      'unknown_lease',
    );
    expect((await a.peek({ event: 'api', feature: who })).limits[0]?.remaining).toBe(LIMIT - 5);
  });

  it('never admit more than the limit in any minute, whatever leases, checks and returns interleave (fast-check)', async () => {
    type Step =
      | { kind: 'check'; on: 0 | 1; times: number }
      | { kind: 'lease'; on: 0 | 1; units: number }
      | { kind: 'spend'; lease: number; units: number }
      | { kind: 'return'; lease: number }
      | { kind: 'tick'; seconds: number };
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('check' as const),
        on: fc.constantFrom(0 as const, 1 as const),
        times: fc.integer({ min: 1, max: 25 }),
      }),
      fc.record({
        kind: fc.constant('lease' as const),
        on: fc.constantFrom(0 as const, 1 as const),
        units: fc.integer({ min: 1, max: 12 }),
      }),
      fc.record({ kind: fc.constant('spend' as const), lease: fc.nat(), units: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('return' as const), lease: fc.nat() }),
      fc.record({ kind: fc.constant('tick' as const), seconds: fc.integer({ min: 1, max: 25 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 60 }), async (steps: Step[]) => {
        const { clock, a, b } = twoInstances();
        const instances: Limiter[] = [a, b];
        const who = feature();
        const leases: { id: string; on: Limiter; units: number; spent: number; taken: number; open: boolean }[] = [];
        // Every admitted request, by the second it ran at.
        const admitted: number[] = [];
        const giveBack = async (lease: (typeof leases)[number]) => {
          lease.open = false;
          const unused = lease.units - lease.spent;
          // A return too late is refused, and its units stay counted.
          await lease.on.returnLease({ event: 'api', feature: who, id: lease.id, unused }).catch((error: unknown) => {
            if (!(error instanceof LimiterInputError && error.code === 'lease_expired')) throw error;
          });
        };
        for (const s of steps) {
          // A client returns its leases when their life ends.
          for (const lease of leases) if (lease.open && clock.second >= lease.taken + LIFE) await giveBack(lease);
          if (s.kind === 'tick') clock.second += s.seconds;
          else if (s.kind === 'check') {
            for (let i = 0; i < s.times; i++)
              if ((await instances[s.on]?.check({ event: 'api', feature: who }))?.allowed) admitted.push(clock.second);
          } else if (s.kind === 'lease') {
            const on = instances[s.on] as Limiter;
            const granted = (await on.lease({ event: 'api', feature: who, units: s.units })).lease;
            if (granted)
              leases.push({ id: granted.id, on, units: granted.units, spent: 0, taken: clock.second, open: true });
          } else {
            const lease = leases[s.lease % Math.max(1, leases.length)];
            // Spent only within its life.
            if (!lease?.open || clock.second >= lease.taken + LIFE) continue;
            if (s.kind === 'return') await giveBack(lease);
            else {
              const units = Math.min(s.units, lease.units - lease.spent);
              lease.spent += units;
              for (let i = 0; i < units; i++) admitted.push(clock.second);
            }
          }
        }
        // Every minute-long window: what really ran in it is within the limit.
        for (const start of new Set(admitted)) {
          const inWindow = admitted.filter((t) => t >= start && t < start + 60).length;
          expect(inWindow, `requests in [${start}, ${start + 60})`).toBeLessThanOrEqual(LIMIT);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('refunds', () => {
  it('take back what a check counted at that moment, and nothing once it has left every window', async () => {
    const { clock, a, b } = twoInstances();
    const who = feature();
    const at = clock.second * 1000 + 500;
    await a.check({ event: 'plain', feature: who, cost: 3 });
    clock.second += 10;
    expect(await b.refund({ event: 'plain', feature: who, cost: 3, at })).toBe(true);
    expect((await a.peek({ event: 'plain', feature: who })).limits[0]?.remaining).toBe(LIMIT);
    clock.second += 60;
    expect(await b.refund({ event: 'plain', feature: who, cost: 3, at })).toBe(false);
    expect(await code(b.refund({ event: 'plain', feature: who, cost: 3, at: (clock.second + 60) * 1000 }))).toBe(
      'invalid_time',
    );
  });

  it.each([
    ['a second before memgate counted it', 1_900_000_020, -1],
    ['a second after', 1_900_000_019, 1],
  ])('take back a check the caller timed %s, across a minute', async (_when, startSecond, off) => {
    // 1_900_000_020 begins a minute: the second before is in another minute's buckets.
    const { clock, a, b } = twoInstances(startSecond);
    const who = feature();
    const counted = clock.second;
    await a.check({ event: 'plain', feature: who, cost: 3 });
    clock.second += 5;
    // The caller's clock, read at the edge of the second before (or after) memgate's.
    const at = (counted + off) * 1000 + (off < 0 ? 999 : 1);
    expect(await b.refund({ event: 'plain', feature: who, cost: 3, at })).toBe(true);
    expect((await a.peek({ event: 'plain', feature: who })).limits[0]?.remaining).toBe(LIMIT);
  });
});
