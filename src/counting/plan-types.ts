// What the limiter derives from a policy once (plan.ts makes them): how each limit counts, and
// how a client's limits are chosen. An event's plan is one of each algorithm's shapes, told
// apart by `algorithm`: what one algorithm cannot do (a lease on a token bucket) has no field
// on its plan. Types only, so that the planner, the parts and client-plans.ts need not import
// each other.
import type { Edge, LimitPolicy, OnStoreError } from '../config/policies.js';
import type { BucketLevel, BucketRun, Periods } from './algorithms/windows/buckets.js';

/** A client an allow list holds (allowed, never counted) or a deny list holds (always refused). */
export type Listed = 'allow' | 'deny';

/** How an event with tiers, overrides or lists chooses a client's plan (client-plans.ts). */
export interface ClientChoice {
  /** The event's tiers, each a plan of the event's algorithm. */
  readonly tiers: ReadonlyMap<string, EventPlan>;
  /**
   * Every limit a client may be judged by besides the event's own: its tiers' and overrides'.
   * Their plans are made when a client first needs one (client-plans.ts).
   */
  readonly limits: readonly AnyLimitPlan[];
  /** The plan shadow limits beside enforced ones count apart in, when a tier or override has them. */
  readonly apart: EventPlan | undefined;
  choose(
    base: EventPlan,
    feature: string,
    tier: EventPlan | undefined,
    nowMs: () => number,
    options: { readonly lists: boolean },
  ): EventPlan | Listed;
}

/** How one limit counts: whatever its algorithm, it names its policy (name, limit, window). */
export interface LimitPlan {
  readonly policy: LimitPolicy;
}

/** A limit counted in buckets of time: sliding, fixed and calendar windows. */
export interface WindowLimitPlan extends LimitPlan {
  /** Bucket sizes (seconds) this limit counts in, coarsest first; a calendar window's longest period. */
  readonly levels: readonly number[];
  /** A calendar window's periods: then its one level is these, not `levels[0]`-second buckets. */
  readonly calendar?: Periods | undefined;
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
  /** Before this second its cover is a reload's conservative one (carry-over.ts): a release is not refined on finer buckets. */
  readonly exactFrom?: number | undefined;
}

/** A token bucket's constants, in microseconds: its value is kept in µs, exact to well past 2200. */
export interface TokenBucketLimitPlan extends LimitPlan {
  /** T: how long one token takes to come back, rounded up (never faster than the rate). */
  readonly emissionUs: number;
  readonly burst: number;
}

/** One bucket level of an event: each check increments its current bucket. */
export interface CounterLevel extends BucketLevel {
  readonly ttlSeconds: number;
  /** A size only a reload's transition still counts in (carry-over.ts): from this second on, nothing does. */
  readonly countedUntil?: number | undefined;
}

/**
 * What a reload kept of an event's counts, when its new limits could not be judged exactly on
 * them at once (counting/algorithms/windows/carry-over.ts): reported at load, in /policies and
 * in the reload's answer.
 */
export interface ReloadCarry {
  /** The second the reload was planned at, by this instance's clock. */
  readonly since: number;
  /** From this second on, every limit of the event is judged exactly on its own buckets. */
  readonly exactAt: number;
  /**
   * `conservative`: until then judged on an upper bound of what was counted (and held);
   * `not-carried`: nothing of the old counts is read (an algorithm of another kind).
   */
  readonly how: 'conservative' | 'not-carried';
  readonly reasons: readonly string[];
}

/** What a transition knows of one bucket size: from when its buckets hold everything, and how long the older ones live. */
export interface LevelHistory {
  /** Buckets starting before this second lack what some instance counted (a size new to the reload). */
  readonly completeFrom?: number | undefined;
  /** Buckets starting before `completeFrom`-or-the-reload were written with this TTL (the old plan's). */
  readonly olderTtl?: number | undefined;
}

/** A window's transition: the second from which every size is complete, and each size's history. */
export interface Transition {
  readonly carry: ReloadCarry;
  /** Every size counts everything from this second on (the reload, the spread and the skew after it). */
  readonly completeFrom: number;
  readonly history: ReadonlyMap<number | string, LevelHistory>;
  /** The event's levels during the transition, coarsest first (the old sizes among them until they retire). */
  readonly levels: readonly CounterLevel[];
  readonly skewSeconds: number;
}

/**
 * Windows after a reload from a token bucket (windows/bucket-carry.ts): until `until`, each
 * limit also counts the most the old bucket can have admitted within its window, read from the
 * client's bucket value (its theoretical arrival time).
 */
