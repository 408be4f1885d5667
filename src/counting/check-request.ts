// The first stage of a check: what a caller asks, validated into plain items before anything
// is counted (a refused request touches no counter). Every surface (check, peek, batch items,
// checks together, lease takes) turns its request into CheckItems here.
import type { HowDecided } from './check-context.js';
import { tierPlan, type Listed } from './client-plans.js';
import type { Decision } from './decision.js';
import { LimiterInputError } from './errors.js';
import type { EventPlan } from './plan.js';
import type { RuntimePlans, RuntimeLimit } from './runtime-plans.js';
import { MAX_FEATURE_BYTES } from '../shared/feature-name.js';

export { MAX_FEATURE_BYTES };

/** One question to the limiter: may this feature do this event now, at this cost? */
export interface CheckRequest {
  /** An event of the policy file, e.g. `login`. */
  readonly event: string;
  /** Who is doing it: an IP, a user id, an e-mail; any string up to 1 KB. */
  readonly feature: string;
  /** How much of the limit this request uses; a positive integer, 1 by default. */
  readonly cost?: number | undefined;
  /**
   * The client's tier (free, pro, ...), as a caller memgate trusts knows it: one of the
   * event's `tiers`. An override naming the client wins over it.
   */
  readonly tier?: string | undefined;
}

/** One check of a request decided with others (see Limiter.checkTogether). */
export interface TogetherCheck extends CheckRequest {
  /** Decided without counting: whether a request of `cost` has room now. Default false. */
  readonly peek?: boolean;
  /**
   * Whether its denial denies the request. Default true. A check not enforced (a shadow
   * limit) is decided as if it were and counted only when its limits allow it, so its
   * counters hold what enforcing it would; it never denies the others.
   */
  readonly enforced?: boolean;
  /**
   * A limit the request brings in place of the event's (Envoy's per-request `limit`), counted
   * under `event` and `feature`; `event` need not be one of the policies'.
   */
  readonly limit?: RuntimeLimit;
}

/**
 * A lease's record of its units, written with its increments so that its return finds them:
 * under an id made of the second they are counted at and this random `token`.
 */
export interface LeaseRecord {
  readonly token: string;
  readonly ttlSeconds: number;
}

/** A check validated: what the pipeline decides. Plain data; the same for every surface. */
export interface CheckItem {
  readonly plan: EventPlan;
  readonly feature: string;
  /** What it asks room for; for a lease (`upTo`), the most it takes. */
  readonly cost: number;
  /** Counted when the request is allowed; false for a peek. */
  readonly counting: boolean;
  /** Its denial denies the request (false: a shadow check). */
  readonly enforced: boolean;
  /** The cost exceeds a limit of the event: no request of it can ever be allowed, so it is never counted. */
  readonly impossible: boolean;
  /** A lease: takes what remains, from 1 up to `cost`. */
  readonly upTo?: boolean;
  /** A lease's record of its units. */
  readonly record?: LeaseRecord;
  /** A list holds the client: decided without limits or counts (`plan` is the event's own). */
  readonly listed?: Listed;
  /** Takes the check's decision instead of onDecision: a part of a request told as one (shadow.ts). */
  readonly told?: (decision: Decision, how: HowDecided) => void;
}

/** Milliseconds since the epoch, read only when an override can lapse. */
export type WallClock = () => number;

/**
 * The plan for a request's client (the event's own, a tier's, an override's) or the list
 * holding it. `lists: false` leaves lists out (a lease's limits). An event without tiers,
 * overrides or lists costs this one property read.
 */
export function clientPlan(
  base: EventPlan,
  feature: string,
  tier: unknown,
  now: WallClock,
  { lists = true }: { lists?: boolean } = {},
): EventPlan | Listed {
  const named = tier === undefined ? undefined : tierPlan(base, tier);
  if (!base.clients) return base;
  return base.clients.choose(base, feature, named, now, { lists });
}

// Bytes sent that are not UTF-8 reach here as a lone surrogate too (see http/json-body.ts).
const NOT_WELL_FORMED = (field: string) =>
  `${field} must be well-formed Unicode: its bytes are not UTF-8, or it holds a lone surrogate`;

