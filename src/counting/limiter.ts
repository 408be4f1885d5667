import { DEFAULTS, KEY_PREFIX_PATTERN } from '../config/defaults.js';
import { parsePolicies, PolicySet } from '../config/policies.js';
import { StoreUnavailableError, type CounterIncrement, type CounterStore } from '../store/counter-store.js';
import {
  decide,
  degradedDecision,
  excessOf,
  secondsUntil,
  unweightedAmount,
  type Decision,
  type LimitCounts,
} from './decision.js';
import { rememberDenial, repeatDenial } from './cached-denial.js';
import { FeatureCache, type CacheUsage, type FeatureState } from './feature-cache.js';
import type { CountsSnapshot } from './feature-window.js';
import { bucketStart } from './buckets.js';
import { bucketKey, resetMarkerKey } from './keys.js';
import { planEvents, type EventPlan } from './plan.js';
import { eventPlan, validCost, validFeature, type CheckRequest } from './check-request.js';
import { exactRelease } from './release.js';
import { LimiterInputError } from './errors.js';
import { ADMITTED_IF_UNANSWERED, FROM_DENIED_CACHE, REFUSED_IF_UNANSWERED, type HowDecided } from './check-call.js';
import { createCheckTogether, type TogetherCheck, type TogetherDecision } from './together.js';
import {
  leaseReturnsKey,
  leasePlanOf,
  leaseSecond,
  leaseUnitsKey,
  newLeaseId,
  validUnits,
  type LeaseDecision,
  type LeaseRequest,
  type LeaseReturn,
  type LeaseReturned,
} from './lease.js';

export type { HowDecided } from './check-call.js';
export type { TogetherCheck, TogetherDecision } from './together.js';

export interface LimiterOptions {
  /** A validated PolicySet, or a policy document in the file's shape (validated here). */
  readonly policies: PolicySet | object;
  readonly store: CounterStore;
  /**
   * Milliseconds since the epoch; tests and replays drive the clock through it. Without
   * it, time is the store's clock (Memcached's, which every instance reads) or this
   * process's (the embedded store).
   */
  readonly now?: () => number;
  /** Starts every key, so several deployments can share one Memcached. Default `mg`. */
  readonly keyPrefix?: string;
  /** Told when taking back a denied request's increment fails; the deny stands regardless. */
  readonly onRollbackError?: (error: unknown) => void;
  /** Told when the store cannot answer a check, which the event's `onStoreError` rule then decides. */
  readonly onStoreUnavailable?: (error: StoreUnavailableError, event: string) => void;
  /** Told of every decision of `check` and `peek`, for metrics and usage history. */
  readonly onDecision?: (observed: ObservedDecision) => void;
  /** How far apart the clocks of instances sharing the store may be, plus a request's time in flight. Default 2000. */
  readonly maxClockSkewMs?: number;
  /**
   * Memory this instance may spend keeping features' settled counts and last denials, all
   * events together, in bytes; the least recently checked go first. Default 256 MiB; 0 keeps none.
   */
  readonly cacheBytes?: number;
  /** Longest a denial is answered from memory instead of the store. Default 1000; 0 never. */
  readonly maxDenialCacheMs?: number;
}

export interface RefundRequest extends CheckRequest {
  /** When the check counted it, in milliseconds since the epoch. */
  readonly at: number;
}

/** Units counted by a lease that are not taken back stay this much longer than its hold, for a late duplicate return to find. */
const LEASE_KEY_SLACK_SECONDS = 60;

/** One attempt of a lease at counting its units: the record written with them, and how it was decided. */
interface LeaseAttempt {
  readonly record: CounterIncrement;
  how?: HowDecided;
}

/** What a decision cost and where it came from, for metrics. */
export interface ObservedDecision extends HowDecided {
  readonly event: string;
  /** Who asked: usage history keeps the heaviest clients. */
  readonly feature: string;
  readonly kind: 'check' | 'peek';
  readonly decision: Decision;
}

