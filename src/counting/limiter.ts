// The limiter: memgate's ways to ask, each a request resolved into items (resolve.ts) and
// decided by the one check step (step.ts), with what is recorded after a decision (records/)
// and what changes counts outside a check (corrections.ts).
import { createHash } from 'node:crypto';
import { DEFAULTS } from '../config/defaults.js';
import type { EnvoyConfig } from '../config/envoy-model.js';
import { withEnvoyLimits } from '../config/envoy-events.js';
import { parsePolicies, PolicySet } from '../config/policies.js';
import type { CacheUsage } from './algorithms/windows/feature-cache.js';
import { partOf } from './algorithms/parts.js';
import { createContext, type CheckOptions } from './context.js';
import { counterKeyBase } from './keys.js';
import { refund, reset, type RefundRequest } from './corrections.js';
import type { Decision } from './decision.js';
import { LimiterInputError } from './errors.js';
import { planEvents, planEventsInSlices, type EventPlan, type ReloadFrom } from './plan.js';
import {
  returnLease,
  takeLease,
  type LeaseDecision,
  type LeaseRequest,
  type LeaseReturn,
  type LeaseReturned,
} from './records/leases.js';
import {
  reservationPlanOf,
  reservedDecision,
  settle,
  type ReservedDecision,
  type ReserveRequest,
  type SettleRequest,
  type Settled,
} from './records/reservations.js';
import type { CheckItem } from './check-item.js';
import { NOTHING_READ, reportDecision } from './report.js';
import {
  eventPlan,
  validFeature,
  resolveAsk,
  type CheckRequest,
  type ResolveOptions,
  type TogetherCheck,
} from './resolve.js';
import { RuntimePlans } from './runtime-plans.js';
import { decideCheck, decideChecks } from './step.js';

export type { HowDecided, ObservedDecision, SettledReservation } from './report.js';
export type { TogetherCheck } from './resolve.js';
export type { RefundRequest } from './corrections.js';

/** Gives back the concurrency slot `id` that a check of `event` for `feature` took. */
export interface ReleaseRequest {
  readonly event: string;
  readonly feature: string;
  readonly id: string;
}

/** `released`: the slot was held and is free now; false when it was free already. */
export interface Released {
  readonly released: boolean;
}
export type { Reservation, ReservedDecision, ReserveRequest, SettleRequest, Settled } from './records/reservations.js';

export interface LimiterOptions extends CheckOptions {
  /** A validated PolicySet, or a policy document in the file's shape (validated here). */
  readonly policies: PolicySet | object;
  /**
   * envoyproxy/ratelimit's configuration, decided with the policies: each of its limits is an
   * event of its own (`envoy:<domain>.<path>`), and the gRPC service matches descriptors in it.
   */
  readonly envoy?: EnvoyConfig | undefined;
  /**
   * Names these policies in every decision (`policyVersion`). Default: the first 12 hex digits
   * of a SHA-256 of the policies as given (the service uses a hash of the files it read).
   */
  readonly version?: string | undefined;
  /**
   * The limiter these policies replace (a reload): each event keeps what it counted, judged
   * conservatively until the new limits can be judged exactly (`carry` on its plans, reported
   * by policySizing and the reload; docs/operations.md, Changing policies).
   */
  readonly replacing?: Limiter | undefined;
  /** How far apart instances may load the same files, in seconds. Default DEFAULTS.reloadSpreadSeconds (120). */
  readonly reloadSpreadSeconds?: number | undefined;
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
  /**
   * Per check, whether its denial was repeated from this instance's memory without asking the
   * store (a client still over a limit it was just refused by); absent when none was.
   */
  readonly fromMemory?: readonly boolean[];
}

/** What a gateway asks: the event its route counts (none: let through uncounted), the client, its tier. */
export interface GateRequest {
  readonly event: string | undefined;
  readonly feature: string;
  readonly tier?: string | undefined;
}

/** A check, or with `reserve` in place of `cost` a reservation (see Limiter.settle). */
export type CheckOrReserve = CheckRequest | ReserveRequest;

