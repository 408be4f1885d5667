import type { EventPolicy, PolicySet } from '../config/policies.js';
import { TTL_MARGIN_SECONDS, type CounterLevel, type EventPlan, type LimitPlan } from './plan.js';

/**
 * What each policy costs Memcached, to size a cluster: keys one check reads, and items
 * one active feature keeps alive. Served at /policies and printed by `npm run policies`.
 */
export function policySizing(policies: PolicySet, plans: ReadonlyMap<string, EventPlan>, now = Date.now()) {
  return {
    source: policies.source,
    events: [...plans.values()].map((plan) => eventSizing(plan, policies.events.get(plan.event), now)),
  };
}

function eventSizing(plan: EventPlan, policy: EventPolicy | undefined, now: number) {
  return {
    event: plan.event,
    algorithm: plan.algorithm,
    ...(plan.algorithm === 'sliding' ? { edge: plan.edge } : {}),
    onStoreError: plan.onStoreError,
    ...(plan.lease ? { lease: { maxUnits: plan.lease.maxUnits, life: plan.lease.lifeSeconds } } : {}),
    ...(plan.reservations ? { reservations: { life: plan.reservations.lifeSeconds } } : {}),
    incrementsPerCheck: plan.levels.length,
    // Limits may share buckets, so this is an upper bound on the keys one check touches.
    keysPerCheck: { max: plan.limits.reduce((sum, limit) => sum + limit.keysPerCheck.max, 0) },
    // A token bucket keeps one value per client and no buckets.
    itemsPerFeature: plan.algorithm === 'token-bucket' ? 1 : itemsPerFeature(plan.levels),
    limits: plan.limits.map(limitSizing),
    ...(plan.clients && plan.clients.tiers.size > 0
      ? {
          tiers: Object.fromEntries(
            [...plan.clients.tiers].map(([tier, tierPlan]) => [tier, tierPlan.limits.map(limitSizing)]),
          ),
        }
      : {}),
    ...(policy?.overrides
      ? {
          overrides: {
            count: policy.overrides.length,
            lapsed: policy.overrides.filter((override) => override.until !== undefined && override.until <= now).length,
          },
        }
      : {}),
    ...(policy?.allow ? { allow: policy.allow.length } : {}),
    ...(policy?.deny ? { deny: policy.deny.length } : {}),
  };
}

function limitSizing(limit: LimitPlan) {
  return {
    ...limit.policy,
    bucketSizes: limit.levels,
    keysPerCheck: limit.keysPerCheck,
    itemsPerFeature: limit.tokenBucket
      ? 1
      : itemsPerFeature(limit.levels.map((size) => ({ size, ttlSeconds: limit.retention(size) + TTL_MARGIN_SECONDS }))),
  };
}

/**
 * What the feature cache (feature-cache.ts) counts a client at against MEMGATE_CACHE_MB: the
 * most its objects can hold of the heap, measured with heap snapshots and `--expose-gc`
 * (the heap 5,000 more cached clients took, at the second each plan's windows hold the
 * most buckets, each client denied so that it keeps its last denial too; `npm run bench --
 * --suite memory`, scripts/bench/memory-worker.ts). Per client: its LRU slot, entry and
 * name (CLIENT_CACHE_BYTES, plus 2 bytes a UTF-16 unit of its name). Per event it was
 * checked for (stateCacheBytes): its state, key base, window and denial, 300 bytes a
 * limit (its bucket list, settled sums, its part of the denial), and 120 bytes a bucket
 * its windows can hold (the bucket, its place in the window's maps, a live bucket's key).
 * Measured, the heap is 71% to 93% of the estimate at that second over 12 policy shapes
 * (1 s to 1 day windows, fixed and sliding, 1 to 5 limits, leases), and about half of it
 * at an average second; limits sharing their buckets (59 s, 58 s and 57 s windows) cost less.
 */
export const CLIENT_CACHE_BYTES = 300;
const STATE_BYTES = 1700;
const LIMIT_BYTES = 300;
const BUCKET_BYTES = 120;

/** The most one client's state of `plan` can hold: every bucket of every window, plus those ahead of now. */
export function stateCacheBytes(plan: EventPlan, skewSeconds: number): number {
  const ahead = 2 + skewSeconds + (plan.holdSeconds ?? 0);
  const buckets = plan.limits.reduce((sum, limit) => sum + limit.keysPerCheck.max + ahead, 0);
  return STATE_BYTES + LIMIT_BYTES * plan.limits.length + BUCKET_BYTES * buckets;
}

/** Most live Memcached items one active feature can hold: per level, one per bucket its TTL spans. */
export function itemsPerFeature(levels: readonly CounterLevel[]): number {
  return levels.reduce((sum, { size, ttlSeconds }) => sum + Math.ceil(ttlSeconds / size) + 1, 0);
}
