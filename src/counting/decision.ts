import { crossing, type CountedBucket, type SettledPrefix } from './buckets.js';
import type { LimitPlan } from './plan.js';
import type { Decision, LimitStatus } from '../shared/decision.js';

export type { Decision, LimitStatus };

/** How one limit stands after a decision. */
/** Seconds a client denied because the store could not answer is told to wait. */
export const DEGRADED_RETRY_AFTER = 1;

/** The decision of an event's `onStoreError` rule, when its counts cannot be read. */
export function degradedDecision(onStoreError: 'allow' | 'deny'): Decision {
  return onStoreError === 'allow'
    ? { allowed: true, limits: [], degraded: true }
    : { allowed: false, limits: [], retryAfter: DEGRADED_RETRY_AFTER, degraded: true };
}

const ALLOW_LISTED: Decision = Object.freeze({ allowed: true, limits: [], listed: 'allow' });
const DENY_LISTED: Decision = Object.freeze({ allowed: false, limits: [], listed: 'deny' });

/** The decision for a client an allow or deny list holds: no limits, nothing counted. */
export function listedDecision(listed: 'allow' | 'deny'): Decision {
  return listed === 'allow' ? ALLOW_LISTED : DENY_LISTED;
}

/** The names of the limits a decision of `cost` found over (a denied decision's statuses hold no cost). */
export function overLimits(decision: Decision, cost: number, impossible = false): string[] {
  if (decision.allowed || decision.degraded) return [];
  return decision.limits.filter((limit) => impossible || limit.remaining < cost).map((limit) => limit.name);
}

/** A shadow check's decision as a request sees it: allowed, saying what it would have refused. */
export function shadowDecision(decision: Decision, cost: number, impossible = false): Decision {
  const shadowDenied = overLimits(decision, cost, impossible);
  return {
    allowed: true,
    limits: [],
    shadowLimits: decision.limits,
    ...(shadowDenied.length > 0 ? { shadowDenied } : {}),
    ...(decision.degraded ? { degraded: true as const } : {}),
  };
}

/** One limit's buckets, oldest first, not counting the request being decided. */
export interface LimitCounts {
  readonly plan: LimitPlan;
  readonly buckets: readonly CountedBucket[];
  /** The oldest buckets, summed once when their counts can no longer change. */
  readonly settled?: SettledPrefix | undefined;
}

/** The request a decision is about, and whether deciding it counts it. */
export interface DecideOptions {
  readonly cost: number;
  readonly nowMs: number;
  /** A `check` counts an allowed request, so its statuses report its cost as used; a `peek` counts nothing. */
  readonly kind: 'check' | 'peek';
}

/**
 * Decides a request from the counts of each limit's window: allowed only if every limit
 * has room for the whole cost.
 */
export function decide(limits: readonly LimitCounts[], { cost, nowMs, kind }: DecideOptions): Decision {
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
  if (allowed) return { allowed, limits: statuses };

  let retryAfter = 0;
  excess.forEach((needed, i) => {
    const limit = limits[i];
    if (limit && needed > 0)
      retryAfter = Math.max(retryAfter, secondsUntil(releaseOfFirst(limit, needed, 0, now), nowMs));
  });
  return { allowed, limits: statuses, retryAfter };
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
function countedTotal({ plan, buckets, settled }: LimitCounts, now: number): number {
  let total = settled?.total ?? 0;
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

export function secondsUntil(second: number, nowMs: number): number {
  return Math.max(1, Math.ceil((second * 1000 - nowMs) / 1000));
}
