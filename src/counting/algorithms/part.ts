// What an algorithm is to the rest of the limiter: one part with one interface. The check step
// (counting/step.ts) decides every request by asking each counter's part for rounds with the
// store; corrections (refunds, lease returns, settles) and resets move a client's counts
// through the same part. A part knows its plan's shape and its keys; it knows nothing of
// requests of several checks, lists, tiers or surfaces.
import type { Edge, EventPolicy, LimitPolicy } from '../../config/policies.js';
import type { Context } from '../context.js';
import type { Decision } from '../decision.js';
import type { EventPlan, PlanCommon } from '../plan-types.js';
import type { ReloadMoment } from './windows/carry-over.js';

/** Whether a round counts the request's cost, or only reads. */
export type RoundMode = 'count' | 'read';

/** One counter of a request (an event and a feature) and what the request asks of it. */
export interface Counter<P extends EventPlan = EventPlan, S = unknown> {
  readonly plan: P;
  readonly feature: string;
  /** What the part keeps of this client between requests (part.state). */
  readonly state: S;
  /** The second the request found it at, by its server's clock. */
  readonly second: number;
  /** When the request found it: the time of its first round, which follows at once (the clock is read once). */
  foundAtMs: number | undefined;
  /** What the request counts here when allowed: its counting checks' costs summed (a lease: the units it takes now). */
  cost: number;
  /** A lease: takes what remains, from 1 up to `cost`. */
  readonly takesWhatRemains: boolean;
  /**
   * What it counts is recorded after the decision (a lease's units, a reservation): a count the
   * store did not answer is taken back if it lands late, since no record will name it.
   */
  readonly recorded: boolean;
  /** When its last count round counted (the record's second). */
  countedAtMs: number;
  /** The costs its peeks ask room for, in the order of the request's peeks of it. */
  readonly peekCosts: number[];
  /** A lone check's denial repeated from memory: the counter is not asked. */
  repeated: Decision | undefined;
  /** Keys read over every round, and whether any round read what memory did not keep (for metrics). */
  keysRead: number;
  settledMiss: boolean;
}

/** One counter's answer in one round, decided as soon as it came. */
export interface CounterRound {
  /** For the counter's cost: counted (a count round) or asked (a read round). */
  readonly decision: Decision;
  /** A count round's decision without its cost: what it shows when the request is refused. */
  readonly uncounted: Decision | undefined;
  readonly peeks: readonly Decision[];
  /** What the round counted, for `undo`; undefined when it counted nothing. */
  readonly counted: unknown;
  /** What a denial in this round was decided on, for `confirmDenial`. */
  readonly denied: unknown;
  /** What the counter held before the request, to tell whether anything moved between two looks. */
  readonly look: readonly number[] | undefined;
  /**
   * The look holds more than a limit admits: what was admitted fits, so while others count,
   * some of it is on its way back (or a limit was lowered below it). Absent: never over.
   */
  readonly overfull?: boolean;
  /** The round's denial is exact as it stands (read and written as one): looking again would not change it. */
  readonly exact: boolean;
}

/**
 * An algorithm. `P` is its plan, `S` what it keeps of a client between requests. The part
 * registry (parts.ts) is the one place that picks a part by a plan's algorithm.
 */
