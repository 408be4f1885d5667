// Counts over a limit, beside other instances counting: what was admitted fits in the limit, so
// the rest is increments on their way back (requests refused, their take-backs not landed yet),
// and a denial on them confirms nothing. Unless the same counts stand still for
// OVERFULL_PATIENCE_MS: no take-back in flight takes that long short of a failure, so what they
// hold stays (a limit lowered below them, requests admitted without the store whose increments
// landed late).
import type { LimitCounts } from './counts.js';
import type { FeatureState } from './feature-cache.js';

/** How long counts over a limit must stand still before they are taken as they are: the store's default deadline. */
export const OVERFULL_PATIENCE_MS = 250;
/**
 * The longest time between two looks at the same counts over a limit for them to have stood
 * still meanwhile: a request looks again within twice its longest pause (64 ms).
 */
const STILL_GAP_MS = 128;

/** Where FeatureState.overfull keeps what: when its looks first found the totals, when last, then the totals. */
const SINCE = 0;
const LAST = 1;
const TOTALS = 2;

/**
 * Whether `totals` (each limit's, before the request) hold cost on its way back: some limit's is
 * over it, and this instance's looks have not found the same totals for OVERFULL_PATIENCE_MS
 * without a gap. Keeps in `state` when its looks first found them, so that once they have stood
 * still that long, later requests find them as they are at once. `nowMs` is this process's
 * monotonic clock (Context.monotonicNow), never a driven one.
 */
export function overfull(
  state: FeatureState,
  counts: readonly LimitCounts[],
  totals: readonly number[],
  nowMs: number,
): boolean {
  // What a token bucket before a reload may have admitted is a bound, not counts: it holds nothing in flight.
  const over = totals.some(
    (total, i) => total - (counts[i]?.carried ?? 0) > (counts[i]?.plan.policy.limit ?? Infinity),
  );
  if (!over) return false;
  const seen = state.overfull;
  // Looked at without a gap, or already taken as they are (a gap then only means memory answered meanwhile).
  const still =
    seen !== undefined &&
    (nowMs - (seen[LAST] as number) <= STILL_GAP_MS ||
      (seen[LAST] as number) - (seen[SINCE] as number) >= OVERFULL_PATIENCE_MS) &&
    seen.length === TOTALS + totals.length &&
    totals.every((total, i) => total === seen[TOTALS + i]);
  const sinceMs = still ? (seen[SINCE] as number) : nowMs;
  // Concurrent requests' looks may answer out of their clocks' order.
  const lastMs = still ? Math.max(nowMs, seen[LAST] as number) : nowMs;
  // One list of numbers, kept per cached client (feature-cache.ts counts it): since, last, then the totals.
  const kept = new Array<number>(TOTALS + totals.length);
  kept[SINCE] = sinceMs;
  kept[LAST] = lastMs;
  for (let i = 0; i < totals.length; i++) kept[TOTALS + i] = totals[i] as number;
  state.overfull = kept;
  return nowMs - sinceMs < OVERFULL_PATIENCE_MS;
}
