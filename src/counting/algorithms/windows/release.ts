import { bucketStart, crossing, type CountedBucket } from './buckets.js';
import type { WindowLimitPlan } from '../../plan-types.js';

/** Reads the counts of one limit's buckets of one size, by start. */
export type BucketReader = (size: number, starts: readonly number[]) => Promise<readonly number[]>;

/**
 * The second by which `amount` of a limit's counted cost has left its window, exact to the
 * policy's granularity. When the cost that must leave sits in a coarse bucket (an hour, or
 * the current minute), reads that bucket's parts one level finer, which every check also
 * counted, and looks again: at most one read per level, and only for denials.
 */
export async function exactRelease(
  plan: WindowLimitPlan,
  buckets: readonly CountedBucket[],
  amount: number,
  now: number,
  read: BucketReader,
): Promise<number> {
  // A reload's conservative cover mixes sizes: its release is the bucket's own, never too early.
  if (plan.exactFrom !== undefined && now < plan.exactFrom) {
    const found = crossing(buckets, amount);
    const bucket = found?.bucket ?? buckets[buckets.length - 1];
    return bucket ? plan.releaseAt(bucket.start, bucket.size, now) : now + 1;
  }
  let candidates = buckets;
  let needed = amount;
  for (;;) {
    const found = crossing(candidates, needed);
    const coarse = found?.bucket ?? candidates[candidates.length - 1];
    if (!coarse) return now + 1;
    const finer = plan.levels.find((size) => size < coarse.size);
    if (!found || finer === undefined) return plan.releaseAt(coarse.start, coarse.size, now);
    const starts: number[] = [];
    const last = Math.min(coarse.start + coarse.size - finer, bucketStart(now, finer));
    for (let start = coarse.start; start <= last; start += finer) starts.push(start);
    const counts = await read(finer, starts);
    const parts = starts.map((start, i) => ({ start, size: finer, count: counts[i] ?? 0 }));
    // Other instances may have changed the counts since the first read: if the parts no
    // longer hold what is needed, keep the coarse bucket's time, which is never too early.
    if (!crossing(parts, needed - found.before)) return plan.releaseAt(coarse.start, coarse.size, now);
    candidates = parts;
    needed -= found.before;
  }
}
