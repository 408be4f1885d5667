import { floorTo } from './cover.js';
import type { CountedBucket, LimitCounts } from './decision.js';
import { bucketKey } from './keys.js';
import type { EventPlan } from './plan.js';

/** A bucket of a limit's window, with where its value will be and, once read, its count. */
interface SlottedBucket extends CountedBucket {
  /** An increment's index, else the number of increments plus a read's index. */
  readonly slot: number;
  count: number;
}

export interface WindowBuckets {
  /** The keys to read, each once. */
  readonly reads: readonly string[];
  /** Fills every bucket's count from the increments' and reads' values, in slot order. */
  counts(values: readonly number[]): readonly LimitCounts[];
}

/**
 * The buckets of every limit's window at `second`, oldest first, each pointing at where
 * its value will be. With `incrementing`, current buckets come from the increments
 * instead of a read. Limits of one event can share buckets; each key is read once.
 */
export function windowBuckets(plan: EventPlan, base: string, second: number, incrementing: boolean): WindowBuckets {
  const increments = incrementing ? plan.levels.length : 0;
  const reads: string[] = [];
  // Only an event with several limits can list one key twice.
  const readSlots = plan.limits.length > 1 ? new Map<string, number>() : undefined;
  const limits: { plan: EventPlan['limits'][number]; buckets: SlottedBucket[] }[] = [];
  for (const limit of plan.limits) {
    const buckets: SlottedBucket[] = [];
    const runs = limit.cover(second);
    for (let r = runs.length - 1; r >= 0; r--) {
      const { size, start: runStart, count } = runs[r] as (typeof runs)[number];
      const level = incrementing ? plan.levels.findIndex((l) => l.size === size) : -1;
      const current = floorTo(second, size);
      for (let i = 0; i < count; i++) {
        const start = runStart + i * size;
        let slot: number;
        if (level !== -1 && start === current) {
          slot = level;
        } else {
          const key = bucketKey(base, size, start);
          const known = readSlots?.get(key);
          if (known === undefined) {
            slot = increments + reads.length;
            reads.push(key);
            readSlots?.set(key, slot);
          } else {
            slot = known;
          }
        }
        buckets.push({ start, size, slot, count: 0 });
      }
    }
    limits.push({ plan: limit, buckets });
  }
  return {
    reads,
    counts(values) {
      for (const { buckets } of limits) for (const bucket of buckets) bucket.count = values[bucket.slot] ?? 0;
      return limits;
    },
  };
}
