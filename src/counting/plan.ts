import { DEFAULTS } from '../config/defaults.js';
import { formatDuration } from '../config/duration.js';
import {
  PolicyError,
  type Algorithm,
  type Edge,
  type LimitPolicy,
  type OnStoreError,
  type PolicySet,
} from '../config/policies.js';
import { bucketCount, bucketStart, type BucketRun } from './buckets.js';
import { ClientPlans, type OverridePlan } from './client-plans.js';
import { edgeWeight, fixedCover, slidingCover, slidingLevels } from './cover.js';

/**
 * Seconds every counter outlives its last possible read: absorbs clock skew between
 * memgate instances and Memcached's whole-second expiry clock.
 */
export const TTL_MARGIN_SECONDS = 2;

/** A limit may read at most this many buckets per check; more would make every check slow. */
export const MAX_KEYS_PER_CHECK = 1000;

/** How one limit of an event counts. */
export interface LimitPlan {
  readonly policy: LimitPolicy;
  readonly algorithm: Algorithm;
  /** Bucket sizes (seconds) this limit counts in, coarsest first. */
  readonly levels: readonly number[];
  /** The buckets holding this limit's window at second `now`, coarsest (newest) run first. */
  cover(now: number): BucketRun[];
  /** How much of the cover's oldest bucket counts at second `now`: below 1 only for a `weighted` edge. */
  oldestWeight(now: number): number;
  /**
   * The first second at which the bucket [start, start + size) no longer counts, read at
   * second `now`. Exact for buckets of the policy's granularity; for a coarser bucket it is
   * when its last possible second leaves, so never too early. A `weighted` edge fades a
   * bucket out gradually; this is when it is gone entirely.
   */
  releaseAt(start: number, size: number, now: number): number;
  /** How long a bucket of `size` must live so every read of it finds it. */
  retention(size: number): number;
  /** Keys one check reads for this limit, over every second of the cover's period. */
  readonly keysPerCheck: { readonly max: number; readonly mean: number };
}

/** One bucket size of an event: each check increments its current bucket. */
export interface CounterLevel {
  readonly size: number;
  readonly ttlSeconds: number;
}

/** How an event counts: its limits in policy order and the bucket levels they share. */
export interface EventPlan {
  readonly event: string;
  readonly algorithm: Algorithm;
  readonly edge: Edge;
  /** What a check decides when the store cannot answer. */
  readonly onStoreError: OnStoreError;
  readonly limits: readonly LimitPlan[];
  /** All limits of an event count the same admitted requests, so they share buckets per size. */
  readonly levels: readonly CounterLevel[];
  /** The largest cost a request may carry; beyond it no limit could ever allow it. */
  readonly maxCost: number;
  /** Quota leases, when the event allows them. */
  readonly lease?: LeasePlan | undefined;
  /**
   * The event's tiers, overrides and allow and deny lists, when it has any: a client's plan
   * is chosen there (client-plans.ts). Absent on the plans it chooses from.
   */
  readonly clients?: ClientPlans | undefined;
  /**
   * This plan's limits in `mode: shadow`, beside enforced ones: a plan of their own, counting
   * under `<event>~shadow` (shadowEvent), decided with the enforced limits as one request.
   */
  readonly shadow?: EventPlan | undefined;
  /** Every limit of this plan is in shadow: a check of it never refuses. */
  readonly shadowOnly?: true | undefined;
  /**
   * Made while serving for a limit no policy file names (runtime-plans.ts): requests choose
   * its values, so the feature cache keeps nothing of it (its states would be unbounded).
   */
  readonly uncached?: true | undefined;
}

export interface LeasePlan {
  readonly maxUnits: number;
  readonly lifeSeconds: number;
  /**
   * Seconds after a lease's second until its return can no longer come: its life and the
   * grace for a late return. A lease's buckets can shrink until then, so they stay live.
   */
  readonly holdSeconds: number;
}

