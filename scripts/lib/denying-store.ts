// A store that denies every check at once, for measuring what a cached client takes of the
// heap (the memory bench and test/memory-estimate.test.ts): no socket, no items of its own
// in the heap, so what grows is the feature cache alone. Never for deciding anything.
import type { CounterStore } from '../../src/store/counter-store.js';

/** Answers every increment and read with counts far over any limit, as Memcached would hold them. */
export const denyingStore: CounterStore = {
  kind: 'instant',
  shared: true,
  description: 'denies at once',
  incrementAndRead: (increments, reads) =>
    Promise.resolve({ incremented: increments.map(() => 2e9), read: reads.map(() => 1e9) }),
  decrement: () => Promise.resolve(),
  reset: () => Promise.resolve(),
  // The largest value a key may hold, as for a client far over its limit; a swap always lands,
  // so a caller's read-modify-swap loop ends at once.
  readVersioned: () => Promise.resolve({ value: 2 ** 53, version: 1n }),
  swap: () => Promise.resolve(true),
  remove: () => Promise.resolve(true),
  ping: () => Promise.resolve(),
  health: () => Promise.resolve([]),
  close: () => Promise.resolve(),
};