export interface Limiter {
  /**
   * The limiter of the policies in force now: one immutable snapshot of the policies, their
   * plans, the Envoy configuration and the gateway section. A request of several calls (a
   * reserve and its checks, a gateway's lists and check, an Envoy call) takes it once and
   * makes every call on it, so that a reload between its awaits cannot decide it under two
   * versions. A limiter that is not reloadable is its own snapshot.
   */
  current(): Limiter;
  /** The version of the policies this limiter decides under, named in its decisions. */
  readonly version: string;
  /** The Envoy configuration decided with the policies, when there is one. */
  readonly envoy: EnvoyConfig | undefined;
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
  /**
   * Gives back the request in flight a check of a concurrency limit holds (its decision's
   * `slot`), once the request is done. `released` is false when the slot was free already:
   * released before, or freed by its timeout.
   */
  release(request: ReleaseRequest): Promise<Released>;
  /**
   * A gateway's question (/gate), under the policy file's `gateway` section: its lists hold
   * first, then the event's as a check's. Without an event (a path let through uncounted) only
   * the lists apply: a listed client is reported under the event `gateway:unrouted`.
   */
  gate(request: GateRequest): Promise<Decision>;
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
  const policies = countedPolicies(options);
  const plans = planEvents(policies, reloadFrom(options));
  return limiterOf(withoutReplaced(options), policies, plans);
}

/**
 * createLimiter, planning in slices of a few milliseconds between which the event loop runs:
 * what a service that is serving uses to put new policies in force.
 */
export async function createLimiterInSlices(options: LimiterOptions): Promise<Limiter> {
  const policies = countedPolicies(options);
  const plans = await planEventsInSlices(policies, undefined, reloadFrom(options));
  return limiterOf(withoutReplaced(options), policies, plans);
}

/**
 * The options a limiter keeps: not the one it replaced, which its plans were made from and
 * nothing needs after. Kept, every reload held every limiter before it (27 MB a reload of
 * the largest file).
 */
function withoutReplaced(options: LimiterOptions): LimiterOptions {
  return options.replacing === undefined ? options : { ...options, replacing: undefined };
}

/** The plans a reload replaces and its moment, by the limiter's clock. */
function reloadFrom(options: LimiterOptions): ReloadFrom | undefined {
  const { replacing } = options;
  if (!replacing) return undefined;
  const skewMs = options.maxClockSkewMs ?? DEFAULTS.maxClockSkewMs;
  return {
    previous: replacing.current().plans,
    moment: {
      second: Math.floor((options.now ?? Date.now)() / 1000),
      skewSeconds: options.store.shared ? Math.ceil(skewMs / 1000) : 0,
      spreadSeconds: options.reloadSpreadSeconds,
    },
  };
}

/** The policies given, validated, with the Envoy configuration's limits as events. */
function countedPolicies(options: LimiterOptions): PolicySet {
  const given =
    options.policies instanceof PolicySet
      ? options.policies
      : parsePolicies(options.policies, 'createLimiter({ policies })');
  return withEnvoyLimits(given, options.envoy);
}

