// Reservations: a check that counts a cost it does not know yet (`reserve: N`, an LLM call's
// most tokens), and its settle with the actual cost once the response is done. Built on the
// leases' records: the reserved units are counted at the check's second and recorded under an
// id naming that second; a settle takes them back from that second's buckets and counts the
// actual cost at its own second, once, within the reservation's life and grace.
import type { CheckContext } from './check-context.js';
import {
  clientPlan,
  eventPlan,
  validCost,
  validFeature,
  type CheckItem,
  type CheckRequest,
  type WallClock,
} from './check-request.js';
import type { Decision } from './decision.js';
import { LimiterInputError } from './errors.js';
import {
  claimRecorded,
  leaseId,
  leaseToken,
  leaseUnitsKey,
  recount,
  unclaimRecorded,
  type RecordWords,
  type TakenLease,
} from './lease.js';
import { MAX_LIMIT } from '../config/policy-schema.js';
import { decideTokenBucket } from './token-bucket.js';
import type { EventPlan, ReservationPlan } from './plan.js';

/** What stays of a reservation past its hold, for a late duplicate settle to find it settled. */
const RECORD_SLACK_SECONDS = 60;

const RESERVATION_WORDS: RecordWords = {
  unknown: 'unknown_reservation',
  expired: 'reservation_expired',
  done: 'reservation_settled',
  noun: 'reservation',
  made: 'made',
  claimed: 'settled',
  unclaimed: 'it stays counted as reserved',
};

/** A check that reserves: `reserve` takes the place of `cost`. */
export interface ReserveRequest extends Omit<CheckRequest, 'cost'> {
  readonly reserve: number;
}

/** Settles a reservation with what its request actually cost. */
export interface SettleRequest extends Omit<CheckRequest, 'cost'> {
  readonly id: string;
  /** The actual cost: 0 and up, more or less than reserved. */
  readonly cost: number;
}

export type { Reservation } from '../shared/decision.js';

/** A reserving check's decision: its `reservation` when allowed. */
export type ReservedDecision = Decision;

export interface Settled {
  /** What the reservation counted. */
  readonly reserved: number;
  /** What was counted instead, at the settle's second. */
  readonly cost: number;
  /** What the settle changed the counts by: cost − reserved, negative for a refund. */
  readonly counted: number;
}

/** A token-bucket plan's time per token, in µs. */
function emissionOf(plan: EventPlan): number {
  return plan.limits[0]?.tokenBucket?.emissionUs ?? 0;
}

/** The event's reservation rules; reserve_off when its policy has none. */
export function reservationPlanOf(plan: EventPlan): ReservationPlan {
  if (!plan.reservations)
    throw new LimiterInputError(
      'reserve_off',
      `event ${plan.event} takes no reservations: its policy has no reservations section`,
    );
  return plan.reservations;
}

/**
 * A reserving check as a check item: its cost is the reservation's, recorded under an id. As
 * for a lease, a deny list refuses it and an allow list does not apply (its units are counted,
 * so that a settle can move them).
 */
export function reserveItem(plans: ReadonlyMap<string, EventPlan>, request: ReserveRequest, now: WallClock): CheckItem {
  const base = eventPlan(plans, request.event);
  const reservations = reservationPlanOf(base);
  const feature = validFeature(request.feature);
  if (clientPlan(base, feature, request.tier, now) === 'deny') {
    validReserve(request.reserve, base);
    return { plan: base, feature, cost: 0, counting: false, enforced: true, impossible: false, listed: 'deny' };
  }
  const plan = clientPlan(base, feature, request.tier, now, { lists: false }) as EventPlan;
  return {
    plan,
    feature,
    cost: validReserve(request.reserve, plan),
    counting: true,
    enforced: true,
    impossible: false,
    record: { token: leaseToken(), ttlSeconds: reservations.holdSeconds + RECORD_SLACK_SECONDS },
  };
}

function validReserve(reserve: unknown, plan: EventPlan): number {
  if (typeof reserve !== 'number' || !Number.isSafeInteger(reserve) || reserve < 1)
    throw new LimiterInputError('invalid_cost', 'reserve must be a positive integer');
  return validCost(reserve, plan);
}

