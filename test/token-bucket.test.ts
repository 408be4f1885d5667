// Token buckets (GCRA) counted in a real Memcached by two memgate instances at once, against a
// reference GCRA (the virtual scheduling algorithm of ITU-T I.371, written here apart from
// memgate's) on generated arrivals: the same requests admitted at every instant.
import fc from 'fast-check';
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

const RATE_PER_SECOND = 10;
const BURST = 50;
const policies = {
  events: {
    api: { algorithm: 'token-bucket', limits: [{ rate: `${RATE_PER_SECOND}/s`, burst: BURST }] },
    llm: { algorithm: 'token-bucket', reservations: { life: '1m' }, limits: [{ rate: '100/s', burst: 1000 }] },
  },
};

/** Swaps another instance won first, over the whole file: the instances did race. */
let swapsLost = 0;

/** Two instances on one prefix, on the driven clock, or with none on Memcached's own (fractions of a millisecond). */
function twoInstances(clock?: { ms: number }): [Limiter, Limiter] {
  const keyPrefix = uniquePrefix();
  const make = () => {
    const memcachedStore = createMemcachedStore({ servers: memcached().servers });
    stores.push(memcachedStore);
    const store: CounterStore = {
      ...memcachedStore,
      incrementAndRead: (...args) => memcachedStore.incrementAndRead(...args),
      readVersioned: (key) => memcachedStore.readVersioned(key),
      swap: async (...args) => {
        const stored = await memcachedStore.swap(...args);
        if (!stored) swapsLost++;
        return stored;
      },
    };
    return createLimiter({
      policies: parsePolicies(policies),
      store,
      keyPrefix,
      ...(clock ? { now: () => clock.ms } : {}),
    });
  };
  return [make(), make()];
}

/** Virtual scheduling: a cell at t conforms unless TAT > t + τ, τ = (burst − 1)·T; then TAT = max(TAT, t) + T. */
class ReferenceGcra {
  private tat = -Infinity;
  constructor(
    private readonly emissionMs: number,
    private readonly burst: number,
  ) {}
  offer(t: number): boolean {
    const tat = Math.max(this.tat, t);
    if (tat > t + (this.burst - 1) * this.emissionMs) return false;
    this.tat = tat + this.emissionMs;
    return true;
  }
  /** Milliseconds from t until a cell would conform. */
  waitFrom(t: number): number {
    return Math.max(0, Math.max(this.tat, t) - (t + (this.burst - 1) * this.emissionMs));
  }
}

describe('a token bucket of 10/s, burst 50, on two instances', () => {
  it('admits exactly what a reference GCRA admits for the same arrival times (20 runs)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 700 }), requests: fc.integer({ min: 1, max: 14 }) }), {
          minLength: 10,
          maxLength: 40,
        }),
        async (arrivals) => {
          const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
          const instances = twoInstances(clock);
          const reference = new ReferenceGcra(1000 / RATE_PER_SECOND, BURST);
          for (const { gapMs, requests } of arrivals) {
            clock.ms += gapMs;
            // Every request of an instant at once, from both instances: they race for the bucket.
            const decisions = await Promise.all(
              Array.from({ length: requests }, (_, i) =>
                (instances[i % 2] as Limiter).check({ event: 'api', feature: 'client' }),
              ),
            );
            const admitted = decisions.filter((decision) => decision.allowed).length;
            let expected = 0;
            for (let i = 0; i < requests; i++) if (reference.offer(clock.ms)) expected++;
            expect(admitted, `at +${clock.ms % 100_000} ms`).toBe(expected);
            expect(decisions.some((decision) => decision.degraded)).toBe(false);
            const refused = decisions.find((decision) => !decision.allowed);
            // retryAfter: to the millisecond, rounded up to the second.
            if (refused) expect(refused.retryAfter).toBe(Math.max(1, Math.ceil(reference.waitFrom(clock.ms) / 1000)));
          }
        },
      ),
      { numRuns: 20 },
    );
    expect(swapsLost).toBeGreaterThan(0);
  });

  it('tells a burst what remains, when it is full again, and when to retry', async () => {
    const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
    const [a, b] = twoInstances(clock);
    const first = await a.check({ event: 'api', feature: 'x', cost: 20 });
    expect(first).toMatchObject({
      allowed: true,
      limits: [{ name: 'api-10per1s', limit: 50, window: 5, remaining: 30, resetSeconds: 2 }],
    });
    expect((await b.check({ event: 'api', feature: 'x', cost: 30 })).allowed).toBe(true);
    const refused = await a.check({ event: 'api', feature: 'x', cost: 5 });
    // Five tokens come back in 500 ms: retry after 1 s.
    expect(refused).toMatchObject({ allowed: false, retryAfter: 1, limits: [{ remaining: 0, resetSeconds: 5 }] });
    clock.ms += 499;
    expect((await b.check({ event: 'api', feature: 'x', cost: 5 })).allowed).toBe(false);
    clock.ms += 1;
    expect((await b.check({ event: 'api', feature: 'x', cost: 5 })).allowed).toBe(true);
    // A peek counts nothing.
    clock.ms += 100;
    const peeked = await a.peek({ event: 'api', feature: 'x' });
    expect(peeked).toMatchObject({ allowed: true, limits: [{ remaining: 1 }] });
    expect((await a.peek({ event: 'api', feature: 'x' })).limits[0]?.remaining).toBe(1);
  });

  it('refuses a cost beyond the burst, and forgets a client on reset', async () => {
    const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
    const [a, b] = twoInstances(clock);
    await expect(a.check({ event: 'api', feature: 'y', cost: 51 })).rejects.toMatchObject({
      code: 'cost_exceeds_limit',
    });
    expect((await a.check({ event: 'api', feature: 'y', cost: 50 })).allowed).toBe(true);
    expect((await b.check({ event: 'api', feature: 'y' })).allowed).toBe(false);
    await b.reset({ event: 'api', feature: 'y' });
    expect((await a.check({ event: 'api', feature: 'y', cost: 50 })).allowed).toBe(true);
    // A refund gives tokens back at once.
    expect(await a.refund({ event: 'api', feature: 'y', cost: 10, at: clock.ms })).toBe(true);
    expect((await b.check({ event: 'api', feature: 'y', cost: 10 })).allowed).toBe(true);
    expect((await b.check({ event: 'api', feature: 'y' })).allowed).toBe(false);
  });
});

