// Plans made while serving, for limits no policy file names: Envoy's per-request `limit` (a
// descriptor's requests_per_unit and unit, which envoyproxy/ratelimit applies in place of the
// configured limit). Counted under the event and feature the caller names, so an override of a
// configured descriptor counts on that descriptor's own counters when its window's buckets are
// the same size. Bounded: the values come with requests.
import { DEFAULTS } from '../config/defaults.js';
import type { LimitPolicy, OnStoreError } from '../config/policies.js';
import { MAX_LIMIT } from '../config/policy-schema.js';
import { planFixedLimit } from './algorithms/fixed/plan.js';
import { partFor } from './algorithms/parts.js';
import { MAX_KEYS_PER_CHECK, mergeLevels, sharedLevels } from './algorithms/windows/plan.js';
import { LruMap } from './lru.js';
import type { EventPlan, WindowLimitPlan, WindowsPlan } from './plan-types.js';

/** A limit a request brings with it. */
export interface RuntimeLimit {
  /** Named in decisions and RateLimit headers. */
  readonly name: string;
  readonly limit: number;
  /** Seconds. */
  readonly window: number;
  /** Envoy's limits count in windows of time: fixed, or sliding. */
  readonly algorithm: 'sliding' | 'fixed';
  /** Seconds; the window for a fixed one, a divisor of it for a sliding one. */
  readonly granularity: number;
  readonly onStoreError: OnStoreError;
}

export class RuntimePlans {
  readonly #plans = new LruMap<string, WindowsPlan>({ max: DEFAULTS.runtimePlans });

  /**
   * The plan of `limit` counted under `event`, made once and kept while it is used;
   * `counters`: the configured plan of that event, whose bucket sizes and lives it keeps.
   */
  planFor(event: string, limit: RuntimeLimit, counters?: EventPlan): WindowsPlan {
    const { name, window, algorithm, granularity, onStoreError } = limit;
    // The caller checked what the request sent (Envoy's uint32); a limit of 0 admits nothing.
    if (!Number.isSafeInteger(limit.limit) || limit.limit < 0 || limit.limit > MAX_LIMIT)
      throw new RangeError(`a limit must be a whole number from 0 to ${MAX_LIMIT} (got ${limit.limit})`);
    const key = `${event}\u0000${name}\u0000${algorithm}\u0000${limit.limit}\u0000${window}\u0000${granularity}\u0000${onStoreError}`;
    let plan = this.#plans.get(key);
    if (!plan) {
      plan = runtimePlan(event, { name, limit: limit.limit, window, granularity }, algorithm, onStoreError, counters);
      this.#plans.set(key, plan);
    }
    return plan;
  }
}

/**
 * A plan of one limit made while serving. Counting on a configured event's counters
 * (`counters`), it counts in every bucket size the event does, for as long: a key's life is set
 * by whichever check makes it, so a shorter one would drop what the event's own windows still
 * read. A sliding window that would read more than MAX_KEYS_PER_CHECK keys is counted as fixed
 * windows, as Envoy's own are.
 */
export function runtimePlan(
  event: string,
  policy: LimitPolicy,
  algorithm: 'sliding' | 'fixed',
  onStoreError: OnStoreError,
  counters?: EventPlan,
): WindowsPlan {
  // Envoy's algorithms are windows' (config/envoy-config.ts): their part plans a window's limit.
  let limit = partFor(algorithm).planLimit(policy, 'whole') as WindowLimitPlan;
  if (limit.keysPerCheck.max > MAX_KEYS_PER_CHECK) {
    limit = planFixedLimit({ ...policy, granularity: policy.window });
    algorithm = 'fixed';
  }
  const counted = counters && 'levels' in counters ? counters.levels : [];
  return {
    event,
    algorithm,
    edge: 'whole',
    onStoreError,
    limits: [limit],
    levels: mergeLevels([...counted, ...sharedLevels([limit])]),
    maxCost: policy.limit,
    uncached: true,
  };
}
