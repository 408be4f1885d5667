import { parsePolicies, PolicySet } from '../config/policies.js';
import { StoreUnavailableError, type CounterStore } from '../store/counter-store.js';
import { floorTo } from './cover.js';
import { decide, excessOf, secondsUntil, type Decision, type LimitCounts } from './decision.js';
import { bucketKey, counterKeyBase } from './keys.js';
import { planEvents, type EventPlan } from './plan.js';
import { eventPlan, validCost, validFeature } from './request.js';
import { exactRelease } from './retry.js';
import { windowBuckets } from './window-buckets.js';

const KEY_PREFIX_PATTERN = /^[A-Za-z0-9_.-]{1,32}$/;

export interface CheckRequest {
  /** An event of the policy file, e.g. `login`. */
  readonly event: string;
  /** Who is doing it: an IP, a user id, an e-mail; any string up to 1 KB. */
  readonly feature: string;
  /** How much of the limit this request uses; a positive integer, 1 by default. */
  readonly cost?: number | undefined;
}

export interface LimiterOptions {
  /** A validated PolicySet, or a policy document in the file's shape (validated here). */
  readonly policies: PolicySet | object;
  readonly store: CounterStore;
  /** Milliseconds since the epoch; tests and replays drive the clock through it. */
  readonly now?: () => number;
  /** Starts every key, so several deployments can share one Memcached. Default `mg`. */
  readonly keyPrefix?: string;
  /** Told when taking back a denied request's increment fails; the deny stands regardless. */
  readonly onRollbackError?: (error: unknown) => void;
}

export interface Limiter {
  /** Decides the request and, when allowed, counts it. */
  check(request: CheckRequest): Promise<Decision>;
  /** The decision `check` would make now, counting nothing. */
  peek(request: CheckRequest): Promise<Decision>;
  readonly policies: PolicySet;
  readonly plans: ReadonlyMap<string, EventPlan>;
}

export function createLimiter(options: LimiterOptions): Limiter {
  const policies = options.policies instanceof PolicySet ? options.policies : parsePolicies(options.policies, 'createLimiter({ policies })');
  const plans = planEvents(policies);
  const { store, onRollbackError } = options;
  const now = options.now ?? Date.now;
  const keyPrefix = options.keyPrefix ?? 'mg';
  if (!KEY_PREFIX_PATTERN.test(keyPrefix)) {
    throw new Error(`key prefix ${JSON.stringify(keyPrefix)} must be 1 to 32 letters, digits, "_", "." or "-"`);
  }

  /**
   * A denial's retryAfter, exact to each limit's granularity: decide() alone can only say
   * when a whole coarse bucket has left. Falls back to its answer if the store fails now.
   */
  async function withExactRetry(decision: Decision, counts: readonly LimitCounts[], base: string, cost: number, nowMs: number): Promise<Decision> {
    const now = Math.floor(nowMs / 1000);
    const read = async (size: number, starts: readonly number[]) =>
      (await store.incrementAndRead([], starts.map((start) => bucketKey(base, size, start)))).read;
    try {
      let retryAfter = 0;
      for (const [i, excess] of excessOf(counts, cost, now).entries()) {
        const limit = counts[i];
        if (limit && excess > 0) {
          retryAfter = Math.max(retryAfter, secondsUntil(await exactRelease(limit.plan, limit.buckets, excess, now, read), nowMs));
        }
      }
      return { ...decision, retryAfter };
    } catch (error) {
      if (error instanceof StoreUnavailableError) return decision;
      throw error;
    }
  }

  function resolve(request: CheckRequest): { plan: EventPlan; base: string; cost: number } {
    const plan = eventPlan(plans, request.event);
    const feature = validFeature(request.feature);
    const cost = validCost(request.cost, plan);
    return { plan, base: counterKeyBase(keyPrefix, plan.event, feature), cost };
  }

  return {
    policies,
    plans,

    async check(request) {
      const { plan, base, cost } = resolve(request);
      const nowMs = now();
      const second = Math.floor(nowMs / 1000);
      // Increment first, so concurrent checks on any instance see each other's cost.
      const increments = plan.levels.map((level) => ({
        key: bucketKey(base, level.size, floorTo(second, level.size)),
        delta: cost,
        ttlSeconds: level.ttlSeconds,
      }));
      const windows = windowBuckets(plan, base, second, true);
      const { incremented, read } = await store.incrementAndRead(increments, windows.reads);
      // Decide on the counts before this request: take its own cost out of what it incremented.
      const values = incremented.map((value) => value - cost);
      for (const value of read) values.push(value);
      const counts = windows.counts(values);
      const decision = decide(counts, cost, nowMs, true);
      if (decision.allowed) return decision;
      // A denied request is not counted: take the increment back.
      await store.decrement(increments.map(({ key }) => ({ key, delta: cost }))).catch((error: unknown) => onRollbackError?.(error));
      return withExactRetry(decision, counts, base, cost, nowMs);
    },

    async peek(request) {
      const { plan, base, cost } = resolve(request);
      const nowMs = now();
      const windows = windowBuckets(plan, base, Math.floor(nowMs / 1000), false);
      const { read } = await store.incrementAndRead([], windows.reads);
      const counts = windows.counts(read);
      const decision = decide(counts, cost, nowMs, false);
      return decision.allowed ? decision : withExactRetry(decision, counts, base, cost, nowMs);
    },
  };
}
