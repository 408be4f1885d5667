// GCRA, the generic cell rate algorithm, on one value per client: its theoretical arrival time
// (TAT). A bucket of `burst` tokens refilled at `rate` admits a request of cost n at time t
// when max(TAT, t) + n·T − burst·T ≤ t, T being the time one token takes to come back;
// admitting moves TAT to max(TAT, t) + n·T. Pure: what-if and the accuracy lab decide with it too.
import type { Decision } from '../../decision.js';
import type { LimitPolicy } from '../../../config/policies.js';
import type { TokenBucketLimitPlan } from '../../plan-types.js';

/** One request's step through a bucket: the decision's figures, and the TAT it leaves. */
export interface GcraStep {
  readonly allowed: boolean;
  /** The TAT after the request: moved on when it was allowed and counts. */
  readonly tatUs: number;
  /** Tokens left after it. */
  readonly remaining: number;
  /** Microseconds until a request of this cost fits (0 when allowed). */
  readonly retryAfterUs: number;
  /** Microseconds until the bucket is full again. */
  readonly fullInUs: number;
}

/** A bucket's constants: T in µs, and the burst. */
export interface GcraBucket {
  readonly emissionUs: number;
  readonly burst: number;
}

/** GCRA for one request of `cost` at `nowUs`, given the stored TAT (undefined: a full bucket). */
export function gcraStep(
  bucket: GcraBucket,
  storedUs: number | undefined,
  nowUs: number,
  cost: number,
  counts: boolean,
): GcraStep {
  const { emissionUs, burst } = bucket;
  const tat = Math.max(storedUs ?? nowUs, nowUs);
  const next = tat + cost * emissionUs;
  const allowAt = next - burst * emissionUs;
  const allowed = allowAt <= nowUs;
  const after = allowed && counts ? next : tat;
  return {
    allowed,
    tatUs: after,
    remaining: Math.max(0, Math.floor((nowUs + burst * emissionUs - after) / emissionUs)),
    retryAfterUs: allowed ? 0 : allowAt - nowUs,
    fullInUs: after - nowUs,
  };
}

/** Seconds a client waits for `us`: to the millisecond, then up to the second (never 0 for a wait). */
function secondsOf(us: number): number {
  return Math.ceil(Math.ceil(us / 1000) / 1000);
}

/** The decision of a step, as any other limit's: `limit` is the burst, `resetSeconds` when the bucket is full. */
export function gcraDecision(limit: TokenBucketLimitPlan, step: GcraStep, version: string): Decision {
  const status = {
    name: limit.policy.name,
    limit: limit.policy.limit,
    window: limit.policy.window,
    remaining: step.remaining,
    resetSeconds: secondsOf(step.fullInUs),
  };
  return step.allowed
    ? { allowed: true, limits: [status], policyVersion: version }
    : {
        allowed: false,
        limits: [status],
        retryAfter: Math.max(1, secondsOf(step.retryAfterUs)),
        policyVersion: version,
      };
}

/** A token bucket's constants from its policy: T rounded up (never faster than the rate), the burst. */
export function planTokenBucketLimit(policy: LimitPolicy): TokenBucketLimitPlan {
  const { count, periodSeconds } = policy.rate ?? { count: policy.limit, periodSeconds: policy.window };
  return { policy, emissionUs: Math.ceil((periodSeconds * 1_000_000) / count), burst: policy.limit };
}
