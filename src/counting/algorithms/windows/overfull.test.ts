import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../../../config/policies.js';
import type { LimitCounts } from './counts.js';
import { CLIENT_CACHE_BYTES, overfullCacheBytes, stateCacheBytes, type FeatureState } from './feature-cache.js';
import { createLimiter } from '../../limiter.js';
import { MAX_READS } from '../../step.js';
import type { CounterStore } from '../../../store/counter-store.js';
import { createEmbeddedStore } from '../../../store/embedded-store.js';
import { overfull, OVERFULL_PATIENCE_MS } from './overfull.js';
import { planEvents } from '../../plan.js';
import type { WindowsPlan } from '../../plan-types.js';

const plan = planEvents(
  parsePolicies(
    {
      events: {
        api: {
          limits: [
            { limit: 30, window: '1m' },
            { limit: 100, window: '1h' },
          ],
        },
      },
    },
    'overfull.test.yaml',
  ),
).get('api') as WindowsPlan;
const counts: LimitCounts[] = plan.limits.map((limit) => ({ plan: limit, buckets: [] }));
const T0 = 1_000_000;

describe('counts over a limit', () => {
  it('are not over while every limit holds them, however long they stand', () => {
    const state: FeatureState = { base: 'b' };
    expect(overfull(state, counts, [30, 100], T0)).toBe(false);
    expect(overfull(state, counts, [30, 100], T0 + 10 * OVERFULL_PATIENCE_MS)).toBe(false);
  });

  it('hold cost on its way back until the same counts stood still for the patience, any limit over', () => {
    const state: FeatureState = { base: 'b' };
    expect(overfull(state, counts, [31, 40], T0)).toBe(true);
    expect(overfull(state, counts, [31, 40], T0 + 100)).toBe(true);
    expect(overfull(state, counts, [31, 40], T0 + 200)).toBe(true);
    expect(overfull(state, counts, [31, 40], T0 + OVERFULL_PATIENCE_MS)).toBe(false);
    // Later requests find them as they are at once, even after memory answered for a while.
    expect(overfull(state, counts, [31, 40], T0 + OVERFULL_PATIENCE_MS + 50)).toBe(false);
    expect(overfull(state, counts, [31, 40], T0 + OVERFULL_PATIENCE_MS + 5_000)).toBe(false);
    expect(overfull({ base: 'b' }, counts, [20, 101], T0)).toBe(true);
  });

  it('start the patience again when they moved, or were not looked at for a while', () => {
    const state: FeatureState = { base: 'b' };
    overfull(state, counts, [31, 40], T0);
    expect(overfull(state, counts, [32, 40], T0 + 100)).toBe(true);
    expect(overfull(state, counts, [32, 40], T0 + 200)).toBe(true);
    // The patience since they moved, not since the first look.
    expect(overfull(state, counts, [32, 40], T0 + OVERFULL_PATIENCE_MS)).toBe(true);
    expect(overfull(state, counts, [32, 40], T0 + 100 + OVERFULL_PATIENCE_MS)).toBe(false);
    // The same counts again after a gap: other transient cost may add up to them by chance.
    const gapped: FeatureState = { base: 'b' };
    overfull(gapped, counts, [31, 40], T0);
    expect(overfull(gapped, counts, [31, 40], T0 + OVERFULL_PATIENCE_MS)).toBe(true);
  });
});

describe('a client whose denials found counts over a limit', () => {
  it('is counted in the cache budget with its record, from the check that kept it', async () => {
    const store = createEmbeddedStore();
    const limited = (limit: number) =>
      createLimiter({ policies: { events: { api: { limits: [{ limit, window: '1m' }] } } }, store, keyPrefix: 'o' });
    // An instance whose limit is 10 admits 10 of eve's and 5 of bob's; one whose limit is 5 (a
    // reload lowered it) finds eve over it, bob at it.
    const wide = limited(10);
    for (let i = 0; i < 10; i++) await wide.check({ event: 'api', feature: 'eve' });
    for (let i = 0; i < 5; i++) await wide.check({ event: 'api', feature: 'bob' });
    const narrow = limited(5);
    const grown = async (feature: string): Promise<number> => {
      const before = narrow.cacheUsage.bytes;
      expect((await narrow.check({ event: 'api', feature })).allowed).toBe(false);
      return narrow.cacheUsage.bytes - before;
    };
    const bob = await grown('bob');
    const eve = await grown('eve');
    expect(narrow.cacheUsage.features).toBe(2);
    const api = narrow.plans.get('api') as WindowsPlan;
    // Each its name and state (and the window its denial read again in); eve, its record of 10 over 5.
    expect(bob).toBeGreaterThanOrEqual(CLIENT_CACHE_BYTES + 2 * 'bob'.length + stateCacheBytes(api));
    expect(eve - bob).toBe(overfullCacheBytes(api));
    await Promise.all([wide.close(), narrow.close()]);
  });

  it('is taken as it is after the patience in real time, while a driven clock stands still (a replay on a shared store)', async () => {
    // Two instances on one shared store, the clock driven and never moved: only real time tells
    // that eve's 10, over the lowered limit of 5, stood still. Timed by the driven clock, every
    // denial read until MAX_READS and answered unconfirmed (retryAfter 1), however many came.
    const clock = { ms: Date.UTC(2026, 10, 30, 12, 0, 30) };
    const embedded = createEmbeddedStore({ now: () => clock.ms });
    let reads = 0;
    const store: CounterStore = {
      ...embedded,
      shared: true,
      incrementAndRead(increments, keys, options) {
        if (increments.length === 0) reads++;
        return embedded.incrementAndRead(increments, keys, options);
      },
    };
    const limited = (limit: number) =>
      createLimiter({
        policies: { events: { api: { limits: [{ limit, window: '1m' }] } } },
        store,
        now: () => clock.ms,
        keyPrefix: 'o',
        // Every denial asks the store: none is answered from the memory of the last.
        maxDenialCacheMs: 0,
      });
    const wide = limited(10);
    for (let i = 0; i < 10; i++) await wide.check({ event: 'api', feature: 'eve' });
    const narrow = limited(5);
    // The patience runs across looks at most 128 ms apart: a process stalled longer starts it
    // again, and that denial is unconfirmed. Three denials in a row cannot all be stalled.
    const retryAfters: number[] = [];
    while (retryAfters.length < 3 && retryAfters.at(-1) !== 60) {
      const decision = await narrow.check({ event: 'api', feature: 'eve' });
      expect(decision.allowed).toBe(false);
      retryAfters.push(decision.retryAfter ?? 0);
    }
    expect(retryAfters.at(-1), `retryAfter of each denial: ${retryAfters.join(', ')}`).toBe(60);
    // Taken as they are: the next denial stands on its first looks, with no patience again.
    reads = 0;
    expect(await narrow.check({ event: 'api', feature: 'eve' })).toMatchObject({ allowed: false, retryAfter: 60 });
    // Its looks and the read of the window's seconds for the exact retryAfter; unconfirmed, MAX_READS.
    expect(reads).toBeLessThanOrEqual(3);
    expect(MAX_READS).toBeGreaterThan(3);
    await Promise.all([wide.close(), narrow.close()]);
  });
});
