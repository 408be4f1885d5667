// What an instance keeps in memory between checks, measured by what reaches a real Memcached.
import { afterAll, describe, expect, it } from 'vitest';
import { createLimiter, type LimiterOptions } from '../src/counting/limiter.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { counterReads, counterWrites, uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached({ own: true });
const stores: CounterStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

// Under a minute, so the window counts in seconds only: 29 past seconds per check when nothing is kept, and the reset marker.
const policies = {
  events: { api: { limits: [{ limit: 1000, window: '30s' }] }, tight: { limits: [{ limit: 3, window: '30s' }] } },
};
const T0 = Math.floor(Date.now() / 1000) * 1000;

function limiterWith(options: Partial<LimiterOptions> = {}) {
  const clock = { ms: T0 };
  const store = createMemcachedStore({ servers: memcached().servers });
  stores.push(store);
  const limiter = createLimiter({ policies, store, keyPrefix: uniquePrefix(), now: () => clock.ms, ...options });
  return { limiter, clock };
}

/** Keys read, and counter writes (see counterWrites), by the server while `run` runs; this file's tests run one at a time. */
async function serverWork(run: () => Promise<unknown>): Promise<{ reads: number; writes: number }> {
  const { servers } = memcached();
  const [reads, writes] = [await counterReads(servers), await counterWrites(servers)];
  await run();
  return { reads: (await counterReads(servers)) - reads, writes: (await counterWrites(servers)) - writes };
}

describe('settled counts kept between checks', () => {
  it('reads a busy feature’s live buckets only, after its first check', async () => {
    const { limiter, clock } = limiterWith();
    const first = await serverWork(() => limiter.check({ event: 'api', feature: 'busy' }));
    // The reset marker, 29 past seconds and the 2 ahead that a clock 2 s fast may be counting in.
    expect(first.reads).toBe(32);
    const later = await serverWork(async () => {
      for (let i = 1; i <= 100; i++) {
        clock.ms = T0 + i * 100; // 10 seconds, 10 checks each
        await limiter.check({ event: 'api', feature: 'busy' });
      }
    });
    // The marker, 2 unsettled seconds behind, 2 ahead, and once per new second the one that just settled.
    expect(later.reads).toBe(100 * 5 + 10);
    expect((await limiter.peek({ event: 'api', feature: 'busy' })).limits[0]?.remaining).toBe(1000 - 101);
  });

  it('keeps nothing with cacheBytes 0', async () => {
    const { limiter, clock } = limiterWith({ cacheBytes: 0 });
    const work = await serverWork(async () => {
      for (let i = 0; i < 5; i++) {
        clock.ms = T0 + i * 100;
        await limiter.check({ event: 'api', feature: 'busy' });
      }
    });
    expect(work.reads).toBe(5 * 32);
  });

  it('forgets the least recently checked features, of any event, beyond its memory budget', async () => {
    const probe = limiterWith();
    await probe.limiter.check({ event: 'api', feature: 'a' });
    // A first check keeps the client's state and no whole window.
    const perFeature = probe.limiter.cacheUsage.bytes;
    expect(perFeature).toBeGreaterThan(500);
    expect(perFeature).toBeLessThan(2000);
    // Room for two: each client costs its plan's worst case plus its name (the two events' windows are alike).
    const { limiter } = limiterWith({ cacheBytes: 2 * perFeature + 100 });
    await limiter.check({ event: 'api', feature: 'a' });
    await limiter.check({ event: 'tight', feature: 'b' });
    await limiter.check({ event: 'api', feature: 'c' });
    expect(limiter.cacheUsage).toEqual({ features: 2, bytes: 2 * perFeature });
    expect((await serverWork(() => limiter.check({ event: 'api', feature: 'c' }))).reads).toBe(5);
    expect((await serverWork(() => limiter.check({ event: 'tight', feature: 'b' }))).reads).toBe(5);
    expect((await serverWork(() => limiter.check({ event: 'api', feature: 'a' }))).reads).toBe(32);
  });

  it('holds many features of many events within its budget, and the heap follows its estimate', async () => {
    const budget = 4 * 2 ** 20;
    const { limiter } = limiterWith({ cacheBytes: budget });
    // More clients than the budget holds: about 3,000 of these events' settled counts fit in it.
    for (let i = 0; i < 6000; i++) await limiter.check({ event: i % 2 ? 'api' : 'tight', feature: `client-${i}` });
    const { features, bytes } = limiter.cacheUsage;
    expect(bytes).toBeLessThanOrEqual(budget);
    expect(bytes).toBeGreaterThan(budget - 10_000);
    expect(features).toBeLessThan(6000);
    expect(features).toBeGreaterThan(500);
  });
});

