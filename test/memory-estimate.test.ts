// The feature cache's estimate against the heap its clients really take: MEMGATE_CACHE_MB
// bounds the heap only if no client takes more than it is counted at. Each policy shape is
// measured at the second its windows hold the most buckets, every client denied (so it
// keeps its last denial too), as the heap 2,000 more cached clients took after a full
// collection. Before, a 1 s window was counted at 2.2 KB and took 2.6 KB.
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../src/counting/limiter.js';
import { overfullCacheBytes, type FeatureState } from '../src/counting/algorithms/windows/feature-cache.js';
import { overfull } from '../src/counting/algorithms/windows/overfull.js';
import type { WindowsPlan } from '../src/counting/plan-types.js';
import { collectedHeap } from '../scripts/lib/collected-heap.js';
import { denyingStore } from '../scripts/lib/denying-store.js';

const L = (window: string, extra: object = {}) => ({ limit: 1_000_000_000, window, ...extra });
const SHAPES: Record<string, object> = {
  '1 s window': { limits: [L('1s')] },
  '10 s window': { limits: [L('10s')] },
  '1 min window': { limits: [L('1m')] },
  '1 min and 1 day windows': { limits: [L('1m'), L('1d')] },
  'fixed 1 s, 1 min and 1 h windows': { algorithm: 'fixed', limits: [L('1s'), L('1m'), L('1h')] },
  '5 windows, 1 min to 1 h': { limits: [L('1m'), L('2m'), L('5m'), L('10m'), L('1h')] },
  'a lease of 30 s on a 1 min window': { limits: [L('1m')], lease: { maxUnits: 10, life: '30s' } },
};
const CLIENTS = 2000;

/**
 * Heap per cached client, and what the cache counts it at, for `events` events of one shape:
 * the middle of three measures. Anything else allocated while one runs (a timer, a log line)
 * adds to it (once in a fresh clone's run, 10%), and now and then something held from before
 * is freed while one runs, taking from it (a 1 s window's client once read 257 bytes in a run
 * of the integration tests, against 413 to 504 alone): one disturbed measure, either way, is
 * outvoted.
 */
async function measure(shape: object, events: number): Promise<{ heap: number; estimate: number }> {
  const measures: { heap: number; estimate: number }[] = [];
  for (let i = 0; i < 3; i++) measures.push(await measureOnce(shape, events));
  return middle(measures);
}

/** The middle of three measures by heap (overfullHeap's vote too). */
function middle<T extends { heap: number }>(measures: readonly T[]): T {
  return [...measures].sort((a, b) => a.heap - b.heap)[1] as T;
}

async function measureOnce(shape: object, events: number): Promise<{ heap: number; estimate: number }> {
  const names = Array.from({ length: events }, (_, i) => `e${i}`);
  let clockMs = 0;
  const limiter = createLimiter({
    policies: { events: Object.fromEntries(names.map((name) => [name, shape])) },
    store: denyingStore,
    now: () => clockMs,
    cacheBytes: 2 ** 40,
  });
  // The second whose covers hold the most buckets: they repeat with the largest bucket.
  const plan = limiter.plans.get('e0');
  if (!plan || !('levels' in plan)) throw new Error('no plan of windows');
  const period = Math.max(...plan.levels.map(({ size }) => size));
  const from = Math.floor(Date.now() / 86_400_000) * 86_400;
  let most = -1;
  for (let second = from; second < from + period; second++) {
    const buckets = plan.limits.reduce(
      (sum, limit) => sum + limit.cover(second).reduce((n, run) => n + run.count, 0),
      0,
    );
    if (buckets > most) [most, clockMs] = [buckets, second * 1000 + 500];
  }
  // A denial pauses before it reads again: clients are checked 200 at a time.
  const fill = async (from: number, to: number) => {
    for (let i = from; i < to; i += 200) {
      const clients = Array.from({ length: 200 }, (_, j) => `client-${String(i + j).padStart(7, '0')}`);
      await Promise.all(clients.flatMap((feature) => names.map((event) => limiter.check({ event, feature }))));
    }
  };
  // The first clients pay for what is made once (compiled code, maps); the next ones are measured.
  await fill(0, CLIENTS);
  const heapBefore = collectedHeap();
  const estimateBefore = limiter.cacheUsage.bytes;
  await fill(CLIENTS, 2 * CLIENTS);
  const heap = (collectedHeap() - heapBefore) / CLIENTS;
  const estimate = (limiter.cacheUsage.bytes - estimateBefore) / CLIENTS;
  expect(limiter.cacheUsage.features).toBe(2 * CLIENTS * events);
  // The denying store finds every client at its limit, not over it: none keeps a record of
  // counts over a limit (overfull.ts), and none is counted at one. That record is measured apart.
  return { heap, estimate };
}

