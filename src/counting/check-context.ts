// What every stage of a check shares, built once per limiter from its options: the store, this
// instance's memory of features, the clock, and the settings and hooks the stages read. A plain
// value handed to the stages, not a closure over the limiter.
import { DEFAULTS, KEY_PREFIX_PATTERN } from '../config/defaults.js';
import { StoreUnavailableError, type CounterStore } from '../store/counter-store.js';
import type { Decision } from './decision.js';
import { FeatureCache } from './feature-cache.js';
import type { EventPlan } from './plan.js';

/** How a decision was reached: from memory, or with how many keys read. */
export interface HowDecided {
  /** Answered from this instance's memory of a denial, without the store. */
  readonly fromDeniedCache: boolean;
  /** Keys read from the store (the reset marker included), over every round of the check; 0 for a repeated denial. */
  readonly keysRead: number;
  /** The window had settled buckets whose counts were not kept and had to be read. */
  readonly settledMiss: boolean;
}

/** A denial repeated from memory: no store call, no key read. */
export const FROM_DENIED_CACHE: HowDecided = { fromDeniedCache: true, keysRead: 0, settledMiss: false };

/** What a decision cost and where it came from, for metrics and usage history. */
export interface ObservedDecision extends HowDecided {
  readonly event: string;
  /** Who asked: usage history keeps the heaviest clients. */
  readonly feature: string;
  readonly kind: 'check' | 'peek';
  readonly decision: Decision;
}

/** A reservation settled: the event and client, what it reserved, and its actual cost. */
export interface SettledReservation {
  readonly event: string;
  readonly feature: string;
  readonly reserved: number;
  readonly cost: number;
}

/** The limiter's options other than its policies. */
export interface CheckOptions {
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
  /** Told of every decision of `check`, `peek`, a lease and each check decided together, for metrics and usage history. */
  readonly onDecision?: (observed: ObservedDecision) => void;
  /** Told of every reservation settled: what it reserved and what it cost (usage history keeps the costs). */
  readonly onSettle?: (settled: SettledReservation) => void;
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

export interface CheckContext {
  readonly store: CounterStore;
  readonly features: FeatureCache;
  /** Now, in milliseconds, by the clock of the server holding `base`'s counters. */
  readonly now: (base: string) => number;
  /** Now by this instance's clock (or the driven one): when an override lapses. */
  readonly wallNow: () => number;
  readonly maxClockSkewMs: number;
  /** The skew in whole seconds when other instances share the counters; 0 when none can. */
  readonly skewSeconds: number;
  readonly maxDenialCacheMs: number;
  readonly onRollbackError: ((error: unknown) => void) | undefined;
  readonly onStoreUnavailable: ((error: StoreUnavailableError, event: string) => void) | undefined;
  readonly onDecision: ((observed: ObservedDecision) => void) | undefined;
  readonly onSettle: ((settled: SettledReservation) => void) | undefined;
}

/** Checks the options and builds what the stages share; a bad option throws at once. */
export function checkContext(options: CheckOptions): CheckContext {
  const { store } = options;
  // Time is the store's when it has a clock every instance reads (per server, so per
  // feature); the local clock otherwise; a driven clock when the caller gives one.
  const { now: drivenNow } = options;
  const { clock } = store;
  const now: (base: string) => number = drivenNow
    ? () => drivenNow()
    : clock
      ? (base) => clock.now(base)
      : () => Date.now();
  const keyPrefix = options.keyPrefix ?? DEFAULTS.keyPrefix;
  if (!KEY_PREFIX_PATTERN.test(keyPrefix)) {
    throw new Error(`key prefix ${JSON.stringify(keyPrefix)} must be 1 to 32 letters, digits, "_", "." or "-"`);
  }
  const maxClockSkewMs = nonNegative('maxClockSkewMs', options.maxClockSkewMs, DEFAULTS.maxClockSkewMs);
  // Counters no other instance shares cannot be changed by another clock.
  const skewSeconds = store.shared ? Math.ceil(maxClockSkewMs / 1000) : 0;
  return {
    store,
    features: new FeatureCache(
      keyPrefix,
      nonNegative('cacheBytes', options.cacheBytes, DEFAULTS.cacheMb * 2 ** 20),
      skewSeconds,
    ),
    now,
    wallNow: drivenNow ?? Date.now,
    maxClockSkewMs,
    skewSeconds,
    maxDenialCacheMs: nonNegative('maxDenialCacheMs', options.maxDenialCacheMs, DEFAULTS.maxDenialCacheMs),
    onRollbackError: options.onRollbackError,
    onStoreUnavailable: options.onStoreUnavailable,
    onDecision: options.onDecision,
    onSettle: options.onSettle,
  };
}

/** The store's answer, or undefined when it cannot answer in time (any other error is a bug). */
export async function ask<T>(context: CheckContext, call: Promise<T>, plan: EventPlan): Promise<T | undefined> {
  try {
    return await call;
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    context.onStoreUnavailable?.(error, plan.event);
    return undefined;
  }
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number ≥ 0 (got ${String(value)})`);
  return value;
}
