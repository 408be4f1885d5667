// Quota leases: their requests, ids and keys. The limiter (limiter.ts) grants and takes them back.
import { createHash, randomBytes } from 'node:crypto';
import { LimiterInputError } from './errors.js';
import type { Decision } from './decision.js';
import type { CheckRequest } from './check-request.js';
import type { EventPlan, LeasePlan } from './plan.js';

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
 * A lease's id: the second it was taken at (its buckets), and 128 random bits, so that a
 * return names a lease only its holder knows.
 */
export function newLeaseId(second: number): string {
  return `${second}.${randomBytes(16).toString('base64url')}`;
}

const LEASE_ID = /^([0-9]{1,12})\.([A-Za-z0-9_-]{22})$/;

/** The second a lease was taken at, from its id; unknown_lease when the id is not one memgate makes. */
export function leaseSecond(id: unknown): number {
  const match = typeof id === 'string' ? LEASE_ID.exec(id) : null;
  if (!match) throw new LimiterInputError('unknown_lease', 'the lease id is not one memgate gave');
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
    .update(plan.levels.map((level) => level.size).join('.'))
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
