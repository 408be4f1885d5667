// Windows after a reload from a token bucket. The bucket kept one value per client, its
// theoretical arrival time (TAT, µs), and no history; but each admission moved the TAT one
// emission interval past the later of itself and the TAT before. So a client admitted n times
// since second s has a TAT of at least s + n intervals: at most (TAT − s) / interval admissions
// since s, and none once the TAT is at or before s. Until no old bucket can hold an admission
// inside any window, each limit counts that bound beside its own buckets, read with one more
// key: an upper bound of what the bucket admitted within the window, exact (0) for a client the
// bucket last admitted before it.
import type { Context } from '../../context.js';
import { tokenBucketKey } from '../../keys.js';
import type { BucketCarry, ReloadCarry, TokenBucketLimitPlan, TokenBucketPlan } from '../../plan-types.js';
import type { LimitCounts } from './counts.js';

/** What a reload from the token bucket `previous` to windows of at most `longestWindow` seconds keeps. */
export function bucketCarry(
  previous: TokenBucketPlan,
  longestWindow: number,
  reloadSecond: number,
  spreadSeconds: number,
): { fromBucket: BucketCarry; carry: ReloadCarry } {
  // A tier's or an override's bucket is the client's one value too, moved on at its own rate.
  const limits = [...previous.limits, ...(previous.clients?.limits ?? [])] as readonly Partial<TokenBucketLimitPlan>[];
  const emissionUs = Math.min(...limits.flatMap((limit) => (limit.emissionUs ? [limit.emissionUs] : [])));
  const burst = Math.max(...limits.map((limit) => limit.burst ?? 0));
  // Instances that have not reloaded yet admit through the bucket until the spread ends; a TAT
  // runs at most a burst of intervals ahead of its last admission; then a window must pass.
  const until = reloadSecond + spreadSeconds + Math.ceil((burst * emissionUs) / 1e6) + longestWindow + 2;
  return {
    fromBucket: { emissionUs, burst, until },
    carry: {
      since: reloadSecond,
      exactAt: until,
      how: 'conservative',
      reasons: [
        `algorithm token-bucket → windows: each limit counts, beside its own buckets, the most the client's old bucket can have admitted within its window (from the bucket's stored time, at the fastest old rate, at most burst + rate × window)`,
      ],
    },
  };
}

/** Whether a round at `second` reads the old bucket: the carry, while it lasts. */
export function bucketCarryAt(fromBucket: BucketCarry | undefined, second: number): BucketCarry | undefined {
  return fromBucket !== undefined && second < fromBucket.until ? fromBucket : undefined;
}

/**
 * The client's old bucket value (TAT, µs); 0 when it has none. A read that fails counts as a
 * bucket that may have admitted all it could: the bound then caps at burst + rate × window.
 */
export function readOldBucket(context: Context, base: string): Promise<number> {
  return context.store.incrementAndRead([], [tokenBucketKey(base)]).then(
    ({ read }) => read[0] ?? 0,
    () => Number.POSITIVE_INFINITY,
  );
}

/**
 * The most admissions a bucket whose TAT is `tatUs` can have made within a window of
 * `windowSeconds` ending at `second`, counted from a second before the window's first.
 */
export function admittedWithin(fromBucket: BucketCarry, tatUs: number, second: number, windowSeconds: number): number {
  const sinceUs = (second - windowSeconds) * 1e6;
  if (!(tatUs > sinceUs)) return 0;
  const most = fromBucket.burst + Math.ceil((windowSeconds * 1e6) / fromBucket.emissionUs) + 1;
  return Math.min(most, Math.floor((tatUs - sinceUs) / fromBucket.emissionUs));
}

/** Each limit's counts with what the old bucket may have admitted within its window beside them. */
export function withOldBucket(
  counts: readonly LimitCounts[],
  fromBucket: BucketCarry,
  tatUs: number,
  second: number,
  windowOf: (limit: LimitCounts['plan']) => number,
): LimitCounts[] {
  return counts.map((limit) => ({
    ...limit,
    carried: admittedWithin(fromBucket, tatUs, second, windowOf(limit.plan)),
  }));
}