describe('denials answered from memory', () => {
  async function exhaust(options: Partial<LimiterOptions> = {}) {
    const setup = limiterWith(options);
    for (let i = 0; i < 3; i++)
      expect((await setup.limiter.check({ event: 'tight', feature: 'eve' })).allowed).toBe(true);
    setup.clock.ms = T0 + 10_000;
    const denied = await setup.limiter.check({ event: 'tight', feature: 'eve' });
    expect(denied).toMatchObject({ allowed: false, retryAfter: 20 });
    return setup;
  }

  it('repeats a denial of the same cost without asking the store, counting its retryAfter down', async () => {
    const { limiter, clock } = await exhaust();
    const work = await serverWork(async () => {
      clock.ms = T0 + 10_400;
      const repeated = await limiter.check({ event: 'tight', feature: 'eve' });
      expect(repeated).toMatchObject({ allowed: false, retryAfter: 20, limits: [{ remaining: 0 }] });
      clock.ms = T0 + 10_999;
      expect(await limiter.peek({ event: 'tight', feature: 'eve' })).toMatchObject({ allowed: false, retryAfter: 20 });
    });
    expect(work).toEqual({ reads: 0, writes: 0 });
  });

  it('asks the store again after maxDenialCacheMs, and for another cost, reading before it counts while the denial holds', async () => {
    const { limiter, clock } = await exhaust({ maxDenialCacheMs: 500 });
    clock.ms = T0 + 10_400;
    // A larger cost cannot fit where a smaller one did not: it reads, and counts nothing.
    const larger = await serverWork(async () => {
      expect(await limiter.check({ event: 'tight', feature: 'eve', cost: 2 })).toMatchObject({ allowed: false });
    });
    expect(larger).toMatchObject({ writes: 0 });
    expect(larger.reads).toBeGreaterThan(0);
    clock.ms = T0 + 10_500;
    const expired = await serverWork(async () => {
      expect(await limiter.check({ event: 'tight', feature: 'eve' })).toMatchObject({ allowed: false, retryAfter: 20 });
    });
    expect(expired).toMatchObject({ writes: 0 });
    expect(expired.reads).toBeGreaterThan(0);
  });

  it('counts a smaller cost than the one denied, which may still fit', async () => {
    const { limiter } = limiterWith();
    for (let i = 0; i < 2; i++) expect((await limiter.check({ event: 'tight', feature: 'ann' })).allowed).toBe(true);
    expect((await limiter.check({ event: 'tight', feature: 'ann', cost: 2 })).allowed).toBe(false);
    const smaller = await serverWork(async () => {
      expect((await limiter.check({ event: 'tight', feature: 'ann', cost: 1 })).allowed).toBe(true);
    });
    expect(smaller.writes).toBeGreaterThan(0);
  });

  it('never repeats a denial past the second its retryAfter names', async () => {
    const { limiter, clock } = await exhaust({ maxDenialCacheMs: 60_000 });
    clock.ms = T0 + 29_999;
    expect((await limiter.check({ event: 'tight', feature: 'eve' })).allowed).toBe(false);
    clock.ms = T0 + 30_000;
    expect((await limiter.check({ event: 'tight', feature: 'eve' })).allowed).toBe(true);
  });

  it('asks the store every time with maxDenialCacheMs 0, reading only while the denial holds', async () => {
    const { limiter, clock } = await exhaust({ maxDenialCacheMs: 0 });
    clock.ms = T0 + 10_400;
    const work = await serverWork(() => limiter.check({ event: 'tight', feature: 'eve' }));
    expect(work).toMatchObject({ writes: 0 });
    expect(work.reads).toBeGreaterThan(0);
  });
});
