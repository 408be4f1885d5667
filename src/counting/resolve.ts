// The first stage of every decision: what a caller asks, validated and resolved into the plain
// items the step decides (a refused request touches no counter). Every surface (check, peek,
// batch items, checks together, lease takes, reservations, Envoy's descriptors, /gate) asks
// here, and every one is resolved the same way: lists, then overrides, tiers and the event's
// own limits, with the plan's shadow limits as a companion item. Every way to name a client
// (these, settles, returns, refunds, resets, releases) takes its feature from validFeature: in
// its one spelling, so an address is one client, one key and one rule's, however it is sent.
import { canonicalFeature } from '../shared/client-address.js';
import type { CheckRequest } from '../shared/contract.js';
import { MAX_FEATURE_BYTES } from '../shared/feature-name.js';
import type { CheckItem } from './check-item.js';
import { tierPlan } from './client-plans.js';
import { LimiterInputError } from './errors.js';
import type { EventPlan, Listed } from './plan-types.js';
import type { RuntimeLimit, RuntimePlans } from './runtime-plans.js';

export { MAX_FEATURE_BYTES };

/** One question to the limiter: may this feature do this event now, at this cost? (the contract's) */
export type { CheckRequest };

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
  /**
   * Reserves its cost (an event with a `reservations` section; at most one check of a request):
   * counted as a check's, and recorded for a settle. Its decision holds the `reservation` when
   * the request was allowed.
   */
  readonly reserve?: boolean;
}

/** What kind of question: a check counts, a peek does not, a lease takes what remains, a reservation counts what it reserves. */
export type AskKind = 'check' | 'peek' | 'lease' | 'reserve';

/** A question as every surface asks it (a check's request is one as it is). */
export interface Ask {
  readonly event: unknown;
  readonly feature: unknown;
  /** Its cost as the caller sent it (a lease's units, a reservation's reserve): validated here. */
  readonly cost?: unknown;
  readonly tier?: unknown;
  /** Whether its denial denies the request (false: Envoy's shadow_mode and quota_mode). Default true. */
  readonly enforced?: boolean | undefined;
  /** A limit the request brings in place of the event's (Envoy's per-request `limit`). */
  readonly limit?: RuntimeLimit | undefined;
}

/** What the resolution of a request may use beside the plans. */
export interface ResolveOptions {
  /** Milliseconds since the epoch, read only when an override can lapse. */
  readonly now: WallClock;
  /**
   * A cost beyond the limits: `refuse` it (cost_exceeds_limit, a lone check's answer), or
   * `answer` it as a check that can never pass (a request of several checks, whose other
   * checks still want their answers: Envoy's hits_addend).
   */
  readonly beyondLimit: 'refuse' | 'answer';
  /** Lists that hold before the event's own (the gateway section's, at /gate). */
  readonly lists?: { listed(feature: string): Listed | undefined } | undefined;
  /** Where the plans of limits requests bring are made and kept. */
  readonly runtime?: RuntimePlans | undefined;
  /** For a lease: the most units one may take (its policy's maxUnits). */
  readonly maxUnits?: number | undefined;
}

/** Milliseconds since the epoch, read only when an override can lapse. */
export type WallClock = () => number;

