// The last stage of a check, for denials only: the request's increments taken back, and a
// denial's exact retryAfter, remembered while its answer cannot change. Only a denial decided on
// counts read after the request's own increments were taken back is remembered or told a long
// retryAfter: counts seen with increments in flight may hold other requests' that are about to
// be taken back too.
import { StoreUnavailableError, type CounterIncrement } from '../../../store/counter-store.js';
import { rememberDenial } from './cached-denial.js';
import type { Context } from '../../context.js';
import { secondsUntil, type Decision } from '../../decision.js';
import { excessOf, unweightedAmount, type LimitCounts } from './counts.js';
import type { FeatureState } from './feature-cache.js';
import type { CountsSnapshot } from './feature-window.js';
import { bucketKey } from '../../keys.js';
import type { WindowsPlan } from '../../plan-types.js';
import { exactRelease } from './release.js';

/** Takes back increments a round made, each by the cost it counted; a failure is told, and the denial stands. */
export async function takeBack(
  context: Context,
  counted: readonly { readonly increments: readonly CounterIncrement[] }[],
): Promise<void> {
  const decrements = counted.flatMap(({ increments }) => increments.map(({ key, delta }) => ({ key, delta })));
  if (decrements.length === 0) return;
  await context.store.decrement(decrements).catch((error: unknown) => context.onRollbackError?.(error));
}

/** Where a denial was decided: the feature's state, its counts, and the request it refused. */
export interface DeniedCounts {
  readonly plan: WindowsPlan;
  readonly state: FeatureState;
  readonly counts: CountsSnapshot;
  readonly cost: number;
  readonly nowMs: number;
}

/**
 * A denial with its exact retryAfter. When `remember`, which only a denial decided on counts
 * read after the request's own increments were taken back may be, it is repeated from memory
 * while its answer cannot change (see cached-denial.ts). A weighted edge's release time is
 * only an upper bound, so its denials are never repeated.
 */
export async function exactDenial(
  context: Context,
  decision: Decision,
  denied: DeniedCounts,
  { remember }: { remember: boolean },
): Promise<Decision> {
  const { plan, state, counts, cost, nowMs } = denied;
  const exactSecond = await exactReleaseSecond(context, counts.limits, state.base, cost, nowMs, counts.lastResetAt);
  const hold = plan.holdSeconds;
  // On an event with leases or reservations, units a return or a settle gives back may free up before counts leave the window.
  if (exactSecond === undefined)
    return hold === undefined ? decision : { ...decision, retryAfter: Math.min(decision.retryAfter ?? hold, hold) };
  const release = hold === undefined ? exactSecond : Math.min(exactSecond, Math.floor(nowMs / 1000) + hold);
  const exact = { ...decision, retryAfter: secondsUntil(release, nowMs) };
  if (remember && plan.edge !== 'weighted')
    state.denial = rememberDenial(plan, exact, cost, release, nowMs, context.maxDenialCacheMs);
  return exact;
}

/**
 * The second by which enough cost has left every exceeded window, exact to each limit's
 * granularity: decide() alone can only say when a whole coarse bucket has left. Undefined
 * when the store fails now.
 */
async function exactReleaseSecond(
  context: Context,
  counts: readonly LimitCounts[],
  base: string,
  cost: number,
  nowMs: number,
  resetAt: number,
): Promise<number | undefined> {
  const second = Math.floor(nowMs / 1000);
  // Parts that ended by the feature's last reset count nothing, as in the window.
  const read = async (size: number, starts: readonly number[]) => {
    const { read: values } = await context.store.incrementAndRead(
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
