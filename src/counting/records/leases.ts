// Quota leases: units of a client's quota counted at once for it to spend itself. A take is a
// check of the one step that takes what remains (up to the units asked); its record, written
// after the decision, names the units for the one return that gives back what was not spent.
import type {
  Lease,
  LeaseBody as LeaseRequest,
  LeaseDecision,
  LeaseReturnBody as LeaseReturn,
  LeaseReturned,
} from '../../shared/contract.js';
import { partOf } from '../algorithms/parts.js';
import type { Context } from '../context.js';
import type { Decision } from '../decision.js';
import { LimiterInputError } from '../errors.js';
import { counterKeyBase } from '../keys.js';
import type { EventPlan, LeasePlan, WindowsPlan } from '../plan-types.js';
import { eventPlan, resolveAsk, validFeature, validUnits, type WallClock } from '../resolve.js';
import { decideChecks } from '../step.js';
import {
  claimRecord,
  heldRecord,
  RECORD_SLACK_SECONDS,
  recordedSecond,
  writeRecord,
  type RecordWords,
} from './records.js';

// A lease's request and answers are the contract's. A client an allow list holds is allowed
// without a lease: it counts nothing to spend.
export type { Lease, LeaseDecision, LeaseRequest, LeaseReturn, LeaseReturned };

const LEASE_WORDS: RecordWords = {
  unknown: 'unknown_lease',
  expired: 'lease_expired',
  done: 'lease_returned',
  noun: 'lease',
  made: 'taken',
  claimed: 'returned',
  unclaimed: 'its units stay counted',
};

/** The second a lease was taken at, from its id; unknown_lease when the id is not one memgate makes. */
export function leaseSecond(id: unknown): number {
  return recordedSecond(id, 'unknown_lease');
}

/** The event's plan and its lease rules; lease_off when its policy has none (a token bucket never has). */
export function leasedPlan(plans: ReadonlyMap<string, EventPlan>, event: unknown): WindowsPlan & { lease: LeasePlan } {
  const plan = eventPlan(plans, event);
  if (!('lease' in plan) || !plan.lease)
    throw new LimiterInputError('lease_off', `event ${plan.event} takes no leases: its policy has no lease section`);
  return plan as WindowsPlan & { lease: LeasePlan };
}

/**
 * Counts up to `units` at once (never more than remains, nor maxUnits, nor the tightest limit)
 * for the holder to spend within the lease's life; denied like a check when nothing remains.
 */
export async function takeLease(
  context: Context,
  plans: ReadonlyMap<string, EventPlan>,
  request: LeaseRequest,
  now: WallClock,
): Promise<LeaseDecision> {
  const { lease } = leasedPlan(plans, request.event);
  const item = resolveAsk(
    plans,
    'lease',
    { event: request.event, feature: request.feature, cost: request.units, tier: request.tier },
    { now, beyondLimit: 'refuse', maxUnits: lease.maxUnits },
  );
  const outcome = await decideChecks(context, [item]);
  const decision = outcome.decisions[0] as Decision;
  const counted = outcome.counted[0];
  if (!decision.allowed || decision.degraded || !counted || counted.cost === 0) return decision;
  const base = counterKeyBase(context.keyPrefix, item.plan.event, item.feature);
  const record = await writeRecord(context, item.plan, base, counted, {
    ttlSeconds: lease.holdSeconds + RECORD_SLACK_SECONDS,
    unrecorded: 'undo',
  });
  if (!record) return decision;
  return { ...decision, lease: heldRecord(record, lease.lifeSeconds) };
}

/**
 * Takes back a lease's unused units from the buckets of its second and counts its spent ones
 * at this second instead, once, for its holder, within its hold. A reset at or after the
 * lease's second forgot its units (deleting their bucket, which since counts other checks):
 * then nothing is taken back.
 */
export async function returnLease(
  context: Context,
  plans: ReadonlyMap<string, EventPlan>,
  request: LeaseReturn,
): Promise<LeaseReturned> {
  const plan = leasedPlan(plans, request.event);
  const feature = validFeature(request.feature);
  const part = partOf(plan);
  const base = counterKeyBase(context.keyPrefix, plan.event, feature);
  const unused = validUnits(request.unused, 'unused', 0);
  const {
    units: granted,
    forgotten,
    now,
    second,
  } = await claimRecord(context, plan, base, request.id, {
    holdSeconds: plan.lease.holdSeconds,
    words: LEASE_WORDS,
  });
  // A holder claiming more than it was given has a bug: its units stay counted.
  if (unused > granted)
    throw new LimiterInputError('invalid_cost', `unused ${unused} is more than the ${granted} units the lease holds`);
  const spent = granted - unused;
  // Spent units are counted again at this second first, so no window is short of them meanwhile.
  await part.recount(context, plan, base, { now, count: spent, second, takeBack: forgotten ? 0 : granted });
  // Counts changed behind this instance's memory of the feature: read them again.
  part.forget(context, plan, feature);
  return forgotten ? { returned: 0, spent } : { returned: unused, spent };
}
