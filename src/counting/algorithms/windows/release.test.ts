import { describe, expect, it } from 'vitest';
import { planSlidingLimit } from '../sliding/plan.js';
import { exactRelease, type BucketReader } from './release.js';

// A 1-day, 1 s limit at 05:00:00 whose three counted requests all sit in the 00:00 hour bucket.
const plan = planSlidingLimit({ name: 'd', limit: 3, window: 86_400, granularity: 1 }, 'whole');
const now = 5 * 3600;
const buckets = [{ start: 0, size: 3600, count: 3 }];

/** Counts as Memcached would hold them: requests at 00:10:05, 00:10:07 and 00:20:00. */
const requests = [605, 607, 1200];
const reader =
  (seen: number[][]): BucketReader =>
  (size, starts) => {
    seen.push([size, starts.length]);
    return Promise.resolve(starts.map((start) => requests.filter((t) => t >= start && t < start + size).length));
  };

describe('exactRelease', () => {
  it('drills from the hour to its minutes to their seconds', async () => {
    const seen: number[][] = [];
    expect(await exactRelease(plan, buckets, 2, now, reader(seen))).toBe(607 + 86_400);
    expect(seen).toEqual([
      [60, 60],
      [1, 60],
    ]);
  });

  it('keeps the coarse time, never too early, when finer counts no longer add up', async () => {
    const emptied: BucketReader = (_size, starts) => Promise.resolve(starts.map(() => 0));
    expect(await exactRelease(plan, buckets, 1, now, emptied)).toBe(3599 + 86_400);
  });

  it('reads nothing for a bucket already at the policy’s granularity', async () => {
    const seen: number[][] = [];
    expect(await exactRelease(plan, [{ start: 100, size: 1, count: 1 }], 1, now, reader(seen))).toBe(100 + 86_400);
    expect(seen).toEqual([]);
  });
});
