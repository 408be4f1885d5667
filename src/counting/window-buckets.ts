import { floorTo } from './cover.js';
import type { LimitCounts } from './decision.js';
import { bucketKey } from './keys.js';
import type { EventPlan, LimitPlan } from './plan.js';

interface SlottedBucket {
  readonly start: number;
  readonly size: number;
  /** Where the bucket's value is: an increment's index, else the increments' count + a read's index. */
  readonly slot: number;
}

/**
 * The buckets of every limit's window at `second`, oldest first, each pointing at where
 * its value will be. Limits share buckets of the same size, so each key is read once; with
 * `incrementing`, current buckets come from the increments instead of a read.
 */
export function windowBuckets(plan: EventPlan, base: string, second: number, incrementing: boolean) {
  const incrementedSizes = incrementing ? plan.levels.map((level) => level.size) : [];
  const reads: string[] = [];
  const readSlots = new Map<string, number>();
  const slotOf = (size: number, start: number): number => {
    const level = incrementedSizes.indexOf(size);
    if (level !== -1 && start === floorTo(second, size)) return level;
    const key = bucketKey(base, size, start);
    let slot = readSlots.get(key);
    if (slot === undefined) {
      slot = incrementedSizes.length + reads.length;
      readSlots.set(key, slot);
      reads.push(key);
    }
    return slot;
  };
  const limits = plan.limits.map((limit: LimitPlan) => {
    const buckets: SlottedBucket[] = [];
    const runs = limit.cover(second);
    for (let r = runs.length - 1; r >= 0; r--) {
      const { size, start, count } = runs[r] as (typeof runs)[number];
      for (let i = 0; i < count; i++) buckets.push({ start: start + i * size, size, slot: slotOf(size, start + i * size) });
    }
    return { plan: limit, buckets };
  });
  return {
    reads,
    counts: (values: readonly number[]): LimitCounts[] =>
      limits.map(({ plan: limit, buckets }) => ({
        plan: limit,
        buckets: buckets.map(({ start, size, slot }) => ({ start, size, count: values[slot] ?? 0 })),
      })),
  };
}
