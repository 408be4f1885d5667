// The second stage of a check: the store request of one counter (an event and a feature) in
// one round, built from its window, and its answer read back into counts. A round either
// counts (increments the current buckets, reads the rest: one call) or only reads.
import { countedAt } from './plan.js';
import type { OnStoreError } from '../../../config/policies.js';
import type { CounterIncrement, IncrementAndReadResult, IncrementOptions } from '../../../store/counter-store.js';
import { levelName, levelStart } from './buckets.js';
import type { LimitCounts } from './counts.js';
import { bucketKey } from '../../keys.js';
import type { WindowsPlan } from '../../plan-types.js';
import type { FeatureWindow, ReadList } from './feature-window.js';
import type { RoundMode } from '../part.js';

/** One counter's call to the store in one round. */
export interface CounterCall {
  readonly mode: RoundMode;
  readonly window: FeatureWindow;
  readonly reads: ReadList;
  /** The increments the call makes (empty when it only reads). */
  readonly increments: readonly CounterIncrement[];
  /** Every key the call reads: the window's reads, and when it only reads, the current buckets after them. */
  readonly keys: readonly string[];
  /** The cost it counts (0 when it only reads). */
  readonly cost: number;
  /** Store options: what to do with the increments if no answer comes. */
  readonly options: IncrementOptions | undefined;
}

/** What a check tells the store about a request it cannot get an answer for (see IncrementOptions). */
const ADMITTED_IF_UNANSWERED: IncrementOptions = { admittedIfUnanswered: true };
const REFUSED_IF_UNANSWERED: IncrementOptions = { admittedIfUnanswered: false };

/**
 * The call of a round. Counting increments first, so concurrent checks on any instance see
 * each other's cost. An unanswered count stays counted only where the event's rule admits
 * (`onStoreError: allow`) and no record follows it: a lease's or a reservation's never does
 * (its degraded answer holds no lease, and its units landing late would be quota nobody can
 * spend).
 */
export function counterCall(
  window: FeatureWindow,
  mode: RoundMode,
  options: { cost: number; onStoreError: OnStoreError; recorded: boolean },
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
  const { cost } = options;
  return {
    mode,
    window,
    reads,
    increments: window.increments(cost),
    keys: reads.keys,
    cost,
    options: options.onStoreError === 'allow' && !options.recorded ? ADMITTED_IF_UNANSWERED : REFUSED_IF_UNANSWERED,
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
export function incrementsAt(plan: WindowsPlan, base: string, second: number, delta: number): CounterIncrement[] {
  return plan.levels
    .filter((level) => countedAt(level, second))
    .map((level) => ({
      key: bucketKey(base, levelName(level), levelStart(level, second)),
      delta,
      ttlSeconds: level.ttlSeconds,
    }));
}
