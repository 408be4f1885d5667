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
import { bucketCount, bucketStart, levelName, type BucketRun } from './buckets.js';
import { calendarLevel } from './calendar.js';
import { ClientPlans, type OverridePlan } from './client-plans.js';
import type { CounterLevel, EventPlan, LimitPlan } from './plan-types.js';

export type { CounterLevel, EventPlan, LeasePlan, LimitPlan, ReservationPlan } from './plan-types.js';
import { edgeWeight, fixedCover, slidingCover, slidingLevels } from './cover.js';

/**
 * Seconds every counter outlives its last possible read: absorbs clock skew between
 * memgate instances and Memcached's whole-second expiry clock.
 */
export const TTL_MARGIN_SECONDS = 2;

/** A limit may read at most this many buckets per check; more would make every check slow. */
export const MAX_KEYS_PER_CHECK = 1000;

export function planLimit(policy: LimitPolicy, algorithm: Algorithm, edge: Edge = 'whole'): LimitPlan {
  const { window, granularity } = policy;
  if (policy.rate) {
    // One value per client, no buckets of time: decided in token-bucket.ts, not by the check step.
    const { count, periodSeconds } = policy.rate;
    return {
      policy,
      algorithm,
      levels: [],
      tokenBucket: { emissionUs: Math.ceil((periodSeconds * 1_000_000) / count), burst: policy.limit },
      cover: () => [],
      oldestWeight: () => 1,
      releaseAt: (start, size) => start + size,
      retention: () => 0,
      keysPerCheck: { max: 1, mean: 1 },
    };
  }
  if (policy.calendar) {
    // One bucket a period, from local midnight to local midnight; it frees all at once when
    // the period ends, however long the period was.
    const level = calendarLevel(policy.calendar);
    const longest = level.longestSeconds;
    return {
      policy,
      algorithm,
      levels: [longest],
      calendar: level,
      cover: (now) => {
        const { start, size } = level.periodAt(now);
        return [{ size, start, count: 1, calendar: level }];
      },
      oldestWeight: () => 1,
      releaseAt: (start, size) => start + size,
      retention: () => longest,
      keysPerCheck: { max: 1, mean: 1 },
    };
  }
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
    const reservationPlan = policy.reservations
      ? {
          lifeSeconds: policy.reservations.life,
          holdSeconds: policy.reservations.life + DEFAULTS.leaseReturnGraceSeconds,
        }
      : undefined;
    const holds = [leasePlan?.holdSeconds, reservationPlan?.holdSeconds].filter((hold) => hold !== undefined);
    const holdSeconds = holds.length > 0 ? Math.max(...holds) : undefined;
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
      ...(reservationPlan ? { reservations: reservationPlan } : {}),
      ...(holdSeconds !== undefined ? { holdSeconds } : {}),
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
  return {
    event,
    algorithm,
    edge: 'whole',
    onStoreError,
    limits: [limit],
    levels: mergeLevels([...(counters?.levels ?? []), ...sharedLevels([limit])]),
    maxCost: policy.limit,
    uncached: true,
  };
}

/** The event shadow limits count under, beside enforced ones: a name no policy event can have. */
export function shadowEvent(event: string): string {
  return `${event}~shadow`;
}

function sharedLevels(limits: readonly LimitPlan[]): CounterLevel[] {
  return mergeLevels(
    limits.flatMap((limit) =>
      limit.levels.map((size) => ({
        size,
        ttlSeconds: limit.retention(size) + TTL_MARGIN_SECONDS,
        ...(limit.calendar ? { calendar: limit.calendar } : {}),
      })),
    ),
  );
}

/** One level per name (a size, or a calendar window), living as long as the longest-lived asks; coarsest first. */
function mergeLevels(levels: readonly CounterLevel[]): CounterLevel[] {
  const byName = new Map<number | string, CounterLevel>();
  for (const level of levels) {
    const name = levelName(level);
    const known = byName.get(name);
    if (!known || known.ttlSeconds < level.ttlSeconds) byName.set(name, { ...level });
  }
  return [...byName.values()].sort((a, b) => b.size - a.size);
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