describe('a token bucket over HTTP', () => {
  it('answers /check with RateLimit headers, and refuses a lease, which only counted windows take', async () => {
    const { buildApp } = await import('../src/http/app.js');
    // Memcached's clock, as a service runs: once read, it counts in fractions of a millisecond.
    const [limiter] = twoInstances();
    await stores[stores.length - 2]?.clock?.ready();
    const app = buildApp({
      validateResponses: true,
      limiter,
      store: stores[stores.length - 2] as CounterStore,
      maxEventLoopDelayMs: 0,
    });
    await app.ready();
    try {
      const first = await app.inject({ method: 'GET', url: '/check?event=api&feature=h&cost=48' });
      expect(first.statusCode).toBe(200);
      // q is the burst, w how long an empty bucket takes to fill; t when it is full again.
      expect(first.headers['ratelimit-policy']).toBe('"api-10per1s";q=50;w=5');
      expect(first.headers.ratelimit).toBe('"api-10per1s";r=2;t=5');
      // 10 asked of 2 left: refused until 800 ms have passed (a token every 100 ms), however slow the host.
      const refused = await app.inject({ method: 'GET', url: '/check?event=api&feature=h&cost=10' });
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      const lease = await app.inject({
        method: 'POST',
        url: '/lease',
        payload: { event: 'api', feature: 'h', units: 2 },
      });
      expect(lease.statusCode).toBe(400);
      expect(lease.json()).toMatchObject({ error: { code: 'lease_off' } });
    } finally {
      await app.close();
    }
  });

  it('is decided with other checks as one request: all of it taken, or none', async () => {
    // A driven clock: on the real one a token comes back every 100 ms, and a host that slow between
    // the two calls would give the full bucket the third token that the refusal below needs it to lack.
    const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
    const [limiter] = twoInstances(clock);
    expect((await limiter.check({ event: 'api', feature: 'full', cost: 48 })).allowed).toBe(true);
    // The second bucket has 2 tokens: the request is refused, and takes nothing from the first.
    const refused = await limiter.checkTogether([
      { event: 'api', feature: 'fresh' },
      { event: 'api', feature: 'full', cost: 3 },
    ]);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
    expect((await limiter.peek({ event: 'api', feature: 'fresh' })).limits[0]?.remaining).toBe(BURST);
    const both = await limiter.checkTogether([
      { event: 'api', feature: 'fresh' },
      { event: 'api', feature: 'other' },
    ]);
    expect(both.allowed).toBe(true);
    expect(both.checks.map((check) => check.limits[0]?.remaining)).toEqual([BURST - 1, BURST - 1]);
  });
});

