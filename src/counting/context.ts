// What every stage of a check and every part shares, built once per limiter from its options: the store, this
// instance's memory of features, the clock, and the settings and hooks the stages read. A plain
// value handed to the stages, not a closure over the limiter.
import { DEFAULTS, KEY_PREFIX_PATTERN } from '../config/defaults.js';
import type { CounterStore, StoreUnavailableError } from '../store/counter-store.js';
import { fixedAnswers, type FixedAnswers } from './decision.js';
import type { ObservedDecision, SettledReservation } from './report.js';
import { FeatureCache } from './algorithms/windows/feature-cache.js';

/** The limiter's options other than its policies. */
export interface CheckOptions {
  readonly store: CounterStore;
  /**
   * Milliseconds since the epoch; tests and replays drive the clock through it. Without
   * it, time is the store's clock (Memcached's, which every instance reads) or this
   * process's (the embedded store). Waits on requests in flight (a denial looking again)
   * run in real time either way.
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

export interface Context {
  /** The version of the policies decided under, and the answers not decided on counts, each naming it. */
  readonly answers: FixedAnswers;
  readonly store: CounterStore;
  /** Starts every key (keys.ts). */
  readonly keyPrefix: string;
  readonly features: FeatureCache;
  /** Now, in milliseconds, by the clock of the server holding `base`'s counters. */
  readonly now: (base: string) => number;
  /** Now by this instance's clock (or the driven one): when an override lapses. */
  readonly wallNow: () => number;
  /**
   * This process's monotonic clock in milliseconds, never the driven one: how long the store's
   * counts have stood still (algorithms/windows/overfull.ts). Requests in flight land in real
   * time, and a driven clock stands still while a request looks again.
   */
  readonly monotonicNow: () => number;
  readonly maxClockSkewMs: number;
  /** The skew in whole seconds when other instances share the counters; 0 when none can. */
  readonly skewSeconds: number;
  readonly maxDenialCacheMs: number;
  readonly onRollbackError: ((error: unknown) => void) | undefined;
  readonly onStoreUnavailable: ((error: StoreUnavailableError, event: string) => void) | undefined;
  readonly onDecision: ((observed: ObservedDecision) => void) | undefined;
  readonly onSettle: ((settled: SettledReservation) => void) | undefined;
  /** Requests of this process in their rounds on `store` now, over every limiter on it (step.ts). */
  readonly storeRounds: { inRounds: number };
}

/** Each store's count of requests in their rounds, shared by every context on it. */
const roundsByStore = new WeakMap<CounterStore, { inRounds: number }>();

function storeRounds(store: CounterStore): { inRounds: number } {
  let rounds = roundsByStore.get(store);
  if (!rounds) {
    rounds = { inRounds: 0 };
    roundsByStore.set(store, rounds);
  }
  return rounds;
}

/** Checks the options and builds what the stages share; a bad option throws at once. */
export function createContext(options: CheckOptions, version: string): Context {
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
    answers: fixedAnswers(version),
    store,
    storeRounds: storeRounds(store),
    keyPrefix,
    features: new FeatureCache(
      keyPrefix,
      nonNegative('cacheBytes', options.cacheBytes, DEFAULTS.cacheMb * 2 ** 20),
      skewSeconds,
    ),
    now,
    wallNow: drivenNow ?? Date.now,
    monotonicNow: () => performance.now(),
    maxClockSkewMs,
    skewSeconds,
    maxDenialCacheMs: nonNegative('maxDenialCacheMs', options.maxDenialCacheMs, DEFAULTS.maxDenialCacheMs),
    onRollbackError: options.onRollbackError,
    onStoreUnavailable: options.onStoreUnavailable,
    onDecision: options.onDecision,
    onSettle: options.onSettle,
  };
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number ≥ 0 (got ${String(value)})`);
  return value;
}
