// What sliding and fixed windows share in planning: the bucket levels an event counts in, each
// living as long as its longest reader, and the keys a limit's cover reads.
import { DEFAULTS } from '../../../config/defaults.js';
import type { EventPolicy } from '../../../config/policies.js';
import { levelName, bucketCount, type BucketRun } from './buckets.js';
import { TTL_MARGIN_SECONDS } from '../../keys.js';
import type { CounterLevel, WindowLimitPlan, WindowsPlan } from '../../plan-types.js';

/** Whether `level` is still counted in at `second`: a size a reload's transition retired is not (carry-over.ts). */
export function countedAt(level: CounterLevel, second: number): boolean {
  return level.countedUntil === undefined || level.countedUntil > second;
}

/** What every plan of an event's windows shares: how it counts, in which levels, and how long units stay movable. */
export type WindowCounters = Pick<
  WindowsPlan,
  'algorithm' | 'edge' | 'levels' | 'lease' | 'holdSeconds' | 'transition' | 'carry' | 'fromBucket'
>;

/** The counters of an event's windows: the levels `limits` count in, and the holds of its leases and reservations. */
export function windowCounters(
  limits: readonly WindowLimitPlan[],
  policy: EventPolicy,
  algorithm: WindowsPlan['algorithm'],
): WindowCounters {
  const { lease, reservations } = policy;
  const leasePlan = lease
    ? { maxUnits: lease.maxUnits, lifeSeconds: lease.life, holdSeconds: lease.life + DEFAULTS.leaseReturnGraceSeconds }
    : undefined;
  const holds = [leasePlan?.holdSeconds, reservations && reservations.life + DEFAULTS.leaseReturnGraceSeconds].filter(
    (hold) => hold !== undefined,
  );
  return {
    algorithm,
    edge: policy.edge,
    levels: sharedLevels(limits),
    ...(leasePlan ? { lease: leasePlan } : {}),
    ...(holds.length > 0 ? { holdSeconds: Math.max(...holds) } : {}),
  };
}

/** A limit may read at most this many buckets per check; more would make every check slow. */
export const MAX_KEYS_PER_CHECK = 1000;

/**
 * The levels `limits` count in, one per name, each living as long as the longest-lived asks;
 * coarsest first. One pass, a level made only when it outlives the one kept: an event of
 * 10,000 overrides has 20,000 limits to look through on the serving thread at each reload.
 */
export function sharedLevels(limits: readonly WindowLimitPlan[]): CounterLevel[] {
  const byName = new Map<number | string, CounterLevel>();
  for (const limit of limits) {
    for (const size of limit.levels) {
      const ttlSeconds = limit.retention(size) + TTL_MARGIN_SECONDS;
      const name = limit.calendar ? limit.calendar.tag : size;
      const known = byName.get(name);
      if (known && known.ttlSeconds >= ttlSeconds) continue;
      byName.set(name, { size, ttlSeconds, ...(limit.calendar ? { calendar: limit.calendar } : {}) });
    }
  }
  return sortedCoarsestFirst(byName);
}

/** One level per name (a size, or a calendar window), living as long as the longest-lived asks; coarsest first. */
export function mergeLevels(levels: readonly CounterLevel[]): CounterLevel[] {
  const byName = new Map<number | string, CounterLevel>();
  for (const level of levels) {
    const name = levelName(level);
    const known = byName.get(name);
    if (!known || known.ttlSeconds < level.ttlSeconds) byName.set(name, { ...level });
  }
  return sortedCoarsestFirst(byName);
}

function sortedCoarsestFirst(byName: ReadonlyMap<number | string, CounterLevel>): CounterLevel[] {
  return [...byName.values()].sort((a, b) => b.size - a.size);
}

/** The cover repeats with the period of its coarsest level, so one period gives exact figures. */
export function measureKeysPerCheck(
  cover: (now: number) => BucketRun[],
  period: number,
): { max: number; mean: number } {
  let max = 0;
  let total = 0;
  for (let now = 0; now < period; now++) {
    const keys = bucketCount(cover(now));
    max = Math.max(max, keys);
    total += keys;
  }
  return { max, mean: Math.round((total / period) * 10) / 10 };
}

/** Most live Memcached items one active feature can hold: per level, one per bucket its TTL spans. */
export function itemsPerFeature(levels: readonly CounterLevel[]): number {
  return levels.reduce((sum, { size, ttlSeconds }) => sum + Math.ceil(ttlSeconds / size) + 1, 0);
}