describe('a token bucket with reservations', () => {
  it('takes what is reserved, then moves the bucket by what the settle says it cost', async () => {
    const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
    const [a, b] = twoInstances(clock);
    const reserved = await a.check({ event: 'llm', feature: 'x', reserve: 800 });
    expect(reserved).toMatchObject({
      allowed: true,
      limits: [{ remaining: 200 }],
      reservation: { units: 800, seconds: 60 },
    });
    expect((await b.check({ event: 'llm', feature: 'x', reserve: 300 })).allowed).toBe(false);
    // It cost 100: 700 tokens come back at once, on every instance.
    expect(await b.settle({ event: 'llm', feature: 'x', id: reserved.reservation?.id ?? '', cost: 100 })).toEqual({
      reserved: 800,
      cost: 100,
      counted: -700,
    });
    expect((await a.peek({ event: 'llm', feature: 'x' })).limits[0]?.remaining).toBe(900);
    // Another cost 1,500, more than the bucket holds: the client waits until it refills.
    const big = await b.check({ event: 'llm', feature: 'x', reserve: 500 });
    await a.settle({ event: 'llm', feature: 'x', id: big.reservation?.id ?? '', cost: 1500 });
    const refused = await b.check({ event: 'llm', feature: 'x' });
    // 100 + 1,500 taken of 1,000: 600 over, plus the one asked, at 100 a second: 6.01 s, so 7.
    expect(refused).toMatchObject({ allowed: false, retryAfter: 7 });
    await expect(
      a.settle({ event: 'llm', feature: 'x', id: big.reservation?.id ?? '', cost: 1 }),
    ).rejects.toMatchObject({
      code: 'reservation_settled',
    });
  });

  it('refuses a bad settle before it claims the reservation, and gives the claim back when the bucket cannot move', async () => {
    const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
    const keyPrefix = uniquePrefix();
    const memcachedStore = createMemcachedStore({ servers: memcached().servers });
    stores.push(memcachedStore);
    let swapsFail = false;
    // Other instances winning every round: each swap lost.
    const store: CounterStore = {
      ...memcachedStore,
      incrementAndRead: (...args) => memcachedStore.incrementAndRead(...args),
      decrement: (...args) => memcachedStore.decrement(...args),
      readVersioned: (key) => memcachedStore.readVersioned(key),
      swap: async (...args) => (swapsFail ? false : memcachedStore.swap(...args)),
    };
    const limiter = createLimiter({ policies: parsePolicies(policies), store, keyPrefix, now: () => clock.ms });
    const reserved = await limiter.check({ event: 'llm', feature: 'y', reserve: 100 });
    const id = reserved.reservation?.id ?? '';
    await expect(limiter.settle({ event: 'llm', feature: 'y', id, cost: 5, tier: 'nosuch' })).rejects.toMatchObject({
      code: 'unknown_tier',
    });
    await expect(limiter.settle({ event: 'llm', feature: 'y', id, cost: 2e12 })).rejects.toMatchObject({
      code: 'invalid_cost',
    });
    swapsFail = true;
    await expect(limiter.settle({ event: 'llm', feature: 'y', id, cost: 900 })).rejects.toThrow(/rounds lost/);
    swapsFail = false;
    // Not settled yet: sent again, it counts.
    expect(await limiter.settle({ event: 'llm', feature: 'y', id, cost: 900 })).toMatchObject({ counted: 800 });
    expect((await limiter.peek({ event: 'llm', feature: 'y' })).limits[0]?.remaining).toBe(100);
    // A cost far past the burst overdraws the bucket, within what Memcached can keep: no 5xx.
    const again = await limiter.check({ event: 'llm', feature: 'y', reserve: 50 });
    await limiter.settle({ event: 'llm', feature: 'y', id: again.reservation?.id ?? '', cost: 900_000_000_000 });
    expect((await limiter.check({ event: 'llm', feature: 'y' })).allowed).toBe(false);
  });

  it('settles at the rate of the tier reserved under, whatever tier the settle names (issue 38)', async () => {
    const tiered = {
      events: {
        llm: {
          algorithm: 'token-bucket',
          reservations: { life: '1m' },
          limits: [{ rate: '1/s', burst: 2000 }],
          tiers: { pro: { limits: [{ rate: '100/s', burst: 2000 }] } },
        },
      },
    };
    const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
    const store = createMemcachedStore({ servers: memcached().servers });
    stores.push(store);
    const limiter = createLimiter({
      policies: parsePolicies(tiered),
      store,
      keyPrefix: uniquePrefix(),
      now: () => clock.ms,
    });
    // 1,000 pro tokens are 10 s; settled at 999 without the tier, 9.99 s stay taken (at the
    // event's own rate it would be 999 s).
    const reserved = await limiter.check({ event: 'llm', feature: 'z', reserve: 1000, tier: 'pro' });
    await limiter.settle({ event: 'llm', feature: 'z', id: reserved.reservation?.id ?? '', cost: 999 });
    const pro = await limiter.peek({ event: 'llm', feature: 'z', tier: 'pro' });
    expect(pro.limits[0]?.remaining).toBe(2000 - 999);
    const plain = await limiter.peek({ event: 'llm', feature: 'z' });
    expect(plain.limits[0]?.remaining).toBe(1990);
  });
});
