// Quota leases: their requests, ids and keys; a take as a check item of the one check step
// (check-step.ts), and a return, which moves counts rather than deciding.
import { createHash, randomFillSync } from 'node:crypto';
import type { CheckContext } from './check-context.js';
import {
  clientPlan,
  eventPlan,
  validFeature,
  type CheckItem,
  type CheckRequest,
  type WallClock,
} from './check-request.js';
import { levelName } from './buckets.js';
import { incrementsAt } from './counter-call.js';
import { LimiterInputError } from './errors.js';
import type { Decision } from './decision.js';
import { resetMarkerKey } from './keys.js';
import type { EventPlan, LeasePlan } from './plan.js';

/** Units counted by a lease that are not taken back stay this much longer than its hold, for a late duplicate return to find. */
const LEASE_KEY_SLACK_SECONDS = 60;

/** Asks for up to `units` of a feature's quota at once, to spend without asking again. */
export interface LeaseRequest extends Omit<CheckRequest, 'cost'> {
  readonly units: number;
}

/** Gives back what a lease did not spend; its spent units are counted at the return's second. */
export interface LeaseReturn extends Omit<CheckRequest, 'cost'> {
  readonly id: string;
  readonly unused: number;
}

/** A granted lease: the units counted for its holder, and until when it may spend them. */
export interface Lease {
  readonly id: string;
  readonly units: number;
  /** Seconds the holder may spend the units; it returns what is left by then. */
  readonly seconds: number;
  /** When the lease ends, in milliseconds since the epoch on memgate's clock. */
  readonly expiresAt: number;
}

/** A lease's answer: the decision of counting its units, and the lease when it was allowed. */
export type LeaseDecision = Decision & { readonly lease?: Lease };

export interface LeaseReturned {
  /** Units taken back from the lease's second; 0 when a reset since the lease forgot its units already. */
  readonly returned: number;
  /** Units counted at the return's second instead. */
  readonly spent: number;
}

/**
 * A lease's id: the second it was counted at (its buckets), and 128 random bits drawn when it
 * was asked for (its `token`), so that a return names a lease only its holder knows.
 */
export function leaseId(second: number, token: string): string {
  return `${second}.${token}`;
}

const TOKEN_BYTES = 16;
/**
 * Random bytes drawn 256 tokens at a time, as crypto.randomUUID pools them: one draw per
 * token took a fifth of a denied lease's CPU, and every take draws one before it is decided.
 */
const tokenPool = Buffer.alloc(TOKEN_BYTES * 256);
let nextToken = tokenPool.length;

/** The random part of a lease's id: 128 bits from the system's CSPRNG. */
export function leaseToken(): string {
  if (nextToken === tokenPool.length) {
    randomFillSync(tokenPool);
    nextToken = 0;
  }
  const token = tokenPool.toString('base64url', nextToken, nextToken + TOKEN_BYTES);
  nextToken += TOKEN_BYTES;
  return token;
}

const LEASE_ID = /^([0-9]{1,12})\.([A-Za-z0-9_-]{22})$/;

/** The second a lease was taken at, from its id; unknown_lease when the id is not one memgate makes. */
export function leaseSecond(id: unknown): number {
  return recordedSecond(id, 'unknown_lease');
}

/** The second a lease or a reservation was counted at, from its id; `code` when the id is not one memgate makes. */
export function recordedSecond(id: unknown, code: 'unknown_lease' | 'unknown_reservation'): number {
  const match = typeof id === 'string' ? LEASE_ID.exec(id) : null;
  if (!match)
    throw new LimiterInputError(
      code,
      `the ${code === 'unknown_lease' ? 'lease' : 'reservation'} id is not one memgate gave`,
    );
  return Number(match[1]);
}

/** The event's lease rules; lease_off when its policy has none. */
export function leasePlanOf(plan: EventPlan): LeasePlan {
  if (!plan.lease)
    throw new LimiterInputError('lease_off', `event ${plan.event} takes no leases: its policy has no lease section`);
  return plan.lease;
}

