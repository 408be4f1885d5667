// Reservations through Envoy (docs/envoy.md, "Costs known after the response"): the request's
// call reserves its descriptor's hits_addend where the descriptor's rate_limit takes
// reservations, and answers the reservation's id in dynamic_metadata; Envoy's stream-done call
// (apply_on_stream_done) carries it back as a `memgate_reservation` entry, with the actual cost
// as hits_addend, and settles it. envoy-decisions.ts decides the rest of each call.
import { RESERVATION_ENTRY, type EnvoyConfig, type EnvoyRateLimit } from '../config/envoy-config.js';
import { matchEnvoyDescriptor } from '../config/envoy-match.js';
import type { Decision } from '../counting/decision.js';
import { LimiterInputError } from '../counting/errors.js';
import type { Limiter, Reservation, TogetherCheck, TogetherDecision } from '../counting/limiter.js';
import { featureName } from '../shared/feature-name.js';
import { StoreUnavailableError } from '../store/counter-store.js';
import type { RateLimitDescriptor, RateLimitRequest } from './messages.js';

/** What the decider asks of the limiter: checks together, and a reservation's reserve and settle. */
export type EnvoyLimiter = Pick<Limiter, 'checkTogether' | 'check' | 'settle'>;

/** A settle memgate did not make, and why; the call is answered all the same. */
export interface SettleRefusal {
  readonly domain: string;
  /** The event of the descriptor's limit; undefined when no limit matched. */
  readonly event: string | undefined;
  /**
   * The limiter's code (unknown_reservation, reservation_expired, reservation_settled,
   * reserve_off…), store_unavailable when Memcached did not answer, or take_back_failed when a
   * refused call's reservation could not be taken back.
   */
  readonly code: string;
  readonly message: string;
}

/** What a call's settles came to, before the rest of the call is decided. */
export interface SettlePass {
  /**
   * The call's descriptors as the rest of the decision sees them: a settle memgate could not
   * verify becomes its descriptor without the entry, asked with a hits_addend of 0.
   */
  readonly descriptors: readonly RateLimitDescriptor[];
  /** Per descriptor, the limit a settle was made against (or verified as made already); it needs no other decision. */
  readonly settled: readonly (EnvoyRateLimit | undefined)[];
}

/**
 * Settles the reservations a call names, each against the limit its other entries match.
 *
 * A settle is answered OK whatever comes of it: the cost was incurred, and Envoy ignores a
 * stream-done call's answer. One memgate cannot verify (an id it never gave, or too old to
 * tell, a limit without reservations) is not trusted with that OK: its descriptor is decided
 * as a check-only question (hits_addend 0), which counts nothing and is OVER_LIMIT when the
 * limit is full. So an entry a client managed to forge into a request's call can neither
 * change a count nor pass a full limit.
 */
export async function settleNamed(
  limiter: EnvoyLimiter,
  config: EnvoyConfig | undefined,
  request: RateLimitRequest,
  onRefused: (refusal: SettleRefusal) => void,
): Promise<SettlePass> {
  const asked = request.descriptors.map(settleAsked);
  if (asked.every((one) => one === undefined)) return { descriptors: request.descriptors, settled: [] };
  const settled: (EnvoyRateLimit | undefined)[] = [];
  const descriptors = await Promise.all(
    request.descriptors.map(async (descriptor, index): Promise<RateLimitDescriptor> => {
      const one = asked[index];
      if (!one) return descriptor;
      const outcome = await settleOne(limiter, config, request, descriptor, one, onRefused);
      if (outcome.settled) {
        settled[index] = outcome.settled;
        return descriptor;
      }
      // Unverified: the descriptor without the entry, as a question that counts nothing.
      return { entries: one.entries, hitsAddend: 0 };
    }),
  );
  return { descriptors, settled };
}

interface SettleAsked {
  /** Undefined when the descriptor names several: none of them is settled. */
  readonly id: string | undefined;
  /** The descriptor's other entries: they name the limit, as in the request's call. */
  readonly entries: RateLimitDescriptor['entries'];
}

function settleAsked(descriptor: RateLimitDescriptor): SettleAsked | undefined {
  const named = descriptor.entries.filter((entry) => entry.key === RESERVATION_ENTRY);
  if (named.length === 0) return undefined;
  return {
    id: named.length === 1 ? named[0]?.value : undefined,
    entries: descriptor.entries.filter((entry) => entry.key !== RESERVATION_ENTRY),
  };
}

/** Codes of a settle refused for a reservation memgate holds a record of: the settle is verified. */
const VERIFIED_REFUSALS: ReadonlySet<string> = new Set(['reservation_settled']);

