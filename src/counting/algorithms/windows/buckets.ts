// Bucket arithmetic: where a second's bucket starts, runs of buckets, and sums over the
// counts of a window's buckets. No policies, no store: the plan, the window and the
// decision build on it.

/**
 * Periods of a calendar window (counting/calendar.ts), whose buckets are not aligned to the
 * epoch and whose lengths vary: a level of its own, named by `tag` in keys.
 */
export interface Periods {
  readonly tag: string;
  periodAt(second: number): { readonly start: number; readonly size: number };
}

/** Consecutive buckets of one level: `count` buckets of `size` seconds from `start` (epoch seconds). */
export interface BucketRun {
  readonly size: number;
  readonly start: number;
  readonly count: number;
  /** The calendar window the bucket is a period of (then count is 1). */
  readonly calendar?: Periods | undefined;
}

/** A level of buckets: `size` seconds aligned to the epoch, or a calendar window's periods. */
export interface BucketLevel {
  /** Seconds; for a calendar window, its longest period. */
  readonly size: number;
  readonly calendar?: Periods | undefined;
}

/** The start of the bucket of `size` seconds holding `second`: buckets are aligned to the epoch. */
export function bucketStart(second: number, size: number): number {
  return Math.floor(second / size) * size;
}

/** The start of the bucket of `level` holding `second`. */
export function levelStart(level: BucketLevel, second: number): number {
  return level.calendar ? level.calendar.periodAt(second).start : bucketStart(second, level.size);
}

/** How keys name a level: its size in seconds, or its calendar window's tag. */
export function levelName(level: BucketLevel): number | string {
  return level.calendar ? level.calendar.tag : level.size;
}

export function bucketCount(runs: readonly BucketRun[]): number {
  let total = 0;
  for (const run of runs) total += run.count;
  return total;
}

/** One bucket as read from the store. */
export interface CountedBucket {
  readonly start: number;
  readonly size: number;
  readonly count: number;
}

/** A summary of a limit's oldest buckets, so a check need not walk them again. */
export interface SettledPrefix {
  /** How many of the oldest buckets it sums; fewer than all of them. */
  readonly length: number;
  readonly total: number;
  /** The index of the oldest bucket with any count, or -1 when they are all empty. */
  readonly firstCounted: number;
}

/** Sums the first `length` buckets. */
export function settledPrefix(buckets: readonly CountedBucket[], length: number): SettledPrefix {
  let total = 0;
  let firstCounted = -1;
  for (let i = 0; i < length; i++) {
    const count = (buckets[i] as CountedBucket).count;
    if (firstCounted === -1 && count > 0) firstCounted = i;
    total += count;
  }
  return { length, total, firstCounted };
}

/**
 * The bucket, oldest first, by which at least `amount` has been counted, and how much the
 * buckets before it hold. `pending` is cost about to be added to the newest bucket.
 */
export function crossing(
  buckets: readonly CountedBucket[],
  amount: number,
  pending = 0,
  settled?: SettledPrefix,
): { bucket: CountedBucket; before: number } | undefined {
  const newest = buckets.length - 1;
  let before = 0;
  let i = 0;
  if (settled && settled.length <= newest) {
    // The prefix answers without a walk when the amount is 1 (resetSeconds) or lies beyond it.
    const first = buckets[settled.firstCounted];
    if (amount <= 1 && first) return { bucket: first, before: 0 };
    if (amount > settled.total) {
      i = settled.length;
      before = settled.total;
    }
  }
  for (; i <= newest; i++) {
    const bucket = buckets[i] as CountedBucket;
    const count = bucket.count + (i === newest ? pending : 0);
    if (before + count >= amount) return { bucket, before };
    before += count;
  }
  return undefined;
}
