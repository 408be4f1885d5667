import { DEFAULTS, KEY_PREFIX_PATTERN } from '../config/defaults.js';
import { parsePolicies, PolicySet } from '../config/policies.js';
import { StoreUnavailableError, type CounterStore, type IncrementOptions } from '../store/counter-store.js';
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
import type { FeatureWindow } from './feature-window.js';
import { bucketStart } from './buckets.js';
import { bucketKey, resetMarkerKey } from './keys.js';
import { planEvents, type EventPlan } from './plan.js';
import { eventPlan, validCost, validFeature, type CheckRequest } from './check-request.js';
import { exactRelease } from './release.js';

/** What a check tells the store about a request it cannot get an answer for (see IncrementOptions). */
const ADMITTED_IF_UNANSWERED: IncrementOptions = { admittedIfUnanswered: true };
const REFUSED_IF_UNANSWERED: IncrementOptions = { admittedIfUnanswered: false };

/** A denial repeated from memory: no store call, no key read. */
const FROM_DENIED_CACHE: HowDecided = { fromDeniedCache: true, keysRead: 0, settledMiss: false };

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

/** What a decision cost and where it came from, for metrics. */
export interface ObservedDecision extends HowDecided {
  readonly event: string;
  /** Who asked: usage history keeps the heaviest clients. */
  readonly feature: string;
  readonly kind: 'check' | 'peek';
  readonly decision: Decision;
}

/** How a decision was reached: from memory, or with how many keys read. */
export interface HowDecided {
  /** Answered from this instance's memory of a denial, without the store. */
  readonly fromDeniedCache: boolean;
  /** Keys read from the store (the reset marker included); 0 for a repeated denial. */
  readonly keysRead: number;
  /** The window had settled buckets whose counts were not kept and had to be read. */
  readonly settledMiss: boolean;
}

export interface Limiter {
  /** Decides the request and, when allowed, counts it. */
  check(request: CheckRequest): Promise<Decision>;
  /** The decision `check` would make now, counting nothing. */
  peek(request: CheckRequest): Promise<Decision>;
  /**
   * Forgets everything a feature has counted for an event, on every instance sharing the
   * store: a marker records the reset second, which every check reads, and the buckets
   * holding that second are deleted, so they count only what comes after it.
   */
  reset(request: Omit<CheckRequest, 'cost'>): Promise<void>;
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
    window: FeatureWindow,
    plan: EventPlan,
    state: FeatureState,
    cost: number,
    nowMs: number,
  ): Promise<Decision> {
    // The window's buckets are shared with concurrent checks of this feature: keep this check's counts.
    const own = window.limits.map(({ plan, buckets }) => ({ plan, buckets: buckets.map((bucket) => ({ ...bucket })) }));
    const release = await exactReleaseSecond(own, state.base, cost, nowMs, window.lastResetAt);
    if (release === undefined) return decision;
    const exact = { ...decision, retryAfter: secondsUntil(release, nowMs) };
    // A weighted edge's release time is only an upper bound: repeating it could deny too long.
    if (plan.edge !== 'weighted' || plan.algorithm === 'fixed')
      state.denial = rememberDenial(exact, cost, release, nowMs, maxDenialCacheMs);
    return exact;
  }

  return {
    policies,
    plans,
    get cacheUsage() {
      return features.usage;
    },

    async check(request) {
      const plan = eventPlan(plans, request.event);
      const feature = validFeature(request.feature);
      const cost = validCost(request.cost, plan);
      const state = features.state(plan, feature);
      const nowMs = nowFor(state.base);
      const repeated = repeatDenial(state.denial, cost, nowMs);
      if (repeated) return observed(plan, feature, 'check', repeated, FROM_DENIED_CACHE);
      const window = features.windowAt(state, plan, Math.floor(nowMs / 1000));
      // Increment first, so concurrent checks on any instance see each other's cost.
      const increments = window.increments(cost);
      const reads = window.reads;
      const how: HowDecided = {
        keysRead: reads.keys.length,
        settledMiss: window.readsSettled(reads),
        fromDeniedCache: false,
      };
      const answer = await ask(
        store.incrementAndRead(
          increments,
          reads.keys,
          plan.onStoreError === 'allow' ? ADMITTED_IF_UNANSWERED : REFUSED_IF_UNANSWERED,
        ),
        plan,
      );
      // The store cannot answer: the event's onStoreError rule decides.
      if (!answer) return observed(plan, feature, 'check', degradedDecision(plan.onStoreError), how);
      const { incremented, read } = answer;
      // Decide on the counts before this request: its own cost comes out of what it incremented.
      const counts = window.fill(reads, read, incremented, cost);
      const decision = decide(counts, { cost, nowMs, kind: 'check' });
      if (decision.allowed) return observed(plan, feature, 'check', decision, how);
      // A denied request is not counted: take the increment back.
      await store
        .decrement(increments.map(({ key }) => ({ key, delta: cost })))
        .catch((error: unknown) => onRollbackError?.(error));
      return observed(plan, feature, 'check', await denial(decision, window, plan, state, cost, nowMs), how);
    },

    async reset(request) {
      const plan = eventPlan(plans, request.event);
      const state = features.state(plan, validFeature(request.feature));
      const second = Math.floor(nowFor(state.base) / 1000);
      const ttlSeconds = Math.max(...plan.levels.map((level) => level.ttlSeconds));
      const straddling = plan.levels.map(({ size }) => bucketKey(state.base, size, bucketStart(second, size)));
      await store.reset({ key: resetMarkerKey(state.base), value: second, ttlSeconds }, straddling);
      state.window = undefined;
      state.denial = undefined;
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
        decision.allowed ? decision : await denial(decision, window, plan, state, cost, nowMs),
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
