import type { Edge } from '../../../config/policies.js';
import { bucketStart, type BucketRun } from '../windows/buckets.js';

/** Bucket sizes beyond the policy's granularity that a sliding window may use. */
const COARSE_LEVELS = [60, 3600] as const;

/**
 * Bucket sizes (seconds) a sliding limit counts in, coarsest first: its granularity, then
 * minutes and hours where each divides the next and fits in the window. A 1 s, 1-day
 * limit counts in [3600, 60, 1]; a 10 s, 1-minute limit in [60, 10].
 */
export function slidingLevels(window: number, granularity: number): number[] {
  const levels = [granularity];
  for (const size of COARSE_LEVELS) {
    const finer = levels[levels.length - 1] ?? granularity;
    if (size > finer && size % finer === 0 && size <= window) levels.push(size);
  }
  return levels.reverse();
}

function ceilTo(value: number, size: number): number {
  return Math.ceil(value / size) * size;
}

/**
 * The buckets that cover the sliding window of `window` seconds ending at second `now`:
 * seconds (now − window, now]. Each level takes the aligned buckets that fit between the
 * window's start and the buckets already chosen, so coarse buckets cover the newest part
 * and finer ones the older edge. The oldest bucket of the finest level may start before
 * the window: it is in the cover unless `edge` is `drop` (see edgeWeight for `weighted`).
 * Levels must be coarsest first, each a multiple of the next. Runs come back coarsest
 * (newest) first.
 */
export function slidingCover(
  now: number,
  window: number,
  levels: readonly number[],
  edge: Edge = 'whole',
): BucketRun[] {
  const finest = levels[levels.length - 1];
  if (finest === undefined) throw new Error('slidingCover needs at least one level');
  const first = now - window + 1;
  const oldest = edge === 'drop' ? ceilTo(first, finest) : bucketStart(first, finest);
  let end = now + 1; // exclusive: nothing after `now` has happened yet
  const runs: BucketRun[] = [];
  for (const size of levels) {
    const start = ceilTo(oldest, size);
    if (start < end) {
      runs.push({ size, start, count: (bucketStart(end - 1, size) - start) / size + 1 });
      end = start;
    }
  }
  return runs;
}

/**
 * The share of the oldest bucket (of size `granularity`) that lies inside the window
 * (now − window, now]: 1 when the window starts on a bucket boundary. A `weighted` edge
 * counts that bucket times this share, as in Cloudflare's two-counter estimate.
 */
export function edgeWeight(now: number, window: number, granularity: number): number {
  const first = now - window + 1;
  return (bucketStart(first, granularity) + granularity - first) / granularity;
}
