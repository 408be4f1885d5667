// The limiter: memgate's ways to ask, each composed from the one check step (check-step.ts)
// over validated items (check-request.ts), plus what changes counts outside a check (leases'
// returns, refunds, resets).
import { parsePolicies, PolicySet } from '../config/policies.js';
import { checkContext, type CheckContext, type CheckOptions } from './check-context.js';
import { checkItem, togetherItem, type CheckRequest, type TogetherCheck } from './check-request.js';
import { decideItem, decideItems } from './check-step.js';
import { refund, reset, type RefundRequest } from './corrections.js';
import { listedDecision, type Decision } from './decision.js';
import type { CacheUsage } from './feature-cache.js';
import {
  leaseDecision,
  leaseItem,
  leasePlanOf,
  returnLease,
  type LeaseDecision,
  type LeaseRequest,
  type LeaseReturn,
  type LeaseReturned,
} from './lease.js';
import { planEvents, type EventPlan } from './plan.js';
import { RuntimePlans } from './runtime-plans.js';
import { decideWithShadow } from './shadow.js';
import { decideTokenBucket } from './token-bucket.js';
import {
  reservationPlanOf,
  reservedDecision,
  reserveItem,
  reserveTokens,
  settle,
  type ReservedDecision,
  type ReserveRequest,
  type SettleRequest,
  type Settled,
} from './reservation.js';
import { LimiterInputError } from './errors.js';

export type { HowDecided, ObservedDecision, SettledReservation } from './check-context.js';
export type { TogetherCheck } from './check-request.js';
export type { RefundRequest } from './corrections.js';
export type { Reservation, ReservedDecision, ReserveRequest, SettleRequest, Settled } from './reservation.js';

export interface LimiterOptions extends CheckOptions {
  /** A validated PolicySet, or a policy document in the file's shape (validated here). */
  readonly policies: PolicySet | object;
}

export interface TogetherDecision {
  /** Every enforced check was allowed, so the request counted. */
  readonly allowed: boolean;
  /**
   * Each check's decision by its own limits, in order. A check its limits allow, in a request
   * another check denied, shows its counts without its cost (nothing was counted).
   */
  readonly checks: readonly Decision[];
  /** On a deny: the longest retryAfter of the enforced checks denied. */
  readonly retryAfter?: number;
}

/** A check, or with `reserve` in place of `cost` a reservation (see Limiter.settle). */
export type CheckOrReserve = CheckRequest | ReserveRequest;

export interface Limiter {
  /**
   * Decides the request and, when allowed, counts it. With `reserve: N` (an event with a
   * `reservations` section) it counts N, answering a reservation to settle with the actual cost.
   */
  check(request: CheckOrReserve): Promise<ReservedDecision>;
  /**
   * Settles a reservation with what its request actually cost: the difference is counted (a
   * refund when smaller), once, within the reservation's life. A larger cost can put the client
   * over its limits; the next check sees it.
   */
  settle(request: SettleRequest): Promise<Settled>;
  /**
   * Decides several checks (of any events and features) as one request: when every enforced
   * check is allowed, each counting check's cost is counted; otherwise none is. A cost larger
   * than a check's limit is denied, counting nothing.
   */
  checkTogether(checks: readonly TogetherCheck[]): Promise<TogetherDecision>;
  /** The decision `check` would make now, counting nothing. */
  peek(request: CheckRequest): Promise<Decision>;
  /**
   * Forgets everything a feature has counted for an event, on every instance sharing the
   * store: a marker records the reset second, which every check reads, and the buckets
   * holding that second are deleted, so they count only what comes after it.
   */
  reset(request: Omit<CheckRequest, 'cost'>): Promise<void>;
  /**
   * Takes back `cost` a check counted at `at` (milliseconds since the epoch): what a
   * framework's limiter does when it decides afterwards that a request should not count.
   * False when that second has left every window, so there is nothing to take back.
   */
  refund(request: RefundRequest): Promise<boolean>;
  /**
   * Counts up to `units` at once (never more than remains, nor the policy's maxUnits) for the
   * holder to spend within the lease's life; denied like a check when nothing remains.
   */
  lease(request: LeaseRequest): Promise<LeaseDecision>;
  /** Takes back a lease's unused units, and counts its spent ones at this second instead. */
  returnLease(request: LeaseReturn): Promise<LeaseReturned>;
  readonly policies: PolicySet;
  readonly plans: ReadonlyMap<string, EventPlan>;
  /** What this instance keeps in memory between checks, against its budget (cacheBytes). */
  readonly cacheUsage: CacheUsage;
  /**
   * Closes the store the limiter was given (its sockets and clock probes), so that the
   * process can exit; call it once nothing more will be checked. A store shared with another
   * limiter is closed for that one too.
   */
  close(): Promise<void>;
}

