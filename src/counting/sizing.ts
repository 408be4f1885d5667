import type { PolicySet } from '../config/policies.js';
import { TTL_MARGIN_SECONDS, type CounterLevel, type EventPlan } from './plan.js';

/**
 * What each policy costs Memcached, to size a cluster: keys one check reads, and items
 * one active feature keeps alive. Served at /policies and printed by `npm run policies`.
 */
export function policySizing(policies: PolicySet, plans: ReadonlyMap<string, EventPlan>) {
  return { source: policies.source, events: [...plans.values()].map(eventSizing) };
}

function eventSizing(plan: EventPlan) {
  return {
    event: plan.event,
    algorithm: plan.algorithm,
    ...(plan.algorithm === 'sliding' ? { edge: plan.edge } : {}),
    onStoreError: plan.onStoreError,
    ...(plan.lease ? { lease: { maxUnits: plan.lease.maxUnits, life: plan.lease.lifeSeconds } } : {}),
    incrementsPerCheck: plan.levels.length,
    // Limits may share buckets, so this is an upper bound on the keys one check touches.
    keysPerCheck: { max: plan.limits.reduce((sum, limit) => sum + limit.keysPerCheck.max, 0) },
    itemsPerFeature: itemsPerFeature(plan.levels),
    limits: plan.limits.map((limit) => ({
      ...limit.policy,
      bucketSizes: limit.levels,
      keysPerCheck: limit.keysPerCheck,
      itemsPerFeature: itemsPerFeature(
        limit.levels.map((size) => ({ size, ttlSeconds: limit.retention(size) + TTL_MARGIN_SECONDS })),
      ),
    })),
  };
}

/** Most live Memcached items one active feature can hold: per level, one per bucket its TTL spans. */
export function itemsPerFeature(levels: readonly CounterLevel[]): number {
  return levels.reduce((sum, { size, ttlSeconds }) => sum + Math.ceil(ttlSeconds / size) + 1, 0);
}
