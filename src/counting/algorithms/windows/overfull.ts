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

/**
 * Whether `totals` (each limit's, before the request) hold cost on its way back: some limit's is
 * over it, and this instance's looks have not found the same totals for OVERFULL_PATIENCE_MS
 * without a gap. Keeps in `state` when its looks first found them, so that once they have stood
 * still that long, later requests find them as they are at once.
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
    (nowMs - seen.lastMs <= STILL_GAP_MS || seen.lastMs - seen.sinceMs >= OVERFULL_PATIENCE_MS) &&
    seen.totals.length === totals.length &&
    seen.totals.every((total, i) => total === totals[i]);
  const sinceMs = still ? seen.sinceMs : nowMs;
  // Concurrent requests' looks may answer out of their clocks' order.
  state.overfull = { totals, sinceMs, lastMs: still ? Math.max(nowMs, seen.lastMs) : nowMs };
  return nowMs - sinceMs < OVERFULL_PATIENCE_MS;
}