export function createLimiter(options: LimiterOptions): Limiter {
  const policies =
    options.policies instanceof PolicySet
      ? options.policies
      : parsePolicies(options.policies, 'createLimiter({ policies })');
  const plans = planEvents(policies);
  const runtimePlans = new RuntimePlans();
  const context = checkContext(options);
  return {
    policies,
    plans,
    get cacheUsage() {
      return context.features.usage;
    },
    close: () => options.store.close(),
    check: (request) =>
      reserving(request) ? reserve(context, plans, request) : decideOne(context, plans, request, 'check'),
    settle: (request) => settle(context, plans, request),
    peek: (request) => decideOne(context, plans, request, 'peek'),
    async checkTogether(checks) {
      // Nothing to decide is a caller's bug, not a client's request.
      if (checks.length === 0) throw new RangeError('checkTogether takes at least one check');
      const items = checks.map((check) => togetherItem(plans, check, context.wallNow, runtimePlans));
      const bucket = items.find((item) => item.plan.algorithm === 'token-bucket');
      if (bucket && items.length === 1) {
        const decision = await decideTokenBucket(context, bucket);
        const enforcedDenial = !decision.allowed && bucket.enforced;
        return enforcedDenial && decision.retryAfter !== undefined
          ? { allowed: false, checks: [decision], retryAfter: decision.retryAfter }
          : { allowed: !enforcedDenial, checks: [decision] };
      }
      if (bucket)
        throw new LimiterInputError(
          'algorithm_unsupported',
          `${bucket.plan.event} is a token bucket, which is decided alone: it cannot be decided together with other checks`,
        );
      const { allowed, decisions, retryAfter } = await decideItems(context, items);
      return retryAfter === undefined ? { allowed, checks: decisions } : { allowed, checks: decisions, retryAfter };
    },
    async lease(request) {
      const item = leaseItem(plans, request, context.wallNow);
      if (item.listed) return listedDecision(item.listed);
      const outcome = await decideItems(context, [item]);
      return leaseDecision(outcome.decisions[0] as Decision, outcome.lease, leasePlanOf(item.plan));
    },
    returnLease: (request) => returnLease(context, plans, request),
    refund: (request) => refund(context, plans, request),
    reset: (request) => reset(context, plans, request),
  };
}

/** Whether a check reserves: `reserve` given, even as undefined by a JavaScript caller, is not. */
function reserving(request: CheckOrReserve): request is ReserveRequest {
  return (request as { reserve?: unknown }).reserve !== undefined;
}

/** A reserving check: the step's decision of its item, with the reservation when allowed. */
async function reserve(
  context: CheckContext,
  plans: ReadonlyMap<string, EventPlan>,
  request: ReserveRequest,
): Promise<ReservedDecision> {
  if ((request as { cost?: unknown }).cost !== undefined)
    throw new LimiterInputError(
      'invalid_cost',
      'give reserve or cost, not both: a reservation counts what it reserves',
    );
  const item = reserveItem(plans, request, context.wallNow);
  if (item.listed) return listedDecision(item.listed);
  if (item.plan.algorithm === 'token-bucket') return reserveTokens(context, item);
  const outcome = await decideItems(context, [item]);
  return reservedDecision(outcome.decisions[0] as Decision, outcome.lease, reservationPlanOf(item.plan));
}

/** A lone check or peek: the step's decision of its one item. Not async: a refused request rejects. */
function decideOne(
  context: CheckContext,
  plans: ReadonlyMap<string, EventPlan>,
  request: CheckRequest,
  kind: 'check' | 'peek',
): Promise<Decision> {
  try {
    const item = checkItem(plans, request, kind, context.wallNow);
    if (item.plan.algorithm === 'token-bucket' && !item.listed) return decideTokenBucket(context, item);
    // A listed client is decided by its list, whatever limits (shadow ones too) its event has.
    return (item.plan.shadow || item.plan.shadowOnly) && !item.listed
      ? decideWithShadow(context, item)
      : decideItem(context, item);
  } catch (error) {
    // A refused check (LimiterInputError) rejects, as from any async function.
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