async function settleOne(
  limiter: EnvoyLimiter,
  config: EnvoyConfig | undefined,
  request: RateLimitRequest,
  descriptor: RateLimitDescriptor,
  asked: SettleAsked,
  onRefused: (refusal: SettleRefusal) => void,
): Promise<{ readonly settled?: EnvoyRateLimit }> {
  const { domain } = request;
  const match = config ? matchEnvoyDescriptor(config, domain, asked.entries) : undefined;
  const event = match?.kind === 'limit' ? match.event : undefined;
  const refuse = (code: string, message: string) => {
    onRefused({ domain, event, code, message });
  };
  if (match?.kind !== 'limit' || !match.rateLimit.reservations || match.rateLimit.requestsPerUnit === 0) {
    refuse('reserve_off', `the descriptor's other entries match no limit that takes reservations`);
    return {};
  }
  if (asked.id === undefined) {
    refuse('unknown_reservation', `the descriptor has several ${RESERVATION_ENTRY} entries`);
    return {};
  }
  // The actual cost: the descriptor's own hits_addend, as Envoy sends it; 0 refunds the whole reservation.
  const cost = descriptor.hitsAddend ?? Math.max(1, request.hitsAddend);
  try {
    await limiter.settle({ event: match.event, feature: featureName(match.feature), id: asked.id, cost });
    return { settled: match.rateLimit };
  } catch (error) {
    if (error instanceof LimiterInputError) {
      refuse(error.code, error.message);
      return VERIFIED_REFUSALS.has(error.code) ? { settled: match.rateLimit } : {};
    }
    if (error instanceof StoreUnavailableError) {
      // Nothing can be counted now, and the reservation stays counted as reserved: answer OK.
      refuse('store_unavailable', error.message);
      return { settled: match.rateLimit };
    }
    throw error;
  }
}

/** What the limiter decided of a call's checks, one of which reserved. */
export interface ReservingOutcome extends TogetherDecision {
  /** The reservation made: the call was allowed and counted. */
  readonly reservation?: Reservation;
}

/**
 * Decides a call's checks where `checks[at]` reserves its cost instead of counting it, keeping
 * the call all-or-nothing: when the call is refused, nothing is counted and nothing reserved.
 *
 * A reservation is one check of its own (Limiter.check with `reserve`), not one of a
 * checkTogether, so a call with other checks is decided in three steps: the whole call as a
 * question; the reservation; the other checks counted together. A call the question refuses
 * is decided as a call without a reservation (checkTogether, which counts nothing of a refused
 * call), so that its refusals are told as any call's; should that one be allowed after all (a
 * race: room was freed meanwhile), the reserving check counted its cost as a plain hit, and no
 * reservation is answered. A reservation refused counts nothing. Only when the other checks
 * refuse after the reservation was made, a race with another call, is the reservation taken
 * back (settled at a cost of 0), having been counted for that moment.
 */
export async function decideReserving(
  limiter: EnvoyLimiter,
  checks: readonly TogetherCheck[],
  at: number,
  onRefused: (refusal: Omit<SettleRefusal, 'domain'>) => void,
): Promise<ReservingOutcome> {
  const reserving = checks[at] as TogetherCheck;
  const enforced = reserving.enforced !== false;
  const reserve = { event: reserving.event, feature: reserving.feature, reserve: reserving.cost ?? 1 };
  const others = checks.filter((_, i) => i !== at);
  if (others.length === 0) {
    const decision = await limiter.check(reserve);
    return outcomeOf([decision], decision, enforced);
  }
  const asked = await limiter.checkTogether(checks.map((check) => ({ ...check, peek: true })));
  if (!asked.allowed) return limiter.checkTogether(checks);
  const decision = await limiter.check(reserve);
  if (!decision.allowed && enforced) return outcomeOf(replaced(asked.checks, at, decision), decision, enforced);
  const together = await limiter.checkTogether(others);
  const decisions = inserted(together.checks, at, decision);
  if (together.allowed || !decision.reservation) {
    const outcome = { ...together, checks: decisions };
    return together.allowed && decision.reservation ? { ...outcome, reservation: decision.reservation } : outcome;
  }
  const { reservation } = decision;
  try {
    await limiter.settle({ event: reserving.event, feature: reserving.feature, id: reservation.id, cost: 0 });
  } catch (error) {
    // It stays counted as reserved until its windows pass: too strict for a while, never too lenient.
    onRefused({
      event: reserving.event,
      code: 'take_back_failed',
      message: `the reservation of a refused call could not be taken back: ${(error as Error).message}`,
    });
  }
  return { ...together, checks: replaced(decisions, at, withoutCost(decision, reservation.units)) };
}

/** A lone reservation's outcome: a shadow (not enforced) denial refuses nothing. */
function outcomeOf(decisions: readonly Decision[], decision: Decision, enforced: boolean): ReservingOutcome {
  if (decision.allowed || !enforced) {
    return decision.reservation
      ? { allowed: true, checks: decisions, reservation: decision.reservation }
      : { allowed: true, checks: decisions };
  }
  return decision.retryAfter === undefined
    ? { allowed: false, checks: decisions }
    : { allowed: false, checks: decisions, retryAfter: decision.retryAfter };
}

/** The decision of a reservation taken back: its counts without its cost, as a refused call shows them. */
function withoutCost(decision: Decision, units: number): Decision {
  const limits = decision.limits.map((limit) => ({
    ...limit,
    remaining: Math.min(limit.limit, limit.remaining + units),
  }));
  const taken: Decision = { ...decision, limits };
  delete (taken as { reservation?: Reservation }).reservation;
  return taken;
}

function replaced<T>(items: readonly T[], at: number, item: T): T[] {
  return items.map((one, i) => (i === at ? item : one));
}

function inserted<T>(items: readonly T[], at: number, item: T): T[] {
  return [...items.slice(0, at), item, ...items.slice(at)];
}
