// Plans made while serving, for limits no policy file names: Envoy's per-request `limit` (a
// descriptor's requests_per_unit and unit, which envoyproxy/ratelimit applies in place of the
// configured limit). Counted under the event and feature the caller names, so an override of a
// configured descriptor counts on that descriptor's own counters when its window's buckets are
// the same size. Bounded: the values come with requests.
import { LRUCache } from 'lru-cache';
import { DEFAULTS } from '../config/defaults.js';
import type { Algorithm, OnStoreError } from '../config/policies.js';
import { MAX_LIMIT } from '../config/policy-schema.js';
import { runtimePlan, type EventPlan } from './plan.js';

/** A limit a request brings with it. */
export interface RuntimeLimit {
  /** Named in decisions and RateLimit headers. */
  readonly name: string;
  readonly limit: number;
  /** Seconds. */
  readonly window: number;
  readonly algorithm: Algorithm;
  /** Seconds; the window for a fixed one, a divisor of it for a sliding one. */
  readonly granularity: number;
  readonly onStoreError: OnStoreError;
}

export class RuntimePlans {
  readonly #plans = new LRUCache<string, EventPlan>({ max: DEFAULTS.runtimePlans });

  /**
   * The plan of `limit` counted under `event`, made once and kept while it is used;
   * `counters`: the configured plan of that event, whose bucket sizes and lives it keeps.
   */
  planFor(event: string, limit: RuntimeLimit, counters?: EventPlan): EventPlan {
    const { name, window, algorithm, granularity, onStoreError } = limit;
    // The caller checked what the request sent (Envoy's uint32, 0 answered without counting).
    if (!Number.isSafeInteger(limit.limit) || limit.limit < 1 || limit.limit > MAX_LIMIT)
      throw new RangeError(`a limit must be a whole number from 1 to ${MAX_LIMIT} (got ${limit.limit})`);
    const key = `${event}\u0000${name}\u0000${algorithm}\u0000${limit.limit}\u0000${window}\u0000${granularity}\u0000${onStoreError}`;
    let plan = this.#plans.get(key);
    if (!plan) {
      plan = runtimePlan(event, { name, limit: limit.limit, window, granularity }, algorithm, onStoreError, counters);
      this.#plans.set(key, plan);
    }
    return plan;
  }
}