export interface Limiter {
  /** Decides the request and, when allowed, counts it. */
  check(request: CheckRequest): Promise<Decision>;
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
}

export function createLimiter(options: LimiterOptions): Limiter {
  const policies =
    options.policies instanceof PolicySet
      ? options.policies
      : parsePolicies(options.policies, 'createLimiter({ policies })');
  const plans = planEvents(policies);
  const { store, onRollbackError, onStoreUnavailable, onDecision } = options;
  // Time is the store's when it has a clock every instance reads (per server, so per
  // feature); the local clock otherwise; a driven clock when the caller gives one.
  const { now: drivenNow } = options;
  const { clock } = store;
  const nowFor: (base: string) => number = drivenNow
    ? () => drivenNow()
    : clock
      ? (base) => clock.now(base)
      : () => Date.now();
  const keyPrefix = options.keyPrefix ?? DEFAULTS.keyPrefix;
  if (!KEY_PREFIX_PATTERN.test(keyPrefix)) {
    throw new Error(`key prefix ${JSON.stringify(keyPrefix)} must be 1 to 32 letters, digits, "_", "." or "-"`);
  }
  const maxClockSkewMs = nonNegative('maxClockSkewMs', options.maxClockSkewMs, DEFAULTS.maxClockSkewMs);
  const maxDenialCacheMs = nonNegative('maxDenialCacheMs', options.maxDenialCacheMs, DEFAULTS.maxDenialCacheMs);
  // Counters no other instance shares cannot be changed by another clock.
  const skewSeconds = store.shared ? Math.ceil(maxClockSkewMs / 1000) : 0;
  const features = new FeatureCache(
    keyPrefix,
    nonNegative('cacheBytes', options.cacheBytes, DEFAULTS.cacheMb * 2 ** 20),
    skewSeconds,
  );

  /**
   * The second by which enough cost has left every exceeded window, exact to each limit's
   * granularity: decide() alone can only say when a whole coarse bucket has left. Undefined
   * when the store fails now.
   */
  async function exactReleaseSecond(
    counts: readonly LimitCounts[],
    base: string,
    cost: number,
    nowMs: number,
    resetAt: number,
  ): Promise<number | undefined> {
    const second = Math.floor(nowMs / 1000);
    // Parts that ended by the feature's last reset count nothing, as in the window.
    const read = async (size: number, starts: readonly number[]) => {
      const { read: values } = await store.incrementAndRead(
        [],
        starts.map((start) => bucketKey(base, size, start)),
      );
      return values.map((value, i) => ((starts[i] ?? 0) + size <= resetAt ? 0 : value));
    };
    try {
      let release = second + 1;
      for (const [i, excess] of excessOf(counts, cost, second).entries()) {
        const limit = counts[i];
        if (limit && excess > 0)
          release = Math.max(
            release,
            await exactRelease(limit.plan, limit.buckets, unweightedAmount(limit, excess, second), second, read),
          );
      }
      return release;
    } catch (error) {
      if (error instanceof StoreUnavailableError) return undefined;
      throw error;
    }
  }

  /** Tells onDecision how a decision was reached, and returns it. */
  function observed(
    plan: EventPlan,
    feature: string,
    kind: ObservedDecision['kind'],
    decision: Decision,
    how: HowDecided,
  ): Decision {
    // Fields named, not spread: this runs for every decision, the repeated denials of an abusive client too.
    onDecision?.({
      event: plan.event,
      feature,
      kind,
      decision,
      fromDeniedCache: how.fromDeniedCache,
      keysRead: how.keysRead,
      settledMiss: how.settledMiss,
    });
    return decision;
  }

  /** The store's answer, or undefined when it cannot answer in time (any other error is a bug). */
  async function ask<T>(call: Promise<T>, plan: EventPlan): Promise<T | undefined> {
    try {
      return await call;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      onStoreUnavailable?.(error, plan.event);
      return undefined;
    }
  }

  /** A denial with its exact retryAfter, remembered while its answer cannot change. */
  async function denial(
    decision: Decision,
    counted: CountsSnapshot,
    plan: EventPlan,
    state: FeatureState,
    cost: number,
    nowMs: number,
  ): Promise<Decision> {
    const exactSecond = await exactReleaseSecond(counted.limits, state.base, cost, nowMs, counted.lastResetAt);
    const hold = plan.lease?.holdSeconds;
    // On an event with leases, units a lease returns may free up before counts leave the window.
    if (exactSecond === undefined)
      return hold === undefined ? decision : { ...decision, retryAfter: Math.min(decision.retryAfter ?? hold, hold) };
    const release = hold === undefined ? exactSecond : Math.min(exactSecond, Math.floor(nowMs / 1000) + hold);
    const exact = { ...decision, retryAfter: secondsUntil(release, nowMs) };
    // A weighted edge's release time is only an upper bound: repeating it could deny too long.
    if (plan.edge !== 'weighted' || plan.algorithm === 'fixed')
      state.denial = rememberDenial(exact, cost, release, nowMs, maxDenialCacheMs);
    return exact;
  }

  /**
   * Counts `cost` for a feature when every limit has room, in one store call with a lease's
   * record when it is a lease; a denial takes its increments back, and carries its exact
   * retryAfter. A check's decision is observed here; a lease attempt's is left to the lease.
   */
  async function count(
    plan: EventPlan,
    state: FeatureState,
    feature: string,
    cost: number,
    nowMs: number,
    lease?: LeaseAttempt,
  ): Promise<Decision> {
    const leaseRecord = lease?.record;
    const window = features.windowAt(state, plan, Math.floor(nowMs / 1000));
    // Increment first, so concurrent checks on any instance see each other's cost.
    const increments = window.increments(cost);
    const reads = window.reads;
    const how: HowDecided = {
      keysRead: reads.keys.length,
      settledMiss: window.readsSettled(reads),
      fromDeniedCache: false,
    };
    // A lease unanswered is granted to no one (its degraded answer holds no lease): its units
    // landing late would be quota nobody can spend, a whole lease per degraded check.
    const admitted = plan.onStoreError === 'allow' && !leaseRecord;
    const answer = await ask(
      store.incrementAndRead(
        leaseRecord ? [...increments, leaseRecord] : increments,
        reads.keys,
        admitted ? ADMITTED_IF_UNANSWERED : REFUSED_IF_UNANSWERED,
      ),
      plan,
    );
    // The store cannot answer: the event's onStoreError rule decides.
    if (!answer) return counted(plan, feature, degradedDecision(plan.onStoreError), how, lease);
    const { incremented, read } = answer;
    // Decide on the counts before this request: its own cost comes out of what it incremented.
    const counts = window.fill(reads, read, incremented, cost);
    const decision = decide(counts, { cost, nowMs, kind: 'check' });
    if (decision.allowed) return counted(plan, feature, decision, how, lease);
    const own = window.snapshot();
    // A denied request is not counted: take the increment back.
    await store
      .decrement(increments.map(({ key }) => ({ key, delta: cost })))
      .catch((error: unknown) => onRollbackError?.(error));
    return counted(plan, feature, await denial(decision, own, plan, state, cost, nowMs), how, lease);
  }

  /** A check's decision is observed as it is made; a lease attempt's only once the lease knows it is the last (it keeps `how`). */
  function counted(
    plan: EventPlan,
    feature: string,
    decision: Decision,
    how: HowDecided,
    lease: LeaseAttempt | undefined,
  ): Decision {
    if (!lease) return observed(plan, feature, 'check', decision, how);
    lease.how = how;
    return decision;
  }

  const checkTogether = createCheckTogether({
    plans,
    features,
    store,
    nowFor,
    ask,
    denial,
    observed,
    count,
    onRollbackError,
  });

  /** Whether the feature was reset at or after `second` (on any instance). */
  async function resetSince(base: string, second: number): Promise<boolean> {
    const { read } = await store.incrementAndRead([], [resetMarkerKey(base)]);
    return (read[0] ?? 0) >= second;
  }

  /** Counts changed behind this instance's memory of the feature (a refund, a returned lease): read them again. */
  function forget(state: FeatureState): void {
    state.window = undefined;
    state.denial = undefined;
  }

  return {
    policies,
    plans,
    get cacheUsage() {
      return features.usage;
    },

    // Not async: the one async frame of a check is count()'s. Input errors still reject.
    check(request) {
      try {
        const plan = eventPlan(plans, request.event);
        const feature = validFeature(request.feature);
        const cost = validCost(request.cost, plan);
        const state = features.state(plan, feature);
        const nowMs = nowFor(state.base);
        const repeated = repeatDenial(state.denial, cost, nowMs);
        if (repeated) return Promise.resolve(observed(plan, feature, 'check', repeated, FROM_DENIED_CACHE));
        return count(plan, state, feature, cost, nowMs);
      } catch (error) {
        // A refused check (LimiterInputError) rejects, as from any async function.
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
    },

    checkTogether,

    async refund(request) {
      const plan = eventPlan(plans, request.event);
      const state = features.state(plan, validFeature(request.feature));
      const cost = validCost(request.cost, plan);
      const now = Math.floor(nowFor(state.base) / 1000);
      if (
        typeof request.at !== 'number' ||
        !Number.isFinite(request.at) ||
        request.at > (now + 1) * 1000 + maxClockSkewMs
      )
        throw new LimiterInputError(
          'invalid_time',
          'at must be the milliseconds since the epoch the check was counted at, not in the future',
        );
      const second = Math.floor(request.at / 1000);
      const longest = Math.max(...plan.limits.map((limit) => limit.policy.window));
      if (second + longest <= now) return false;
      // A reset since then forgot the check, and its bucket may now hold only checks counted
      // after it. `at` is the caller's clock: a reset within the skew of it may be after it too.
      if (await resetSince(state.base, second - Math.ceil(maxClockSkewMs / 1000))) return false;
      await store.decrement(
        plan.levels.map(({ size }) => ({ key: bucketKey(state.base, size, bucketStart(second, size)), delta: cost })),
      );
      forget(state);
      return true;
    },

    async lease(request) {
      const plan = eventPlan(plans, request.event);
      const lease = leasePlanOf(plan);
      const feature = validFeature(request.feature);
      let units = Math.min(validUnits(request.units, 'units', 1), lease.maxUnits, plan.maxCost);
      const state = features.state(plan, feature);
      const nowMs = nowFor(state.base);
      const second = Math.floor(nowMs / 1000);
      const ttlSeconds = lease.holdSeconds + LEASE_KEY_SLACK_SECONDS;
      // Counted as one check of `units`; when they do not fit, again with what the denial says remains.
      for (let attempt = 0; ; attempt++) {
        // An id per attempt: a denied attempt's record stays behind, naming units never granted.
        const id = newLeaseId(second);
        const attemptOf: LeaseAttempt = {
          record: { key: leaseUnitsKey(state.base, plan, id), delta: units, ttlSeconds },
        };
        const decision = await count(plan, state, feature, units, nowMs, attemptOf);
        const remaining = Math.min(...decision.limits.map((limit) => limit.remaining));
        if (decision.allowed || decision.degraded || attempt === 2 || !(remaining >= 1)) {
          if (attemptOf.how) observed(plan, feature, 'check', decision, attemptOf.how);
          if (!decision.allowed || decision.degraded) return decision;
          return {
            ...decision,
            lease: { id, units, seconds: lease.lifeSeconds, expiresAt: Math.floor(nowMs) + lease.lifeSeconds * 1000 },
          };
        }
        units = remaining;
      }
    },

    async returnLease(request) {
      const plan = eventPlan(plans, request.event);
      const lease = leasePlanOf(plan);
      const state = features.state(plan, validFeature(request.feature));
      const second = leaseSecond(request.id);
      const unused = validUnits(request.unused, 'unused', 0);
      const nowMs = nowFor(state.base);
      const now = Math.floor(nowMs / 1000);
      if (second > now + skewSeconds)
        throw new LimiterInputError('unknown_lease', 'the lease id is not one memgate gave');
      if (now > second + lease.holdSeconds)
        throw new LimiterInputError(
          'lease_expired',
          `the lease was taken ${now - second} s ago, past its life and the grace for its return (${lease.holdSeconds} s); its units stay counted`,
        );
      const ttlSeconds = lease.holdSeconds + LEASE_KEY_SLACK_SECONDS;
      // Counting the return first makes it the only one, however many arrive at once.
      const { incremented, read } = await store.incrementAndRead(
        [{ key: leaseReturnsKey(state.base, request.id), delta: 1, ttlSeconds }],
        [leaseUnitsKey(state.base, plan, request.id), resetMarkerKey(state.base)],
      );
      const granted = read[0] ?? 0;
      // A reset at or after the lease's second forgot its units (deleting their bucket, which
      // since counts other checks): taking them back would take those checks' counts instead.
      const forgotten = (read[1] ?? 0) >= second;
      if (granted === 0) throw new LimiterInputError('unknown_lease', 'no lease of this id for this event and feature');
      if ((incremented[0] ?? 0) > 1) throw new LimiterInputError('lease_returned', 'the lease was returned already');
      // A holder claiming more than it was given has a bug: its units stay counted.
      if (unused > granted)
        throw new LimiterInputError(
          'invalid_cost',
          `unused ${unused} is more than the ${granted} units the lease holds`,
        );
      const spent = granted - unused;
      // Spent units are counted again at this second first, so no window is short of them meanwhile.
      if (spent > 0)
        await store.incrementAndRead(
          plan.levels.map(({ size, ttlSeconds: ttl }) => ({
            key: bucketKey(state.base, size, bucketStart(now, size)),
            delta: spent,
            ttlSeconds: ttl,
          })),
          [],
        );
      if (forgotten) {
        forget(state);
        return { returned: 0, spent };
      }
      await store.decrement(
        plan.levels.map(({ size }) => ({
          key: bucketKey(state.base, size, bucketStart(second, size)),
          delta: granted,
        })),
      );
      forget(state);
      return { returned: unused, spent };
    },

    async reset(request) {
      const plan = eventPlan(plans, request.event);
      const state = features.state(plan, validFeature(request.feature));
      const second = Math.floor(nowFor(state.base) / 1000);
      const ttlSeconds = Math.max(...plan.levels.map((level) => level.ttlSeconds));
      const straddling = plan.levels.map(({ size }) => bucketKey(state.base, size, bucketStart(second, size)));
      await store.reset({ key: resetMarkerKey(state.base), value: second, ttlSeconds }, straddling);
      forget(state);
    },

    async peek(request) {
      const plan = eventPlan(plans, request.event);
      const feature = validFeature(request.feature);
      const cost = validCost(request.cost, plan);
      const state = features.state(plan, feature);
      const nowMs = nowFor(state.base);
      const repeated = repeatDenial(state.denial, cost, nowMs);
      if (repeated) return observed(plan, feature, 'peek', repeated, FROM_DENIED_CACHE);
      const window = features.windowAt(state, plan, Math.floor(nowMs / 1000));
      const reads = window.reads;
      const keys = [...reads.keys, ...window.currentKeys];
      const how: HowDecided = {
        keysRead: keys.length,
        settledMiss: window.readsSettled(reads),
        fromDeniedCache: false,
      };
      const answer = await ask(store.incrementAndRead([], keys), plan);
      if (!answer) return observed(plan, feature, 'peek', degradedDecision(plan.onStoreError), how);
      const { read } = answer;
      const counts = window.fill(reads, read, read.slice(reads.keys.length), 0);
      const decision = decide(counts, { cost, nowMs, kind: 'peek' });
      return observed(
        plan,
        feature,
        'peek',
        decision.allowed ? decision : await denial(decision, window.snapshot(), plan, state, cost, nowMs),
        how,
      );
    },
  };
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number ≥ 0 (got ${String(value)})`);
  return value;
}
