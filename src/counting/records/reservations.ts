// Reservations: a check that counts a cost it does not know yet (`reserve: N`, an LLM call's
// most tokens), and its settle with the actual cost once the response is done. A reserving
// check is a check of the one step; its record, written after the decision, names what it
// counted for the one settle that takes it back from the reservation's second and counts the
// actual cost at its own, within the reservation's life and grace.
import { MAX_LIMIT } from '../../config/policy-schema.js';
import type { CheckBody, Reservation, SettleBody as SettleRequest, Settled } from '../../shared/contract.js';
import { partOf } from '../algorithms/parts.js';
import type { Context } from '../context.js';
import type { Decision } from '../decision.js';
import { LimiterInputError } from '../errors.js';
import { counterKeyBase } from '../keys.js';
import type { EventPlan, ReservationPlan } from '../plan-types.js';
import { tierPlan } from '../client-plans.js';
import { correctedPlan, eventPlan, validFeature, type WallClock } from '../resolve.js';
import type { Counted } from '../step.js';
import type { CheckItem } from '../check-item.js';
import {
  claimRecord,
  heldRecord,
  RECORD_SLACK_SECONDS,
  unclaimRecord,
  writeRecord,
  type RecordWords,
  type Unrecorded,
} from './records.js';

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
export type ReserveRequest = Omit<CheckBody, 'cost' | 'reserve'> & { readonly reserve: number };

/** A reserving check's decision: its `reservation` when allowed and counted. */
export type ReservedDecision = Decision;

export type { Reservation, SettleRequest, Settled };

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
 * A reserving check's answer: the step's decision, with the reservation its record names when
 * it was allowed and counted (a client an allow list holds counts nothing, and has nothing to
 * settle). If the record cannot be written, what was counted is taken back and the request
 * fails as the store failing.
 */
export async function reservedDecision(
  context: Context,
  item: CheckItem,
  decision: Decision,
  counted: Counted | undefined,
  { unrecorded }: { readonly unrecorded: Unrecorded },
): Promise<ReservedDecision> {
  if (!decision.allowed || decision.degraded || !counted || counted.cost === 0) return decision;
  const reservations = reservationPlanOf(item.plan);
  const base = counterKeyBase(context.keyPrefix, item.plan.event, item.feature);
  const record = await writeRecord(context, item.plan, base, counted, {
    ttlSeconds: reservations.holdSeconds + RECORD_SLACK_SECONDS,
    unrecorded,
  });
  if (!record) return decision;
  return { ...decision, reservation: heldRecord(record, reservations.lifeSeconds) };
}

/**
 * Settles a reservation: counts its actual cost at this second and takes the reserved units back
 * from the buckets of the reservation's second (a token bucket: the time they stood for), once,
 * within its life and grace, under the plan it was reserved under (whatever tier the settle
 * names). A larger cost than reserved can put the client over its limits:
 * the next check sees it. A reset since the reservation forgot its units already: then only
 * the actual cost is counted.
 */
export async function settle(
  context: Context,
  plans: ReadonlyMap<string, EventPlan>,
  request: SettleRequest,
  now: WallClock,
): Promise<Settled> {
  const base = eventPlan(plans, request.event);
  const reservations = reservationPlanOf(base);
  const feature = validFeature(request.feature);
  const cost = request.cost;
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0 || cost > MAX_LIMIT)
    throw new LimiterInputError('invalid_cost', `cost must be the actual cost, a whole number from 0 to ${MAX_LIMIT}`);
  // Everything a settle can refuse is refused before it claims the reservation, which it does once.
  // A tier it names is checked, and changes nothing: the reservation settles under the plan it
  // was made under (its tier's or override's), as its record holds it. Windows count in counters
  // every plan of the event shares; a token bucket's record holds the time a unit stood for.
  // The client's plan now, lists aside, is for a record that holds no time.
  tierPlan(base, request.tier);
  const plan = correctedPlan(base, feature, undefined, now);
  const key = counterKeyBase(context.keyPrefix, base.event, feature);
  const claimed = await claimRecord(context, base, key, request.id, {
    holdSeconds: reservations.holdSeconds,
    words: RESERVATION_WORDS,
  });
  const { units: reserved, forgotten } = claimed;
  const part = partOf(plan);
  try {
    await part.recount(context, plan, key, {
      now: claimed.now,
      count: cost,
      second: claimed.second,
      takeBack: forgotten ? 0 : reserved,
      unitUs: claimed.us === undefined ? undefined : claimed.us / reserved,
    });
  } catch (error) {
    // The counts did not move (or not surely): the claim is given back, so the settle can be sent again.
    await unclaimRecord(context, key, request.id).catch(() => undefined);
    throw error;
  }
  // Counts changed behind this instance's memory of the feature: read them again.
  part.forget(context, base, feature);
  context.onSettle?.({ event: base.event, feature, reserved, cost });
  return { reserved, cost, counted: forgotten ? cost : cost - reserved };
}