/** A check that counts (`check`) or only asks (`peek`), refusing a cost beyond the event's limits. */
export function checkItem(
  plans: ReadonlyMap<string, EventPlan>,
  request: CheckRequest,
  kind: 'check' | 'peek',
  now: WallClock = Date.now,
): CheckItem {
  const base = eventPlan(plans, request.event);
  const feature = validFeature(request.feature);
  const plan = clientPlan(base, feature, request.tier, now);
  if (typeof plan === 'string') {
    // A listed client is decided without limits: any cost is a question, none is beyond them.
    validCost(request.cost, base, { beyondLimit: true });
    return {
      plan: base,
      feature,
      cost: 0,
      counting: kind === 'check',
      enforced: true,
      impossible: false,
      listed: plan,
    };
  }
  return {
    plan,
    feature,
    // A limit in shadow refuses nothing, a cost beyond it included (its decision says so).
    cost: validCost(request.cost, plan, { beyondLimit: plan.shadowOnly === true }),
    counting: kind === 'check',
    enforced: true,
    impossible: false,
  };
}

/**
 * A check of several decided as one request. Any positive cost is a question here: one beyond
 * a limit is answered "never" (denied without a retryAfter) instead of refused, since the
 * other checks of the request still want their answers (Envoy's hits_addend).
 */
export function togetherItem(
  plans: ReadonlyMap<string, EventPlan>,
  check: TogetherCheck,
  now: WallClock = Date.now,
  runtime?: RuntimePlans,
): CheckItem {
  const base =
    check.limit && runtime
      ? runtime.planFor(validEvent(check.event), check.limit, plans.get(check.event))
      : eventPlan(plans, check.event);
  const feature = validFeature(check.feature);
  const chosen = clientPlan(base, feature, check.tier, now);
  const plan = typeof chosen === 'string' ? base : chosen;
  const cost = validCost(check.cost, plan, { beyondLimit: true });
  // Listed: allowed, read but never counted nor denying (allow); never allowed (deny). A plan
  // wholly in shadow never denies. (Envoy's events, the only ones decided together, have no
  // memgate shadow limits: a plan's shadow limits beside enforced ones are left out here.)
  const impossible = chosen === 'deny' || cost > plan.maxCost;
  return {
    plan,
    feature,
    cost,
    counting: check.peek !== true && !impossible && chosen !== 'allow',
    enforced: check.enforced !== false && chosen !== 'allow' && plan.shadowOnly !== true,
    impossible,
  };
}

function validEvent(event: unknown): string {
  if (typeof event !== 'string' || event.length === 0) {
    throw new LimiterInputError('invalid_event', 'event must be a non-empty string');
  }
  if (!event.isWellFormed()) {
    throw new LimiterInputError('invalid_event', NOT_WELL_FORMED('event'));
  }
  return event;
}

export function eventPlan(plans: ReadonlyMap<string, EventPlan>, event: unknown): EventPlan {
  const name = validEvent(event);
  const plan = plans.get(name);
  if (!plan) {
    const known = [...plans.keys()];
    const shown = known.slice(0, 10).join(', ') + (known.length > 10 ? ', …' : '');
    throw new LimiterInputError(
      'unknown_event',
      `unknown event ${JSON.stringify(name.slice(0, 64))}; known events: ${shown}`,
    );
  }
  return plan;
}

export function validFeature(feature: unknown): string {
  if (typeof feature !== 'string' || feature.length === 0) {
    throw new LimiterInputError('invalid_feature', 'feature must be a non-empty string');
  }
  if (!feature.isWellFormed()) {
    throw new LimiterInputError('invalid_feature', NOT_WELL_FORMED('feature'));
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

/** A positive integer cost, 1 when absent; beyond the event's limits only with `beyondLimit`. */
export function validCost(cost: unknown, plan: EventPlan, options: { beyondLimit?: boolean } = {}): number {
  if (cost === undefined) return 1;
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
    throw new LimiterInputError('invalid_cost', 'cost must be a positive integer');
  }
  if (cost > plan.maxCost && options.beyondLimit !== true) {
    const tightest = plan.limits.find((limit) => limit.policy.limit === plan.maxCost);
    throw new LimiterInputError(
      'cost_exceeds_limit',
      `cost ${cost} exceeds the limit ${plan.maxCost} of ${tightest?.policy.name ?? plan.event}; such a request could never be allowed`,
    );
  }
  return cost;
}
