import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketCount, bucketStart } from '../windows/buckets.js';
import { edgeWeight, slidingCover, slidingLevels } from './cover.js';

const DAY = 86_400;
const midnight = Date.UTC(2026, 10, 22) / 1000;

/** Every bucket of the runs as [start, end) intervals, oldest first. */
function intervals(runs: ReturnType<typeof slidingCover>): [number, number][] {
  return runs
    .flatMap((run) =>
      Array.from({ length: run.count }, (_, i): [number, number] => [
        run.start + i * run.size,
        run.start + (i + 1) * run.size,
      ]),
    )
    .sort((a, b) => a[0] - b[0]);
}

describe('slidingLevels', () => {
  it.each([
    [60, 1, [60, 1]],
    [DAY, 1, [3600, 60, 1]],
    [3600, 1, [3600, 60, 1]],
    [30, 1, [1]],
    [60, 10, [60, 10]],
    [60, 7 * 60, [420]],
    [DAY, 60, [3600, 60]],
    [70, 7, [7]],
    [DAY, 5 * 60, [3600, 300]],
  ])('window %is with granularity %is counts in %j', (window, granularity, levels) => {
    expect(slidingLevels(window, granularity)).toEqual(levels);
  });
});

describe('slidingCover', () => {
  it('reads 79 keys for a day at 23:30:33, as in the design notes', () => {
    const now = midnight + 23 * 3600 + 30 * 60 + 33;
    const runs = slidingCover(now, DAY, slidingLevels(DAY, 1));
    expect(runs).toEqual([
      { size: 3600, start: midnight, count: 24 },
      { size: 60, start: midnight - 29 * 60, count: 29 },
      { size: 1, start: midnight - 29 * 60 - 26, count: 26 },
    ]);
    expect(bucketCount(runs)).toBe(79);
  });

  it('never reads more than 142 keys for a day or 60 for a minute, whatever the second', () => {
    let dayMax = 0;
    let minuteMax = 0;
    for (let now = midnight; now < midnight + 3600; now++) {
      dayMax = Math.max(dayMax, bucketCount(slidingCover(now, DAY, slidingLevels(DAY, 1))));
      minuteMax = Math.max(minuteMax, bucketCount(slidingCover(now, 60, slidingLevels(60, 1))));
    }
    expect(dayMax).toBe(142);
    expect(minuteMax).toBe(60);
  });

  it('tiles the window exactly with aligned buckets, for any window, granularity and time', () => {
    const granularities = [1, 2, 5, 10, 15, 30, 60, 300, 3600];
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_000_000_000 }),
        fc.constantFrom(...granularities),
        fc.integer({ min: 1, max: 48 }),
        (now, granularity, multiple) => {
          const window = granularity * multiple;
          const levels = slidingLevels(window, granularity);
          const buckets = intervals(slidingCover(now, window, levels));
          // Starts at the finest bucket holding the window's first second…
          expect(buckets[0]?.[0]).toBe(bucketStart(now - window + 1, granularity));
          // …ends with the bucket holding `now`…
          const last = buckets[buckets.length - 1];
          expect(last && last[0] <= now && now < last[1]).toBe(true);
          // …with no gap and no overlap, every bucket aligned to its size.
          for (let i = 1; i < buckets.length; i++) expect(buckets[i]?.[0]).toBe(buckets[i - 1]?.[1]);
          for (const [start, end] of buckets) expect(start % (end - start) === 0).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('is exact with 1 s buckets: the cover spans exactly the seconds (now - W, now]', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000_000 }), fc.integer({ min: 1, max: 3 * DAY }), (now, window) => {
        const buckets = intervals(slidingCover(now, window, slidingLevels(window, 1)));
        expect(buckets[0]?.[0]).toBe(now - window + 1);
        expect(buckets.reduce((sum, [start, end]) => sum + Math.min(end, now + 1) - start, 0)).toBe(window);
      }),
    );
  });
});

describe('edges', () => {
  // A 60 s window of 30 s buckets at second 75 covers seconds 16..75: bucket 0 is 14/30 inside.
  it('counts a partly-outside oldest bucket whole, drops it, or weighs it', () => {
    expect(slidingCover(75, 60, [30], 'whole')).toEqual([{ size: 30, start: 0, count: 3 }]);
    expect(slidingCover(75, 60, [30], 'drop')).toEqual([{ size: 30, start: 30, count: 2 }]);
    expect(slidingCover(75, 60, [30], 'weighted')).toEqual(slidingCover(75, 60, [30], 'whole'));
    expect(edgeWeight(75, 60, 30)).toBeCloseTo(14 / 30);
    expect(edgeWeight(89, 60, 30)).toBe(1);
  });

  it('makes no difference with 1 s buckets, where no bucket is partial', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000_000 }), fc.integer({ min: 1, max: 2 * DAY }), (now, window) => {
        const levels = slidingLevels(window, 1);
        expect(slidingCover(now, window, levels, 'drop')).toEqual(slidingCover(now, window, levels, 'whole'));
        expect(edgeWeight(now, window, 1)).toBe(1);
      }),
    );
  });
});
