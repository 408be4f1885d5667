// How a concurrency limit counts: its limit is slots, its window the timeout after which a slot
// never released frees itself.
import type { LimitPolicy } from '../../../config/policies.js';
import type { ConcurrencyLimitPlan, ConcurrencyPlan } from '../../plan-types.js';

export type { ConcurrencyLimitPlan, ConcurrencyPlan };

/** What every plan of an event shares: its clients' slot keys, as many as the largest limit. */
export interface ConcurrencyCounters {
  readonly slots: number;
}

export function planConcurrencyLimit(policy: LimitPolicy): ConcurrencyLimitPlan {
  return { policy, timeoutSeconds: policy.window };
}

export function concurrencyCounters(limits: readonly ConcurrencyLimitPlan[]): ConcurrencyCounters {
  return { slots: Math.max(...limits.map((limit) => limit.policy.limit)) };
}
