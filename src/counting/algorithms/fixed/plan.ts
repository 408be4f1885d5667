// How a fixed window counts: one bucket of its own length, aligned to the epoch, or one bucket
// a calendar period (a day, a week, a month of a time zone: calendar.ts). Either frees all at
// once when it ends.
import type { LimitPolicy } from '../../../config/policies.js';
import { bucketStart, type BucketRun } from '../windows/buckets.js';
import { measureKeysPerCheck } from '../windows/plan.js';
import type { WindowLimitPlan } from '../../plan-types.js';
import { calendarLevel } from './calendar.js';

/** A fixed (epoch-aligned) window is the one bucket of its own size that holds `now`. */
export function fixedCover(now: number, window: number): BucketRun[] {
  return [{ size: window, start: bucketStart(now, window), count: 1 }];
}

export function planFixedLimit(policy: LimitPolicy): WindowLimitPlan {
  const { window } = policy;
  if (policy.calendar) {
    // One bucket a period, from local midnight to local midnight; it frees all at once when
    // the period ends, however long the period was.
    const level = calendarLevel(policy.calendar);
    const longest = level.longestSeconds;
    return {
      policy,
      levels: [longest],
      calendar: level,
      cover: (now) => {
        const { start, size } = level.periodAt(now);
        return [{ size, start, count: 1, calendar: level }];
      },
      oldestWeight: () => 1,
      releaseAt: (start, size) => start + size,
      retention: () => longest,
      keysPerCheck: { max: 1, mean: 1 },
    };
  }
  const cover = (now: number) => fixedCover(now, window);
  return {
    policy,
    levels: [window],
    cover,
    oldestWeight: () => 1,
    releaseAt: (start, size) => start + size,
    retention: (size) => size,
    keysPerCheck: measureKeysPerCheck(cover, 1),
  };
}
