import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../../../config/policies.js';
import {
  CLIENT_CACHE_BYTES,
  FeatureCache,
  overfullCacheBytes,
  stateCacheBytes,
  windowCacheBytes,
} from './feature-cache.js';
import { overfull } from './overfull.js';
import type { FeatureWindow } from './feature-window.js';
import { planEvents } from '../../plan.js';
import type { WindowsPlan } from '../../plan-types.js';

const plans = planEvents(
  parsePolicies(
    {
      events: {
        a: { limits: [{ limit: 5, window: '1m' }] },
        b: {
          limits: [
            { limit: 5, window: '1m' },
            { limit: 50, window: '1h' },
          ],
        },
        c: { limits: [{ limit: 5, window: '10s' }] },
      },
    },
    'test.yaml',
  ),
);
const plan = (event: string) => {
  const found = plans.get(event) as WindowsPlan | undefined;
  if (!found) throw new Error(`no plan ${event}`);
  return found;
};
const SKEW = 2;
const client = (name: string, ...events: string[]) =>
  CLIENT_CACHE_BYTES + 2 * name.length + events.reduce((sum, event) => sum + stateCacheBytes(plan(event)), 0);

describe('FeatureCache', () => {
  it('counts a client once, and each event it was checked for', () => {
    const cache = new FeatureCache('p', 2 ** 30, SKEW);
    cache.state(plan('a'), 'ann');
    expect(cache.usage).toEqual({ features: 1, bytes: client('ann', 'a') });
    // A second and a third event of the same client add their states: they take heap too.
    cache.state(plan('b'), 'ann');
    cache.state(plan('c'), 'ann');
    expect(cache.usage).toEqual({ features: 3, bytes: client('ann', 'a', 'b', 'c') });
    // Asked again, nothing is added.
    expect(cache.state(plan('b'), 'ann')).toBe(cache.state(plan('b'), 'ann'));
    expect(cache.usage.bytes).toBe(client('ann', 'a', 'b', 'c'));
  });

  it('makes room for a client’s new event by forgetting the least recently checked clients', () => {
    const cache = new FeatureCache('p', client('ann', 'a') + client('bob', 'a') + 100, SKEW);
    const ann = cache.state(plan('a'), 'ann');
    cache.state(plan('a'), 'bob');
    expect(cache.usage.features).toBe(2);
    // ann, checked for a second event, outgrows the room left: bob, checked less recently, goes.
    cache.state(plan('a'), 'ann');
    cache.state(plan('c'), 'ann');
    expect(cache.usage).toEqual({ features: 2, bytes: client('ann', 'a', 'c') });
    expect(cache.state(plan('a'), 'ann')).toBe(ann);
  });

  it('counts a whole window at its worst case: a state, each limit, each bucket its windows can hold and those ahead', () => {
    // 1 min in 1 s buckets: at most 60 keys read, and 2 + the skew ahead of now.
    expect(windowCacheBytes(plan('a'), SKEW)).toBe(1700 + 300 + 120 * (60 + 4));
    expect(windowCacheBytes(plan('b'), SKEW)).toBe(
      1700 + 2 * 300 + 120 * (plan('b').limits.reduce((sum, limit) => sum + limit.keysPerCheck.max, 0) + 2 * 4),
    );
  });

  it('counts a state between checks at its worst case: a state, a denial’s numbers per limit, the runs and counts of settled buckets', () => {
    // 1 min in 1 s buckets and the current minute's: at most 60 keys read, all but the current one
    // settled, in at most two runs of each level (a window's oldest and newest ends).
    expect(plan('a').limits[0]?.levels).toEqual([60, 1]);
    expect(stateCacheBytes(plan('a'))).toBe(280 + 16 + 100 + 32 * 2 * 2 + 8 * 59);
    const settledOfB = plan('b').limits.reduce((sum, limit) => sum + limit.keysPerCheck.max - 1, 0);
    const runsOfB = plan('b').limits.reduce((sum, limit) => sum + 2 * limit.levels.length, 0);
    expect(stateCacheBytes(plan('b'))).toBe(280 + 2 * 16 + 100 + 32 * runsOfB + 8 * settledOfB);
    // Counts over its limits, once its denials found some: 2 numbers and a total per limit.
    expect(overfullCacheBytes(plan('a'))).toBe(80 + 8);
    expect(overfullCacheBytes(plan('b'))).toBe(80 + 2 * 8);
  });

  it('counts a client again, with its record of counts over a limit, once a state of it keeps one', () => {
    const cache = new FeatureCache('p', 2 ** 30, SKEW);
    cache.state(plan('a'), 'ann');
    const bob = cache.state(plan('b'), 'bob');
    cache.state(plan('a'), 'bob');
    expect(cache.usage.bytes).toBe(client('ann', 'a') + client('bob', 'a', 'b'));
    const counts = plan('b').limits.map((limit) => ({ plan: limit, buckets: [] }));
    expect(overfull(bob, counts, [6, 10], 1e12)).toBe(true);
    cache.keptOverfull('bob');
    expect(cache.usage.bytes).toBe(client('ann', 'a') + client('bob', 'a', 'b') + overfullCacheBytes(plan('b')));
    // Counted once, however often its record is kept again.
    expect(overfull(bob, counts, [7, 10], 1e12 + 10)).toBe(true);
    cache.keptOverfull('bob');
    expect(cache.usage.bytes).toBe(client('ann', 'a') + client('bob', 'a', 'b') + overfullCacheBytes(plan('b')));
    // A client not held (or gone) is not counted back in.
    cache.keptOverfull('cid');
    expect(cache.usage.features).toBe(3);
  });

  it('keeps whole windows for the features checked last only, the others’ settled counts as numbers', () => {
    const cache = new FeatureCache('p', 2 ** 30, SKEW);
    const S = 1_790_000_000;
    /** A check of `feature` at `second`: every bucket read holds 1, the current one 2. */
    const check = (feature: string, second: number): FeatureWindow => {
      const state = cache.state(plan('a'), feature);
      const window = cache.windowAt(state, plan('a'), second);
      const { reads } = window;
      window.fill(
        reads,
        reads.keys.map((_, i) => (i === 0 ? 0 : 1)),
        window.currentKeys.map(() => 2),
        0,
      );
      cache.filled(state, window);
      // As a decision on the counts does (windows.ts).
      state.roomSecond = second;
      return window;
    };
    const clients = Array.from({ length: 1100 }, (_, i) => `c${i}`);
    // A feature's first check in a second, not hot the second before, keeps no window.
    for (const feature of clients) check(feature, S);
    expect(cache.state(plan('a'), 'c1099').window).toBeUndefined();
    expect(cache.state(plan('a'), 'c1099').settled).toBeDefined();
    expect(cache.usage.bytes).toBe(clients.reduce((sum, c) => sum + client(c, 'a'), 0));
    // Checked again within it, it does.
    for (const feature of clients) check(feature, S);
    const [first, last] = [cache.state(plan('a'), 'c0'), cache.state(plan('a'), 'c1099')];
    expect(first.window).toBeUndefined();
    expect(first.settled).toBeDefined();
    expect(last.window?.second).toBe(S);
    // 1,024 hot windows, counted in the budget beside every client.
    expect(cache.usage).toEqual({
      features: 1100,
      bytes: clients.reduce((sum, c) => sum + client(c, 'a'), 0) + 1024 * windowCacheBytes(plan('a'), SKEW),
    });
    // A second on, both read only what a hot window would: the buckets not settled before.
    const [cold, hot] = [check('c0', S + 1), check('c1099', S + 1)];
    expect(cold.reads.keys.map((key) => key.replace('c0', 'c1099'))).toEqual(hot.reads.keys);
    expect(cold.limits.map((limit) => limit.buckets.map((b) => b.count))).toEqual(
      hot.limits.map((limit) => limit.buckets.map((b) => b.count)),
    );
  });

  it('keeps nothing with a budget of 0', () => {
    const cache = new FeatureCache('p', 0, SKEW);
    expect(cache.state(plan('a'), 'ann')).not.toBe(cache.state(plan('a'), 'ann'));
    expect(cache.usage).toEqual({ features: 0, bytes: 0 });
  });
});