/** A reserving check's answer: the step's decision, with the reservation when it was allowed. */
export function reservedDecision(
  decision: Decision,
  taken: TakenLease | undefined,
  reservations: ReservationPlan,
): ReservedDecision {
  if (!decision.allowed || decision.degraded || !taken) return decision;
  return {
    ...decision,
    reservation: {
      id: taken.id,
      units: taken.units,
      seconds: reservations.lifeSeconds,
      expiresAt: Math.floor(taken.countedAtMs) + reservations.lifeSeconds * 1000,
    },
  };
}

/**
 * A reservation of a token bucket: its tokens taken as a check's, then recorded under an id for
 * the settle. If the record cannot be written, the request is answered as the store failing;
 * its tokens stay taken, as a reservation never settled.
 */
export async function reserveTokens(context: CheckContext, item: CheckItem): Promise<ReservedDecision> {
  const decision = await decideTokenBucket(context, item);
  if (!decision.allowed || decision.degraded || !item.record) return decision;
  const base = context.features.baseOf(item.plan.event, item.feature);
  const countedAtMs = context.now(base);
  const id = leaseId(Math.floor(countedAtMs / 1000), item.record.token);
  const units = leaseUnitsKey(base, item.plan, id);
  const { ttlSeconds } = item.record;
  // The time the tokens stand for, at this client's rate now: its settle gives back exactly that.
  const reservedUs = item.cost * emissionOf(item.plan);
  await context.store.incrementAndRead(
    [
      { key: units, delta: item.cost, ttlSeconds },
      { key: `${units}:us`, delta: reservedUs, ttlSeconds },
    ],
    [],
  );
  return reservedDecision(decision, { id, units: item.cost, countedAtMs }, reservationPlanOf(item.plan));
}

/**
 * Settles a reservation: counts its actual cost at this second and takes the reserved units back
 * from the buckets of the reservation's second, once, within its life and grace. A larger cost
 * than reserved can put the client over its limits: the next check sees it. A reset since the
 * reservation forgot its units already: then only the actual cost is counted.
 */
export async function settle(
  context: CheckContext,
  plans: ReadonlyMap<string, EventPlan>,
  request: SettleRequest,
): Promise<Settled> {
  const base = eventPlan(plans, request.event);
  const reservations = reservationPlanOf(base);
  const feature = validFeature(request.feature);
  const cost = request.cost;
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0 || cost > MAX_LIMIT)
    throw new LimiterInputError('invalid_cost', `cost must be the actual cost, a whole number from 0 to ${MAX_LIMIT}`);
  // Everything a settle can refuse is refused before it claims the reservation, which it does once.
  const chosen = clientPlan(base, feature, request.tier, context.wallNow, { lists: false });
  const bucketPlan = typeof chosen === 'string' ? base : chosen;
  const state = context.features.state(base, feature);
  const {
    units: reserved,
    forgotten,
    now,
    second,
  } = await claimRecorded(context, base, state.base, request.id, {
    holdSeconds: reservations.holdSeconds,
    words: RESERVATION_WORDS,
  });
  try {
    if (base.algorithm === 'token-bucket') {
      // The time reserved comes back as it was taken, whatever the client's rate is now; the
      // actual cost is taken at its rate now (a tier or an override may have changed since).
      const emissionUs = emissionOf(bucketPlan);
      const { read } = await context.store.incrementAndRead([], [`${leaseUnitsKey(state.base, base, request.id)}:us`]);
      // Missing (0) only if it expired with its record: then as many tokens at today's rate.
      const recordedUs = read[0] ?? 0;
      const reservedUs = recordedUs > 0 ? recordedUs : reserved * emissionUs;
      const item = { plan: bucketPlan, feature, cost: 1, counting: true, enforced: true, impossible: false };
      await decideTokenBucket(context, item, cost * emissionUs - (forgotten ? 0 : reservedUs));
    } else {
      await recount(context, base, state.base, { now, count: cost, second, takeBack: forgotten ? 0 : reserved });
    }
  } catch (error) {
    // The counts did not move (or not surely): the claim is given back, so the settle can be sent again.
    await unclaimRecorded(context, state.base, request.id).catch(() => undefined);
    throw error;
  }
  // Counts changed behind this instance's memory of the feature: read them again.
  context.features.forget(base, feature);
  context.onSettle?.({ event: base.event, feature, reserved, cost });
  return { reserved, cost, counted: forgotten ? cost : cost - reserved };
}
