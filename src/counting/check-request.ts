// A check request: its shape, and the validation that runs before anything is counted (a refused request touches no counter).
import { LimiterInputError } from './errors.js';
import type { EventPlan } from './plan.js';

/** One question to the limiter: may this feature do this event now, at this cost? */
export interface CheckRequest {
  /** An event of the policy file, e.g. `login`. */
  readonly event: string;
  /** Who is doing it: an IP, a user id, an e-mail; any string up to 1 KB. */
  readonly feature: string;
  /** How much of the limit this request uses; a positive integer, 1 by default. */
  readonly cost?: number | undefined;
}

/** Features longer than this many UTF-8 bytes are refused. */
export const MAX_FEATURE_BYTES = 1024;

export function eventPlan(plans: ReadonlyMap<string, EventPlan>, event: unknown): EventPlan {
  if (typeof event !== 'string' || event.length === 0) {
    throw new LimiterInputError('invalid_event', 'event must be a non-empty string');
  }
  const plan = plans.get(event);
  if (!plan) {
    const known = [...plans.keys()];
    const shown = known.slice(0, 10).join(', ') + (known.length > 10 ? ', …' : '');
    throw new LimiterInputError(
      'unknown_event',
      `unknown event ${JSON.stringify(event.slice(0, 64))}; known events: ${shown}`,
    );
  }
  return plan;
}

export function validFeature(feature: unknown): string {
  if (typeof feature !== 'string' || feature.length === 0) {
    throw new LimiterInputError('invalid_feature', 'feature must be a non-empty string');
  }
  if (!feature.isWellFormed()) {
    throw new LimiterInputError('invalid_feature', 'feature must be well-formed Unicode (it holds a lone surrogate)');
  }
  const bytes = Buffer.byteLength(feature, 'utf8');
  if (bytes > MAX_FEATURE_BYTES) {
    throw new LimiterInputError(
      'feature_too_long',
      `feature is ${bytes} bytes; at most ${MAX_FEATURE_BYTES} are allowed`,
    );
  }
  return feature;
}

export function validCost(cost: unknown, plan: EventPlan): number {
  if (cost === undefined) return 1;
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
    throw new LimiterInputError('invalid_cost', 'cost must be a positive integer');
  }
  if (cost > plan.maxCost) {
    const tightest = plan.limits.find((limit) => limit.policy.limit === plan.maxCost);
    throw new LimiterInputError(
      'cost_exceeds_limit',
      `cost ${cost} exceeds the limit ${plan.maxCost} of ${tightest?.policy.name ?? plan.event}; such a request could never be allowed`,
    );
  }
  return cost;
}