export interface BucketCarry {
  /** The smallest emission interval of the old plans (µs): the most admissions per second. */
  readonly emissionUs: number;
  /** The largest burst of the old plans. */
  readonly burst: number;
  /** From this second on, no old bucket can hold an admission inside any window. */
  readonly until: number;
}

/** What every event's plan has, whatever its algorithm. */
interface PlanFields<L extends LimitPlan, Self extends EventPlan> {
  readonly event: string;
  /** What a check decides when the store cannot answer. */
  readonly onStoreError: OnStoreError;
  /** The limits, in policy order. */
  readonly limits: readonly L[];
  /** The largest cost a request may carry; beyond it no limit could ever allow it. */
  readonly maxCost: number;
  /** Reservations (`reserve: N`, then a settle), when the event allows them. */
  readonly reservations?: ReservationPlan | undefined;
  /**
   * The event's tiers, overrides and allow and deny lists, when it has any: a client's plan
   * is chosen there (client-plans.ts). Absent on the plans it chooses from.
   */
  readonly clients?: ClientChoice | undefined;
  /**
   * This plan's limits in `mode: shadow`, beside enforced ones: a plan of their own, counting
   * under `<event>~shadow` (shadowEvent), decided with the enforced limits as one request.
   */
  readonly shadow?: Self | undefined;
  /** Every limit of this plan is in shadow: a check of it never refuses. */
  readonly shadowOnly?: true | undefined;
  /**
   * Made while serving for a limit no policy file names (runtime-plans.ts): requests choose
   * its values, so the feature cache keeps nothing of it (its states would be unbounded).
   */
  readonly uncached?: true | undefined;
  /** What the reload that made this plan kept of the event's counts, when it was not exact at once. */
  readonly carry?: ReloadCarry | undefined;
}

/** An event counted in buckets of time: `sliding`, or `fixed` (calendar windows included). */
export interface WindowsPlan extends PlanFields<WindowLimitPlan, WindowsPlan> {
  readonly algorithm: 'sliding' | 'fixed';
  readonly edge: Edge;
  /** All limits of an event count the same admitted requests, so they share buckets per size. */
  readonly levels: readonly CounterLevel[];
  /** Quota leases, when the event allows them. */
  readonly lease?: LeasePlan | undefined;
  /**
   * Seconds after a second until a lease's return or a reservation's settle can no longer take
   * cost back from its buckets: they stay live (read again) this long. Absent when neither is on.
   */
  readonly holdSeconds?: number | undefined;
  /** A reload's transition: the limits are judged on complete buckets until it is exact (carry-over.ts). */
  readonly transition?: Transition | undefined;
  /** After a reload from a token bucket: what the old buckets may have admitted, counted beside the windows. */
  readonly fromBucket?: BucketCarry | undefined;
}

/** An event whose clients each hold one token bucket (GCRA): one value per client, no buckets of time. */
export interface TokenBucketPlan extends PlanFields<TokenBucketLimitPlan, TokenBucketPlan> {
  readonly algorithm: 'token-bucket';
  /** After a reload from windows: a client with no bucket yet starts from what they counted (token-bucket/seed.ts). */
  readonly seed?: TokenBucketSeed | undefined;
}

/** What a token bucket starts from after a reload from sliding or fixed windows, until `until`. */
export interface TokenBucketSeed {
  /** The event's plan before the reload: its limits' covers name the buckets to read. */
  readonly previous: WindowsPlan;
  /** From this second on, a missing bucket is a full one again (the old windows have passed). */
  readonly until: number;
  readonly carry: ReloadCarry;
}

/** A concurrency limit: at most `limit` of a client's requests in flight, each holding a slot until released or timed out. */
export interface ConcurrencyLimitPlan extends LimitPlan {
  /** Seconds a slot stays held when its request is never released: then it frees itself. */
  readonly timeoutSeconds: number;
}

/** An event whose clients hold slots while their requests are in flight. */
export interface ConcurrencyPlan extends PlanFields<ConcurrencyLimitPlan, ConcurrencyPlan> {
  readonly algorithm: 'concurrency';
  /** The most slots any plan of the event has (its tiers', overrides'): what a reset forgets. */
  readonly slots: number;
}

/** How an event counts: one of each algorithm's plans. */
export type EventPlan = WindowsPlan | TokenBucketPlan | ConcurrencyPlan;

/** A limit's plan, of any algorithm. */
export type AnyLimitPlan = EventPlan['limits'][number];

/** What the planner gives every algorithm's plan: the fields every plan has. */
export type PlanCommon<P extends EventPlan> = Omit<PlanFields<P['limits'][number], P>, never>;

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