export interface AlgorithmPart<P extends EventPlan = EventPlan, S = unknown, C = unknown> {
  /** How one limit counts, from its policy. */
  planLimit(policy: LimitPolicy, edge: Edge): P['limits'][number];
  /**
   * What every plan of an event counting in the same counters shares, worked out once from all
   * their limits (`limits`: the event's own, its tiers' and overrides'): a window's bucket
   * levels, each living as long as its longest reader.
   */
  counters(limits: readonly P['limits'][number][], policy: EventPolicy): C;
  /**
   * The counters after a reload from `previous` (the event's own plan before it), when they
   * cannot be judged exactly on what the old ones counted at once: a transition
   * (windows/carry-over.ts). Absent: the part's state carries over as it is.
   */
  carryOver?(counters: C, limits: readonly P['limits'][number][], previous: EventPlan, moment: ReloadMoment): C;
  /** A plan of `common.limits` over `counters`. */
  eventPlan(common: PlanCommon<P>, counters: C): P;
  /** What this instance keeps of `feature` for `plan` (created when new). */
  state(context: Context, plan: P, feature: string): S;
  /** A denial memory still holds for a check of `cost` at `nowMs`: answered without the store. */
  remembered(context: Context, counter: Counter<P, S>, cost: number, nowMs: number): Decision | undefined;
  /** Called once the request's checks are on the counter: a lease asks at first for no more than memory says remains. */
  prepare(counter: Counter<P, S>): void;
  /** Whether the request should read before it counts here: memory says it will find no room. */
  readsFirst(counter: Counter<P, S>): boolean;
  /** The counter's store call in this round, decided as soon as it answers. */
  round(context: Context, counter: Counter<P, S>, mode: RoundMode, several: boolean): Promise<CounterRound>;
  /** Gives back what rounds counted: the request was refused, or a shadow check went beyond its limits. */
  undo(context: Context, counted: readonly unknown[]): Promise<void>;
  /** The denial a request ends with: its exact retryAfter, remembered when `remember`. */
  confirmDenial(
    context: Context,
    counter: Counter<P, S>,
    round: CounterRound,
    own: Decision,
    options: { readonly cost: number; readonly remember: boolean },
  ): Decision | Promise<Decision>;
  /** Forgets what this instance keeps of the client: its counts changed behind it. */
  forget(context: Context, plan: P, feature: string): void;
  /**
   * What a reset at `second` deletes (what holds that second), and how long the reset marker
   * beside them must live: as long as anything it makes count nothing.
   */
  resetKeys(plan: P, base: string, second: number): { readonly deletes: string[]; readonly ttlSeconds: number };
  /** Where a lease's or a reservation's units are recorded (keys.ts), for records of this plan. */
  recordKey(plan: P, base: string, id: string): string;
  /**
   * The time `cost` stands for under `plan`, in µs, recorded beside a reservation's units so
   * that its settle moves time at that plan's rate, whatever plan the client is on by then;
   * undefined when time is not what counts.
   */
  recordedTime(plan: P, cost: number): number | undefined;
  /**
   * Moves what a record counted (a lease's return, a reservation's settle): counts `count` at
   * second `now`, then takes back `takeBack` counted at second `second`, each unit at
   * `unitUs` when the record holds its time.
   */
  recount(context: Context, plan: P, base: string, move: Recount): Promise<void>;
  /**
   * Takes back `cost` a check counted near second `second` (a refund; `longestWindow` is the
   * longest window of any plan of the client's event, `now` the second now). False when
   * nothing is left to take back.
   */
  refund(context: Context, plan: P, base: string, request: Refund): Promise<boolean>;
  /**
   * Gives back a request in flight a decision held (an algorithm that counts requests in flight
   * rather than over time implements it): true when the hold named `id` was still held. Absent:
   * the algorithm's decisions hold nothing once made.
   */
  release?(context: Context, plan: P, base: string, id: string): Promise<boolean>;
  /** What the plan costs the store, for /policies and `memgate policies`. */
  sizing(plan: P): PlanSizing;
  limitSizing(limit: P['limits'][number]): LimitSizing;
}

export interface Refund {
  readonly cost: number;
  readonly second: number;
  readonly now: number;
  readonly longestWindow: number;
}

export interface Recount {
  readonly now: number;
  readonly count: number;
  readonly second: number;
  readonly takeBack: number;
  /**
   * The time one unit stood for when the record was made (a token bucket's rate under the plan
   * it was made under, recordedTime): what each unit taken back gives back and each unit
   * counted takes. Undefined: the plan's own rate.
   */
  readonly unitUs?: number | undefined;
}

/** What one check of a plan costs the store, and what one active client keeps there. */
export interface PlanSizing {
  /** A sliding window's treatment of its oldest bucket. */
  readonly edge?: string | undefined;
  readonly incrementsPerCheck: number;
  readonly keysPerCheck: { readonly max: number };
  readonly itemsPerFeature: number;
}

export interface LimitSizing {
  readonly bucketSizes: readonly number[];
  readonly keysPerCheck: { readonly max: number; readonly mean: number };
  readonly itemsPerFeature: number;
}
