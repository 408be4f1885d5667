// A decision over a window's counts: allowed only if every limit has room for the whole cost,
// with each limit's status and, on a denial, when enough cost will have left. Pure: the counts
// come from the store, through the window (feature-window.ts).
import { crossing, type CountedBucket, type SettledPrefix } from './buckets.js';
import { secondsUntil, type Decision, type LimitStatus } from '../../decision.js';
import type { WindowLimitPlan } from '../../plan-types.js';

/** One limit's buckets, oldest first, not counting the request being decided. */
export interface LimitCounts {
  readonly plan: WindowLimitPlan;
  readonly buckets: readonly CountedBucket[];
  /** The oldest buckets, summed once when their counts can no longer change. */
  readonly settled?: SettledPrefix | undefined;
  /** Counted beside the buckets: what a token bucket before a reload may have admitted within the window (bucket-carry.ts). */
  readonly carried?: number | undefined;
}

/** The request a decision is about, and whether deciding it counts it. */
export interface DecideOptions {
  readonly cost: number;
  readonly nowMs: number;
  /** A `check` counts an allowed request, so its statuses report its cost as used; a `peek` counts nothing. */
  readonly kind: 'check' | 'peek';
  /** The version of the policies it is decided under. */
  readonly version: string;
}

/**
 * Decides a request from the counts of each limit's window: allowed only if every limit
 * has room for the whole cost.
 */
export function decide(limits: readonly LimitCounts[], { cost, nowMs, kind, version }: DecideOptions): Decision {
  const now = Math.floor(nowMs / 1000);
  const totals = limits.map((limit) => countedTotal(limit, now));
  const excess = limits.map(({ plan }, i) => (totals[i] ?? 0) + cost - plan.policy.limit);
  const allowed = excess.every((e) => e <= 0);
  const counted = allowed && kind === 'check' ? cost : 0;
  const statuses = limits.map((limit, i): LimitStatus => {
    const { plan } = limit;
    const used = (totals[i] ?? 0) + counted;
    return {
      name: plan.policy.name,
      limit: plan.policy.limit,
      window: plan.policy.window,
      // A weighted edge makes `used` fractional; only whole requests fit in what remains.
      remaining: Math.max(0, Math.floor(plan.policy.limit - used)),
      resetSeconds: used === 0 ? 0 : secondsUntil(releaseOfFirst(limit, 1, counted, now), nowMs),
    };
  });
  if (allowed) return { allowed, limits: statuses, policyVersion: version };

  let retryAfter = 0;
  excess.forEach((needed, i) => {
    const limit = limits[i];
    if (limit && needed > 0)
      retryAfter = Math.max(retryAfter, secondsUntil(releaseOfFirst(limit, needed, 0, now), nowMs));
  });
  return { allowed, limits: statuses, retryAfter, policyVersion: version };
}

/** Per limit, how much cost must leave its window before a request of `cost` fits (≤ 0: it fits now). */
export function excessOf(limits: readonly LimitCounts[], cost: number, now: number): number[] {
  return limits.map((limit) => countedTotal(limit, now) + cost - limit.plan.policy.limit);
}

/** What each limit's window holds at second `now`. */
export function windowTotals(limits: readonly LimitCounts[], now: number): number[] {
  return limits.map((limit) => countedTotal(limit, now));
}

/** What a limit's window holds at second `now`: its buckets, the oldest weighted by the edge rule. */
function countedTotal({ plan, buckets, settled, carried }: LimitCounts, now: number): number {
  let total = (settled?.total ?? 0) + (carried ?? 0);
  for (let i = settled?.length ?? 0; i < buckets.length; i++) total += (buckets[i] as CountedBucket).count;
  const oldest = buckets[0];
  return oldest ? total - oldest.count * (1 - plan.oldestWeight(now)) : total;
}

/**
 * `amount` of weighted cost, as whole bucket counts from the oldest: a weighted edge counts
 * the oldest bucket at its share only, so its leaving frees that share, not its count. The
 * buckets whose counts reach this amount free at least `amount` once they have all left.
 */
export function unweightedAmount({ plan, buckets }: LimitCounts, amount: number, now: number): number {
  const oldest = buckets[0];
  return oldest ? amount + oldest.count * (1 - plan.oldestWeight(now)) : amount;
}

/** The second by which at least `amount` of the counted cost has left the window, from these buckets alone. */
function releaseOfFirst(counts: LimitCounts, amount: number, pending: number, now: number): number {
  const { plan, buckets, settled } = counts;
  const found = crossing(buckets, unweightedAmount(counts, amount, now), pending, settled);
  // Callers never ask for more than the buckets hold (cost ≤ every limit); be safe anyway.
  const bucket = found?.bucket ?? buckets[buckets.length - 1];
  return bucket ? plan.releaseAt(bucket.start, bucket.size, now) : now + 1;
}