export function planLimit(policy: LimitPolicy, algorithm: Algorithm, edge: Edge = 'whole'): LimitPlan {
  const { window, granularity } = policy;
  if (algorithm === 'fixed') {
    const cover = (now: number) => fixedCover(now, window);
    return {
      policy,
      algorithm,
      levels: [window],
      cover,
      oldestWeight: () => 1,
      // A fixed window frees all at once when it ends.
      releaseAt: (start, size) => start + size,
      retention: (size) => size,
      keysPerCheck: measureKeysPerCheck(cover, 1),
    };
  }
  const levels = slidingLevels(window, granularity);
  const cover = (now: number) => slidingCover(now, window, levels, edge);
  // The granularity bucket holding a bucket's newest possible second (never after now)
  // stops counting when it first lies partly outside the window (drop), or when it lies
  // wholly outside (whole, and weighted, which has faded to nothing by then).
  const lastCountedOffset = edge === 'drop' ? 0 : granularity - 1;
  return {
    policy,
    algorithm,
    levels,
    cover,
    oldestWeight: edge === 'weighted' ? (now) => edgeWeight(now, window, granularity) : () => 1,
    releaseAt: (start, size, now) =>
      bucketStart(Math.min(start + size - 1, now), granularity) + lastCountedOffset + window,
    retention: (size) => window + size,
    keysPerCheck: measureKeysPerCheck(cover, levels[0] ?? window),
  };
}

/**
 * Plans every event of a policy set; refuses limits that would read too many keys. An event's
 * tiers and overrides are plans of their own that count in the same buckets: every plan of an
 * event counts in every bucket size any of them reads, so a client moved from one to another
 * (an override added, a tier named) finds what it has counted already, mid-window.
 */
export function planEvents(policies: PolicySet): Map<string, EventPlan> {
  const plans = new Map<string, EventPlan>();
  const problems: string[] = [];
  for (const policy of policies.events.values()) {
    const { event, algorithm, edge, onStoreError, lease } = policy;
    const planSet = (limits: readonly LimitPolicy[], field: string): LimitPlan[] => {
      const limitPlans = limits.map((limit) => planLimit(limit, algorithm, edge));
      limitPlans.forEach((plan, index) => {
        if (plan.keysPerCheck.max > MAX_KEYS_PER_CHECK) {
          const { window, granularity } = plan.policy;
          problems.push(
            `event "${event}", field ${field}[${index}]: a ${formatDuration(window)} window in ${formatDuration(granularity)} buckets reads up to ${plan.keysPerCheck.max} keys per check (at most ${MAX_KEYS_PER_CHECK}); use a granularity that divides 60, or a coarser one`,
          );
        }
      });
      return limitPlans;
    };
    const own = planSet(policy.limits, 'limits');
    const tierSets = [...(policy.tiers ?? [])].map(
      ([tier, limits]) => [tier, planSet(limits, `tiers.${tier}.limits`)] as const,
    );
    const overrideSets = (policy.overrides ?? []).map((override, index) =>
      override.limits ? planSet(override.limits, `overrides[${index}].limits`) : undefined,
    );
    const allLimits = [
      own,
      ...tierSets.map(([, set]) => set),
      ...overrideSets.flatMap((set) => (set ? [set] : [])),
    ].flat();
    // Every limit set counts in every bucket size any limit of the event reads, shadow ones
    // included: a client moved between sets, or a limit switched from shadow to enforce, is
    // judged on what its requests counted there. Shadow limits beside enforced ones also count
    // apart (<event>~shadow), only what enforcing them would have admitted; a set with no
    // enforced limit counts under the event's own key, as if its limits were enforced, so that
    // enforcing them later keeps those counts.
    const levels = sharedLevels(allLimits);
    const shadowLevels = sharedLevels(allLimits.filter((limit) => limit.policy.shadow === true));
    const leasePlan = lease
      ? {
          maxUnits: lease.maxUnits,
          lifeSeconds: lease.life,
          holdSeconds: lease.life + DEFAULTS.leaseReturnGraceSeconds,
        }
      : undefined;
    const planOver = (
      limits: readonly LimitPlan[],
      counters: { event: string; levels: readonly CounterLevel[] },
      extra: Partial<Pick<EventPlan, 'clients' | 'shadow' | 'shadowOnly'>> = {},
    ): EventPlan => ({
      event: counters.event,
      algorithm,
      edge,
      onStoreError,
      limits,
      levels: counters.levels,
      maxCost: Math.min(...limits.map((limit) => limit.policy.limit)),
      ...(leasePlan ? { lease: leasePlan } : {}),
      ...extra,
    });
    const main = { event, levels };
    const apart = { event: shadowEvent(event), levels: shadowLevels };
    const planOf = (limits: readonly LimitPlan[], clients?: ClientPlans): EventPlan => {
      const enforced = limits.filter((limit) => limit.policy.shadow !== true);
      const shadows = limits.filter((limit) => limit.policy.shadow === true);
      const extra = clients ? { clients } : {};
      if (enforced.length === 0) return planOver(limits, main, { ...extra, shadowOnly: true });
      if (shadows.length === 0) return planOver(enforced, main, extra);
      return planOver(enforced, main, { ...extra, shadow: planOver(shadows, apart, { shadowOnly: true }) });
    };
    if (tierSets.length === 0 && overrideSets.length === 0 && !policy.allow && !policy.deny) {
      plans.set(event, planOf(own));
      continue;
    }
    const tiers = new Map(tierSets.map(([tier, set]) => [tier, planOf(set)]));
    const overrides = (policy.overrides ?? []).flatMap((override, index): OverridePlan[] => {
      const set = overrideSets[index];
      const plan = set ? planOf(set) : tiers.get(override.tier ?? '');
      return plan ? [{ match: override.match, plan, until: override.until }] : [];
    });
    const lists = { allow: policy.allow ?? [], deny: policy.deny ?? [] };
    plans.set(event, planOf(own, new ClientPlans({ tiers, overrides, lists })));
  }
  if (problems.length > 0) throw new PolicyError(policies.source, problems);
  return plans;
}