/**
 * Where the units a lease counted are kept, routed with the feature's buckets. The key names
 * the event's bucket sizes: after a reload that changed them, a return would take units out
 * of buckets that never held them, so it finds no lease instead (its units stay counted).
 */
export function leaseUnitsKey(base: string, plan: EventPlan, id: string): string {
  // Hashed: a list of sizes could take a key past Memcached's 250 bytes.
  const sizes = createHash('sha256')
    .update(plan.levels.map(levelName).join('.'))
    .digest()
    .subarray(0, 6)
    .toString('base64url');
  return `${base}lease:${sizes}:${id}`;
}

/** Counts the returns of a lease: only the first is taken. */
export function leaseReturnsKey(base: string, id: string): string {
  return `${base}lease:${id}:r`;
}

export function validUnits(units: unknown, name: 'units' | 'unused', min: 0 | 1): number {
  if (typeof units !== 'number' || !Number.isSafeInteger(units) || units < min) {
    throw new LimiterInputError('invalid_cost', `${name} must be a ${min === 1 ? 'positive' : 'non-negative'} integer`);
  }
  return units;
}

/** A lease take as a check item: up to `units` (never more than maxUnits, nor the tightest limit), its record written with them. */
export function leaseItem(
  plans: ReadonlyMap<string, EventPlan>,
  request: LeaseRequest,
  now: WallClock = Date.now,
): CheckItem {
  const base = eventPlan(plans, request.event);
  const lease = leasePlanOf(base);
  const feature = validFeature(request.feature);
  // A deny list refuses a lease; an allow list does not apply to one (its units are counted, so
  // that a return can take them back): the client's own limits do.
  if (clientPlan(base, feature, request.tier, now) === 'deny') {
    validUnits(request.units, 'units', 1);
    return { plan: base, feature, cost: 0, counting: false, enforced: true, impossible: false, listed: 'deny' };
  }
  const plan = clientPlan(base, feature, request.tier, now, { lists: false }) as EventPlan;
  return {
    plan,
    feature,
    cost: Math.min(validUnits(request.units, 'units', 1), lease.maxUnits, plan.maxCost),
    counting: true,
    enforced: true,
    impossible: false,
    upTo: true,
    record: { token: leaseToken(), ttlSeconds: lease.holdSeconds + LEASE_KEY_SLACK_SECONDS },
  };
}

/** What an allowed lease took: the id its units were recorded under, their number, and when they were counted. */
export interface TakenLease {
  readonly id: string;
  readonly units: number;
  readonly countedAtMs: number;
}

/** A lease take's answer: the step's decision, with the lease when it was allowed. */
export function leaseDecision(decision: Decision, taken: TakenLease | undefined, lease: LeasePlan): LeaseDecision {
  if (!decision.allowed || decision.degraded || !taken) return decision;
  return {
    ...decision,
    lease: {
      id: taken.id,
      units: taken.units,
      seconds: lease.lifeSeconds,
      expiresAt: Math.floor(taken.countedAtMs) + lease.lifeSeconds * 1000,
    },
  };
}

/** What a claim says of the record it claims, in its codes and words. */
export interface RecordWords {
  readonly unknown: 'unknown_lease' | 'unknown_reservation';
  readonly expired: 'lease_expired' | 'reservation_expired';
  readonly done: 'lease_returned' | 'reservation_settled';
  /** `lease`, `reservation`. */
  readonly noun: string;
  /** `taken`, `made`. */
  readonly made: string;
  /** `returned`, `settled`. */
  readonly claimed: string;
  /** What happens to its units when it is not claimed in time. */
  readonly unclaimed: string;
}

const LEASE_WORDS: RecordWords = {
  unknown: 'unknown_lease',
  expired: 'lease_expired',
  done: 'lease_returned',
  noun: 'lease',
  made: 'taken',
  claimed: 'returned',
  unclaimed: 'its units stay counted',
};