function limiterOf(options: LimiterOptions, policies: PolicySet, plans: Map<string, EventPlan>): Limiter {
  const { envoy } = options;
  const version = options.version ?? versionOf(policies);
  const context = createContext(options, version);
  const now = context.wallNow;
  const alone: ResolveOptions = { now, beyondLimit: 'refuse' };
  // Checks of one request: a cost beyond a limit is answered "never", so the others still get theirs.
  const together: ResolveOptions = { now, beyondLimit: 'answer', runtime: new RuntimePlans() };

  /** A lone check or peek. Not async: a refused request rejects. */
  const decideOne = (request: CheckRequest, kind: 'check' | 'peek'): Promise<Decision> => {
    try {
      const item = resolveAsk(plans, kind, request, alone);
      return decideCheck(context, item);
    } catch (error) {
      // A refused check (LimiterInputError) rejects, as from any async function.
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  };

  /** A reserving check: the step's decision, with the reservation its record names when allowed. */
  const reserve = async (request: ReserveRequest): Promise<ReservedDecision> => {
    if ((request as { cost?: unknown }).cost !== undefined)
      throw new LimiterInputError(
        'invalid_cost',
        'give reserve or cost, not both: a reservation counts what it reserves',
      );
    reservationPlanOf(eventPlan(plans, request.event));
    const item = resolveAsk(
      plans,
      'reserve',
      { event: request.event, feature: request.feature, cost: request.reserve, tier: request.tier },
      alone,
    );
    const outcome = await decideChecks(context, [item]);
    return reservedDecision(context, item, outcome.decisions[0] as Decision, outcome.counted[0], {
      unrecorded: 'undo',
    });
  };

  const limiter: Limiter = {
    current: () => limiter,
    version,
    envoy,
    policies,
    plans,
    get cacheUsage() {
      return context.features.usage;
    },
    close: () => options.store.close(),
    check: (request) => (reserving(request) ? reserve(request) : decideOne(request, 'check')),
    settle: (request) => settle(context, plans, request, now),
    peek: (request) => decideOne(request, 'peek'),
    async checkTogether(checks) {
      // Nothing to decide is a caller's bug, not a client's request.
      if (checks.length === 0) throw new RangeError('checkTogether takes at least one check');
      const reserving = checks.filter((check) => check.reserve === true);
      if (reserving.length > 1) throw new RangeError('checkTogether reserves for at most one of its checks');
      const items = checks.map((check) => {
        if (check.reserve === true) reservationPlanOf(eventPlan(plans, check.event));
        const kind = check.peek === true ? 'peek' : check.reserve === true ? 'reserve' : 'check';
        return resolveAsk(plans, kind, check, together);
      });
      const { allowed, decisions, retryAfter, counted, fromMemory } = await decideChecks(context, items);
      const at = items.findIndex((item) => item.hold === 'reservation');
      let answers = decisions;
      if (at !== -1 && allowed) {
        // Counted with the others: a record the store could not take leaves it counted as a plain check, unsettled.
        const reserved = await reservedDecision(
          context,
          items[at] as CheckItem,
          decisions[at] as Decision,
          counted[at],
          {
            unrecorded: 'keep',
          },
        );
        answers = decisions.map((decision, i) => (i === at ? reserved : decision));
      }
      const decided: TogetherDecision =
        retryAfter === undefined ? { allowed, checks: answers } : { allowed, checks: answers, retryAfter };
      return fromMemory ? { ...decided, fromMemory } : decided;
    },
    lease: (request) => takeLease(context, plans, request, now),
    returnLease: (request) => returnLease(context, plans, request),
    refund: (request) => refund(context, plans, request, now),
    reset: (request) => reset(context, plans, request),
    async release({ event, feature, id }) {
      const plan = eventPlan(plans, event);
      const client = validFeature(feature);
      const part = partOf(plan);
      if (!part.release)
        throw new LimiterInputError(
          'release_off',
          `event ${plan.event} holds no requests in flight to release: its checks are over once decided (only algorithm: concurrency holds slots)`,
        );
      return { released: await part.release(context, plan, counterKeyBase(context.keyPrefix, plan.event, client), id) };
    },
    async gate({ event, feature, tier }) {
      const { gateway } = policies;
      if (!gateway) throw new RangeError('gate needs a policy file with a gateway section');
      if (event !== undefined)
        return decideCheck(context, resolveAsk(plans, 'check', { event, feature, tier }, { ...alone, lists: gateway }));
      const listed = gateway.listed(validFeature(feature));
      if (!listed) return context.answers.uncounted;
      const decision = context.answers.listed(listed);
      reportDecision(context.onDecision, { plan: UNROUTED, feature, counting: true }, decision, NOTHING_READ);
      return decision;
    },
  };
  return limiter;
}

/** Where a gateway's listed clients on paths no route counts are reported. */
const UNROUTED = { event: 'gateway:unrouted' } as const;

/** Whether a check reserves: `reserve` given, even as undefined by a JavaScript caller, is not. */
function reserving(request: CheckOrReserve): request is ReserveRequest {
  return (request as { reserve?: unknown }).reserve !== undefined;
}

/** The first 12 hex digits of a SHA-256 of the policies (the Envoy configuration's limits among them) and the gateway section. */
function versionOf(policies: PolicySet): string {
  const text = JSON.stringify(
    [policies.source, [...policies.events], policies.gateway ?? null],
    (_key, value: unknown) => (value instanceof Map ? [...value] : value),
  );
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}
