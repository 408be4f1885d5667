// What the limiter derives from a policy once (plan.ts makes them): how each limit counts, the
// bucket sizes an event counts in, and how a client's limits are chosen. Types only, so that
// plan.ts and client-plans.ts, which both speak of plans, need not import each other.
import type { Algorithm, Edge, LimitPolicy, OnStoreError } from '../config/policies.js';
import type { BucketLevel, BucketRun, Periods } from './buckets.js';

/** A client an allow list holds (allowed, never counted) or a deny list holds (always refused). */
export type Listed = 'allow' | 'deny';

/** How an event with tiers, overrides or lists chooses a client's plan (client-plans.ts). */
export interface ClientChoice {
  readonly tiers: ReadonlyMap<string, EventPlan>;
  /** Every plan a client may be given besides the event's own: its tiers' and overrides'. */
  readonly plans: readonly EventPlan[];
  choose(
    base: EventPlan,
    feature: string,
    tier: EventPlan | undefined,
    nowMs: () => number,
    options: { readonly lists: boolean },
  ): EventPlan | Listed;
}

/** How one limit of an event counts. */
export interface LimitPlan {
  readonly policy: LimitPolicy;
  readonly algorithm: Algorithm;
  /** Bucket sizes (seconds) this limit counts in, coarsest first; a calendar window's longest period. */
  readonly levels: readonly number[];
  /** A calendar window's periods: then its one level is these, not `levels[0]`-second buckets. */
  readonly calendar?: Periods | undefined;
  /** A token bucket (`algorithm: token-bucket`): no buckets of time, one value per client (token-bucket.ts). */
  readonly tokenBucket?: TokenBucketPlan | undefined;
  /** The buckets holding this limit's window at second `now`, coarsest (newest) run first. */
  cover(now: number): BucketRun[];
  /** How much of the cover's oldest bucket counts at second `now`: below 1 only for a `weighted` edge. */
  oldestWeight(now: number): number;
  /**
   * The first second at which the bucket [start, start + size) no longer counts, read at
   * second `now`. Exact for buckets of the policy's granularity; for a coarser bucket it is
   * when its last possible second leaves, so never too early. A `weighted` edge fades a
   * bucket out gradually; this is when it is gone entirely.
   */
  releaseAt(start: number, size: number, now: number): number;
  /** How long a bucket of `size` must live so every read of it finds it. */
  retention(size: number): number;
  /** Keys one check reads for this limit, over every second of the cover's period. */
  readonly keysPerCheck: { readonly max: number; readonly mean: number };
}

/** A token bucket's constants, in microseconds: its value is kept in µs, exact to well past 2200. */
export interface TokenBucketPlan {
  /** T: how long one token takes to come back, rounded up (never faster than the rate). */
  readonly emissionUs: number;
  readonly burst: number;
}

/** One bucket level of an event: each check increments its current bucket. */
export interface CounterLevel extends BucketLevel {
  readonly ttlSeconds: number;
}

/** How an event counts: its limits in policy order and the bucket levels they share. */
export interface EventPlan {
  readonly event: string;
  readonly algorithm: Algorithm;
  readonly edge: Edge;
  /** What a check decides when the store cannot answer. */
  readonly onStoreError: OnStoreError;
  readonly limits: readonly LimitPlan[];
  /** All limits of an event count the same admitted requests, so they share buckets per size. */
  readonly levels: readonly CounterLevel[];
  /** The largest cost a request may carry; beyond it no limit could ever allow it. */
  readonly maxCost: number;
  /** Quota leases, when the event allows them. */
  readonly lease?: LeasePlan | undefined;
  /** Reservations (`reserve: N`, then a settle), when the event allows them. */
  readonly reservations?: ReservationPlan | undefined;
  /**
   * Seconds after a second until a lease's return or a reservation's settle can no longer take
   * cost back from its buckets: they stay live (read again) this long. Absent when neither is on.
   */
  readonly holdSeconds?: number | undefined;
  /**
   * The event's tiers, overrides and allow and deny lists, when it has any: a client's plan
   * is chosen there (client-plans.ts). Absent on the plans it chooses from.
   */
  readonly clients?: ClientChoice | undefined;
  /**
   * This plan's limits in `mode: shadow`, beside enforced ones: a plan of their own, counting
   * under `<event>~shadow` (shadowEvent), decided with the enforced limits as one request.
   */
  readonly shadow?: EventPlan | undefined;
  /** Every limit of this plan is in shadow: a check of it never refuses. */
  readonly shadowOnly?: true | undefined;
  /**
   * Made while serving for a limit no policy file names (runtime-plans.ts): requests choose
   * its values, so the feature cache keeps nothing of it (its states would be unbounded).
   */
  readonly uncached?: true | undefined;
}

export interface LeasePlan {
  readonly maxUnits: number;
  readonly lifeSeconds: number;
  /**
   * Seconds after a lease's second until its return can no longer come: its life and the
   * grace for a late return. A lease's buckets can shrink until then, so they stay live.
   */
  readonly holdSeconds: number;
}

export interface ReservationPlan {
  readonly lifeSeconds: number;
  /** Its life and the grace for a late settle: until then its second's buckets can still shrink. */
  readonly holdSeconds: number;
}
