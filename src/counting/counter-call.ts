// The second stage of a check: the store request of one counter (an event and a feature) in
// one round, built from its window, and its answer read back into counts. A round either
// counts (increments the current buckets, reads the rest: one call) or only reads.
import type { OnStoreError } from '../config/policies.js';
import type { CounterIncrement, IncrementAndReadResult, IncrementOptions } from '../store/counter-store.js';
import { levelName, levelStart } from './buckets.js';
import type { LimitCounts } from './decision.js';
import { bucketKey } from './keys.js';
import type { EventPlan } from './plan.js';
import type { FeatureWindow, ReadList } from './feature-window.js';

/** Whether a round counts the request's cost, or only reads the counts. */
export type RoundMode = 'count' | 'read';

/** One counter's call to the store in one round. */
export interface CounterCall {
  readonly mode: RoundMode;
  readonly window: FeatureWindow;
  readonly reads: ReadList;
  /** The increments the call makes (empty when it only reads), the lease's record last. */
  readonly increments: readonly CounterIncrement[];
  /** Every key the call reads: the window's reads, and when it only reads, the current buckets after them. */
  readonly keys: readonly string[];
  /** The cost it counts (0 when it only reads). */
  readonly cost: number;
  /** Store options: what to do with the increments if no answer comes. */
  readonly options: IncrementOptions | undefined;
}

/** A key the call sets to the cost it counts, with its increments (a lease's record of its units). */
export interface RecordWrite {
  readonly key: string;
  readonly ttlSeconds: number;
}

/** What a check tells the store about a request it cannot get an answer for (see IncrementOptions). */
const ADMITTED_IF_UNANSWERED: IncrementOptions = { admittedIfUnanswered: true };
const REFUSED_IF_UNANSWERED: IncrementOptions = { admittedIfUnanswered: false };

/**
 * The call of a round. Counting increments first, so concurrent checks on any instance see
 * each other's cost. An unanswered count stays counted only where the event's rule admits
 * (`onStoreError: allow`); a lease's never does (its degraded answer holds no lease, and its
 * units landing late would be quota nobody can spend).
 */
export function counterCall(
  window: FeatureWindow,
  mode: RoundMode,
  options: { cost: number; onStoreError: OnStoreError; record?: RecordWrite | undefined },
): CounterCall {
  const { reads } = window;
  if (mode === 'read') {
    return {
      mode,
      window,
      reads,
      increments: [],
      keys: [...reads.keys, ...window.currentKeys],
      cost: 0,
      options: undefined,
    };
  }
  const { cost, record } = options;
  const increments = window.increments(cost);
  return {
    mode,
    window,
    reads,
    increments: record ? [...increments, { key: record.key, delta: cost, ttlSeconds: record.ttlSeconds }] : increments,
    keys: reads.keys,
    cost,
    options: options.onStoreError === 'allow' && !record ? ADMITTED_IF_UNANSWERED : REFUSED_IF_UNANSWERED,
  };
}

/**
 * The counts of each limit's window before the request, from the call's answer: a count's own
 * cost comes out of what it incremented. They hold until the window is filled again (by any
 * check of the feature): decide on them before anything else runs.
 */
export function countsOf(call: CounterCall, answer: IncrementAndReadResult): readonly LimitCounts[] {
  const { window, reads } = call;
  if (call.mode === 'count') return window.fill(reads, answer.read, answer.incremented, call.cost);
  return window.fill(reads, answer.read, answer.read.slice(reads.keys.length), 0);
}

/** The increments that count `delta` at `second` in each of an event's bucket sizes (a refund, a lease's return). */
export function incrementsAt(plan: EventPlan, base: string, second: number, delta: number): CounterIncrement[] {
  return plan.levels.map((level) => ({
    key: bucketKey(base, levelName(level), levelStart(level, second)),
    delta,
    ttlSeconds: level.ttlSeconds,
  }));
}