/**
 * A plan of one limit made while serving (Envoy's per-request `limit`): see runtime-plans.ts.
 * Counting on a configured event's counters (`counters`), it counts in every bucket size the
 * event does, for as long: a key's life is set by whichever check makes it, so a shorter one
 * would drop what the event's own windows still read. A sliding window that would read more
 * than MAX_KEYS_PER_CHECK keys is counted as fixed windows, as Envoy's own are.
 */
export function runtimePlan(
  event: string,
  policy: LimitPolicy,
  algorithm: Algorithm,
  onStoreError: OnStoreError,
  counters?: EventPlan,
): EventPlan {
  let limit = planLimit(policy, algorithm);
  if (limit.keysPerCheck.max > MAX_KEYS_PER_CHECK)
    limit = planLimit({ ...policy, granularity: policy.window }, (algorithm = 'fixed'));
  const ttlBySize = new Map((counters?.levels ?? []).map(({ size, ttlSeconds }) => [size, ttlSeconds]));
  for (const { size, ttlSeconds } of sharedLevels([limit]))
    ttlBySize.set(size, Math.max(ttlBySize.get(size) ?? 0, ttlSeconds));
  return {
    event,
    algorithm,
    edge: 'whole',
    onStoreError,
    limits: [limit],
    levels: [...ttlBySize].sort(([a], [b]) => b - a).map(([size, ttlSeconds]) => ({ size, ttlSeconds })),
    maxCost: policy.limit,
    uncached: true,
  };
}

/** The event shadow limits count under, beside enforced ones: a name no policy event can have. */
export function shadowEvent(event: string): string {
  return `${event}~shadow`;
}

function sharedLevels(limits: readonly LimitPlan[]): CounterLevel[] {
  const ttlBySize = new Map<number, number>();
  for (const limit of limits) {
    for (const size of limit.levels) {
      ttlBySize.set(size, Math.max(ttlBySize.get(size) ?? 0, limit.retention(size) + TTL_MARGIN_SECONDS));
    }
  }
  return [...ttlBySize].sort(([a], [b]) => b - a).map(([size, ttlSeconds]) => ({ size, ttlSeconds }));
}

/** The cover repeats with the period of its coarsest level, so one period gives exact figures. */
function measureKeysPerCheck(cover: (now: number) => BucketRun[], period: number): { max: number; mean: number } {
  let max = 0;
  let total = 0;
  for (let now = 0; now < period; now++) {
    const keys = bucketCount(cover(now));
    max = Math.max(max, keys);
    total += keys;
  }
  return { max, mean: Math.round((total / period) * 10) / 10 };
}