/** Resolves one question into the item the step decides, or refuses it (LimiterInputError). */
export function resolveAsk(
  plans: ReadonlyMap<string, EventPlan>,
  kind: AskKind,
  ask: Ask,
  options: ResolveOptions,
): CheckItem {
  const base =
    ask.limit && options.runtime
      ? options.runtime.planFor(validEvent(ask.event), ask.limit, plans.get(ask.event as string))
      : eventPlan(plans, ask.event);
  const feature = validFeature(ask.feature);
  const counting = kind !== 'peek';
  const hold = kind === 'lease' ? 'lease' : kind === 'reserve' ? 'reservation' : undefined;
  // Lists given beside the plans (a gateway's) hold before anything the event says, its tiers included.
  const chosen = options.lists?.listed(feature) ?? clientPlanOf(base, feature, ask.tier, options.now);
  if (typeof chosen === 'string') {
    // A listed client is decided without limits: any cost is a question, none is beyond them.
    costOf(kind, ask.cost, base, { beyondLimit: true, maxUnits: options.maxUnits });
    return {
      plan: base,
      feature,
      cost: 0,
      counting,
      enforced: ask.enforced !== false,
      impossible: false,
      listed: chosen,
      hold: undefined,
      shadow: undefined,
    };
  }
  const plan = chosen;
  // A limit in shadow refuses nothing, a cost beyond it included (its answer says so).
  const beyondLimit = options.beyondLimit === 'answer' || plan.shadowOnly === true;
  const cost = costOf(kind, ask.cost, plan, { beyondLimit, maxUnits: options.maxUnits });
  const { shadow } = plan;
  // Every item has every field, in one order: one shape for the engine, whatever the surface.
  return {
    plan,
    feature,
    cost,
    counting,
    enforced: ask.enforced !== false && plan.shadowOnly !== true,
    impossible: cost > plan.maxCost,
    listed: undefined,
    hold,
    shadow: shadow && {
      plan: shadow,
      feature,
      cost,
      counting,
      enforced: false,
      impossible: cost > shadow.maxCost,
      listed: undefined,
      hold: undefined,
      shadow: undefined,
    },
  };
}

/** The cost an ask carries: a lease's units (at most maxUnits and the tightest limit), a reservation's reserve, a check's cost. */
function costOf(
  kind: AskKind,
  cost: unknown,
  plan: EventPlan,
  options: { beyondLimit: boolean; maxUnits: number | undefined },
): number {
  if (kind === 'lease') return Math.min(validUnits(cost, 'units', 1), options.maxUnits ?? Infinity, plan.maxCost);
  if (kind === 'reserve') {
    const reserve = cost;
    if (typeof reserve !== 'number' || !Number.isSafeInteger(reserve) || reserve < 1)
      throw new LimiterInputError('invalid_cost', 'reserve must be a positive integer');
    return validCost(reserve, plan, { beyondLimit: options.beyondLimit });
  }
  return validCost(cost, plan, { beyondLimit: options.beyondLimit });
}

// Bytes sent that are not UTF-8 reach here as a lone surrogate too (see http/json-body.ts).
const NOT_WELL_FORMED = (field: string) =>
  `${field} must be well-formed Unicode: its bytes are not UTF-8, or it holds a lone surrogate`;

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

/**
 * The feature a request names, validated, in its one spelling (shared/client-address.ts): an
 * IP address however it is written is one client (`::ffff:10.9.9.9` is `10.9.9.9`, `2001:DB8::7`
 * is `2001:db8::7`), on every event, since a feature that parses as an address is an address.
 * Anything else is the feature as sent.
 */
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
  return canonicalFeature(feature);
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

export function validUnits(units: unknown, name: 'units' | 'unused', min: 0 | 1): number {
  if (typeof units !== 'number' || !Number.isSafeInteger(units) || units < min) {
    throw new LimiterInputError('invalid_cost', `${name} must be a ${min === 1 ? 'positive' : 'non-negative'} integer`);
  }
  return units;
}

/** The plan the event gives a client (the event's own, a tier's, an override's), or the event's list holding it. */
function clientPlanOf(base: EventPlan, feature: string, tier: unknown, now: WallClock): EventPlan | Listed {
  const named = tier === undefined ? undefined : tierPlan(base, tier);
  return base.clients ? base.clients.choose(base, feature, named, now, { lists: true }) : (named ?? base);
}

/** The plan of a client for a correction (a refund, a settle): its tier's or an override's, lists aside. */
export function correctedPlan(base: EventPlan, feature: string, tier: unknown, now: WallClock): EventPlan {
  const named = tier === undefined ? undefined : tierPlan(base, tier);
  if (!base.clients) return named ?? base;
  const chosen = base.clients.choose(base, feature, named, now, { lists: false });
  return typeof chosen === 'string' ? base : chosen;
}