/**
 * Claims the one return of the units a lease or a reservation recorded under `id`, within its
 * hold: the units recorded, whether a reset at or after its second forgot them, that second,
 * and now's. Counting the claim first makes it the only one, however many arrive at once.
 */
export async function claimRecorded(
  context: CheckContext,
  plan: EventPlan,
  base: string,
  id: string,
  { holdSeconds, words }: { holdSeconds: number; words: RecordWords },
): Promise<{ units: number; forgotten: boolean; second: number; now: number }> {
  const second = recordedSecond(id, words.unknown);
  const now = Math.floor(context.now(base) / 1000);
  if (second > now + context.skewSeconds)
    throw new LimiterInputError(words.unknown, `the ${words.noun} id is not one memgate gave`);
  if (now > second + holdSeconds)
    throw new LimiterInputError(
      words.expired,
      `the ${words.noun} was ${words.made} ${now - second} s ago, past its life and the grace for it to be ${words.claimed} (${holdSeconds} s); ${words.unclaimed}`,
    );
  const { incremented, read } = await context.store.incrementAndRead(
    [{ key: leaseReturnsKey(base, id), delta: 1, ttlSeconds: holdSeconds + LEASE_KEY_SLACK_SECONDS }],
    [leaseUnitsKey(base, plan, id), resetMarkerKey(base)],
  );
  const units = read[0] ?? 0;
  if (units === 0) throw new LimiterInputError(words.unknown, `no ${words.noun} of this id for this event and feature`);
  if ((incremented[0] ?? 0) > 1)
    throw new LimiterInputError(words.done, `the ${words.noun} was ${words.claimed} already`);
  return { units, forgotten: (read[1] ?? 0) >= second, second, now };
}

/**
 * Moves a claimed record's units: `count` at second `now` first, so no window is short of
 * them meanwhile, then `takeBack` from the buckets of its own `second`.
 */
export async function recount(
  context: CheckContext,
  plan: EventPlan,
  base: string,
  { now, count, second, takeBack }: { now: number; count: number; second: number; takeBack: number },
): Promise<void> {
  if (count > 0) await context.store.incrementAndRead(incrementsAt(plan, base, now, count), []);
  if (takeBack > 0) await context.store.decrement(incrementsAt(plan, base, second, takeBack));
}

/** Gives back a claim whose work failed, so that the return or settle can be sent again. */
export async function unclaimRecorded(context: CheckContext, base: string, id: string): Promise<void> {
  await context.store.decrement([{ key: leaseReturnsKey(base, id), delta: 1 }]);
}

/**
 * Takes back a lease's unused units from the buckets of its second and counts its spent ones
 * at this second instead, once, for its holder, within its hold. A reset at or after the
 * lease's second forgot its units (deleting their bucket, which since counts other checks):
 * then nothing is taken back.
 */
export async function returnLease(
  context: CheckContext,
  plans: ReadonlyMap<string, EventPlan>,
  request: LeaseReturn,
): Promise<LeaseReturned> {
  const plan = eventPlan(plans, request.event);
  const lease = leasePlanOf(plan);
  const state = context.features.state(plan, validFeature(request.feature));
  const unused = validUnits(request.unused, 'unused', 0);
  const {
    units: granted,
    forgotten,
    now,
    second,
  } = await claimRecorded(context, plan, state.base, request.id, {
    holdSeconds: lease.holdSeconds,
    words: LEASE_WORDS,
  });
  // A holder claiming more than it was given has a bug: its units stay counted.
  if (unused > granted)
    throw new LimiterInputError('invalid_cost', `unused ${unused} is more than the ${granted} units the lease holds`);
  const spent = granted - unused;
  // Spent units are counted again at this second first, so no window is short of them meanwhile.
  await recount(context, plan, state.base, { now, count: spent, second, takeBack: forgotten ? 0 : granted });
  // Counts changed behind this instance's memory of the feature: read them again.
  context.features.forget(plan, request.feature);
  return forgotten ? { returned: 0, spent } : { returned: unused, spent };
}