/** The plan of windows one event of `shape` runs on. */
function planOf(shape: object): WindowsPlan {
  const plan = createLimiter({ policies: { events: { e: shape } }, store: denyingStore }).plans.get('e');
  if (!plan || !('levels' in plan)) throw new Error('no plan of windows');
  return plan;
}

/**
 * The heap one state's record of counts over `plan`'s limits takes, as overfull.ts keeps it:
 * the middle of three measures. Once in a while something an earlier test left (about 11 MB,
 * as much as one of its limiters' clients) is freed only after the first collections, and
 * one measure read -560 bytes a record; one such measure, either way, is outvoted.
 */
function overfullHeap(plan: WindowsPlan): number {
  return middle([0, 1, 2].map(() => ({ heap: overfullHeapOnce(plan) }))).heap;
}

function overfullHeapOnce(plan: WindowsPlan): number {
  const counts = plan.limits.map((limit) => ({ plan: limit, buckets: [] }));
  const totals = plan.limits.map((limit) => limit.policy.limit + 0.5);
  // Ten times as many as the clients: a record is small beside what else a collection leaves.
  const states: FeatureState[] = Array.from({ length: 10 * CLIENTS }, (_, i) => ({
    base: `b${i}`,
    overfull: undefined,
  }));
  const before = collectedHeap();
  let over = 0;
  for (let i = 0; i < states.length; i++) if (overfull(states[i] as FeatureState, counts, totals, 1e12 + i)) over++;
  const perState = (collectedHeap() - before) / states.length;
  expect(over).toBe(states.length);
  expect(states.every((state) => state.overfull?.length === 2 + plan.limits.length)).toBe(true);
  return perState;
}

describe('the feature cache counts each client at no less than the heap it takes', () => {
  for (const [name, shape] of Object.entries(SHAPES)) {
    it(name, async () => {
      const { heap, estimate } = await measure(shape, 1);
      const report = `${Math.round(heap)} bytes of heap per client, counted at ${Math.round(estimate)}`;
      expect(heap, report).toBeLessThanOrEqual(estimate);
      // Not far above either, or the budget would hold fewer clients than it could: not twice
      // the heap. (A leased event's clients took 703 to 756 bytes of the 1,312 they are counted
      // at, in four runs, since the compact cache; a bound of 0.6 failed two of them.)
      expect(heap, report).toBeGreaterThan(0.5 * estimate);
    });
  }

  // A client's state is counted again with it once its denials find counts over a limit (FeatureCache.keptOverfull).
  it('a record of counts over one limit, and over five', () => {
    for (const shape of [SHAPES['1 s window'], SHAPES['5 windows, 1 min to 1 h']]) {
      const plan = planOf(shape as object);
      const heap = overfullHeap(plan);
      const report = `${Math.round(heap)} bytes of heap per record, counted at ${overfullCacheBytes(plan)}`;
      expect(heap, report).toBeLessThanOrEqual(overfullCacheBytes(plan));
      expect(heap, report).toBeGreaterThan(0.5 * overfullCacheBytes(plan));
    }
  });

  it('a client of 8 events, counted once per event', async () => {
    const { heap, estimate } = await measure(SHAPES['1 s window'] as object, 8);
    const report = `${Math.round(heap)} bytes of heap per client, counted at ${Math.round(estimate)}`;
    expect(heap, report).toBeLessThanOrEqual(estimate);
    expect(heap, report).toBeGreaterThan(0.6 * estimate);
  });
});
