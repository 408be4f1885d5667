// A store that denies every check at once, for measuring what a cached client takes of the
// heap (the memory bench and test/memory-estimate.test.ts): no socket, no items of its own
// in the heap, so what grows is the feature cache alone. Never for deciding anything.
import type { CounterStore } from '../../src/store/counter-store.js';

/**
 * The limit its users give every window (the memory bench's shapes): each check finds it
 * exactly full. Counts over a limit would hold, for the check step, other requests' cost on its
 * way back, and it would look again until they stood still; Memcached holds a client memgate
 * refuses at its limit, since refused costs are taken back.
 */
export const DENYING_STORE_LIMIT = 1_000_000_000;

/**
 * Answers every increment with the limit's count plus the increment, and every other read with
 * 0, except where a call only reads (a denial confirmed): there each level's current bucket
 * holds the limit, as the increment left it after its take-back, so the look finds what the
 * count found and the denial is confirmed and remembered, as with Memcached. (Read as 0 too,
 * each check looked again 8 times and was refused unconfirmed: no client kept a denial.)
 */
export const denyingStore: CounterStore = {
  kind: 'instant',
  shared: true,
  description: 'denies at once',
  incrementAndRead: (increments, reads) =>
    Promise.resolve({
      incremented: increments.map(({ delta }) => DENYING_STORE_LIMIT + delta),
      read: increments.length > 0 ? reads.map(() => 0) : currentFull(reads),
    }),
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

/**
 * A read-only call's answer: the limit at each level's current bucket, 0 elsewhere. Such a call
 * reads the current buckets last (counter-call.ts), one a level (`<level>:<start>` ends a
 * bucket's key), after the buckets ahead of now and the settled ones.
 */
function currentFull(keys: readonly string[]): number[] {
  const last = new Map<string, number>();
  keys.forEach((key, i) => last.set(key.slice(0, key.lastIndexOf(':')), i));
  const current = new Set(last.values());
  return keys.map((key, i) => (current.has(i) && !key.endsWith(':reset') ? DENYING_STORE_LIMIT : 0));
}
