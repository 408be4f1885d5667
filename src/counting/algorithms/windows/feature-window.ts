import { countedAt } from './plan.js';
import {
  bucketStart,
  levelName,
  levelStart,
  settledPrefix,
  type BucketRun,
  type CountedBucket,
  type SettledPrefix,
} from './buckets.js';
import type { LimitCounts } from './counts.js';
import { SettledCounts, type CarriedCounts } from './settled-counts.js';
import { bucketKey, resetMarkerKey } from '../../keys.js';
import type { WindowsPlan } from '../../plan-types.js';
import type { CounterIncrement } from '../../../store/counter-store.js';

/** The buckets after the newest of a window, up to `skewSeconds` ahead of `second`, newest first. */
function bucketsAhead(newest: BucketRun, second: number, skewSeconds: number): BucketRun[] {
  const { calendar } = newest;
  if (calendar) {
    const next = calendar.periodAt(second + skewSeconds);
    return next.start > newest.start ? [{ size: next.size, start: next.start, count: 1, calendar }] : [];
  }
  const ahead: BucketRun[] = [];
  const last = bucketStart(second + skewSeconds, newest.size);
  for (let start = bucketStart(second, newest.size) + newest.size; start <= last; start += newest.size) {
    ahead.unshift({ size: newest.size, start, count: 1 });
  }
  return ahead;
}

/** A bucket of a limit's window whose count the window fills in. */
interface WindowBucket extends CountedBucket {
  count: number;
}

/** A limit's buckets, with its settled ones summed once their counts are known. */
interface WindowLimit extends LimitCounts {
  readonly buckets: readonly WindowBucket[];
  /** How many of the oldest buckets are settled: time tiles the window, so they come first. */
  readonly settledLength: number;
  settled?: SettledPrefix | undefined;
}

/**
 * Keys to read and, at the same index, the bucket each one's value fills. The first key is
 * the feature's reset marker (see Limiter.reset), which fills no bucket.
 */
export interface ReadList {
  readonly keys: readonly string[];
  readonly targets: readonly (WindowBucket | undefined)[];
}

/** A window's counts as one decision saw them, kept apart from the window that later checks fill again. */
export interface CountsSnapshot {
  readonly limits: readonly LimitCounts[];
  readonly lastResetAt: number;
}

/**
 * One feature's sliding windows at one second: every bucket each limit counts, and which of
 * them a check must ask the store for.
 *
 * A bucket is *settled* once no instance can add to it any more: it ended more than the
 * allowed clock skew ago. A settled count is read once and kept, within the second and
 * into the next second's window (from this one, or from the numbers it left once let go:
 * settled-counts.ts), so a feature checked often reads only its *live* buckets:
 * the few that ended within the skew, and those after now that an instance whose clock
 * runs ahead may already count in. The current buckets come from the check's increments.
 */
export class FeatureWindow implements CarriedCounts {
  readonly second: number;
  /** Each limit's buckets, oldest first, as decide() takes them. Limits share bucket objects. */
  readonly limits: readonly WindowLimit[];
  /** The current bucket's key of each of the plan's levels, in level order. */
  readonly currentKeys: readonly string[];
  /** What a check reads now: live buckets, and settled ones until their counts are known. */
  reads: ReadList;
  /** Whether every settled count came from the window or counts it was built from: it read none. */
  readonly carriedAllSettled: boolean;
  private readonly live: ReadList;
  /** Seconds after its end until a bucket is settled: the clock skew, and a lease's hold on its event. */
  private readonly settleSeconds: number;
  private readonly ttls: readonly number[];
  private lastIncrements: readonly CounterIncrement[] = [];
  /** The second the feature's counts were last reset at: buckets that ended by then count nothing. */
  private resetSecond: number;
  /** Per level, its index among the current keys (-1: not counted any more), when some level is not counted. */
  private readonly currentAt: readonly number[] | undefined;
  /** Per level, the current bucket, when a limit counts in it. */
  private readonly current: readonly (WindowBucket | undefined)[];
  /** Per level, every other bucket by start: one object however many limits count it. */
  private readonly byStart: readonly Map<number, WindowBucket>[];

  constructor(plan: WindowsPlan, base: string, second: number, skewSeconds: number, previous?: CarriedCounts) {
    this.second = second;
    // A returned lease or a settled reservation takes units back from the buckets of its second until its hold ends.
    this.settleSeconds = skewSeconds + (plan.holdSeconds ?? 0);
    this.resetSecond = previous?.resetAt ?? 0;
    const levelOf = new Map(plan.levels.map((level, index) => [levelName(level), index]));
    const currentStarts = plan.levels.map((level) => levelStart(level, second));
    // A size a reload's transition retired is no longer counted (nor read: the cover left it).
    const counted = plan.levels.filter((level) => countedAt(level, second));
    this.currentAt =
      counted.length === plan.levels.length ? undefined : plan.levels.map((level) => counted.indexOf(level));
    this.currentKeys = counted.map((level) => bucketKey(base, levelName(level), levelStart(level, second)));
    this.ttls = counted.map(({ ttlSeconds }) => ttlSeconds);
    const current: (WindowBucket | undefined)[] = plan.levels.map(() => undefined);
    const byStart = plan.levels.map(() => new Map<number, WindowBucket>());
    // The reset marker is read with every check, so a reset elsewhere is seen at once.
    const live = { keys: [resetMarkerKey(base)], targets: [undefined] as (WindowBucket | undefined)[] };
    const unknown = { keys: [] as string[], targets: [] as WindowBucket[] };

    this.limits = plan.limits.map((limit) => {
      const runs = limit.cover(second);
      const newest = runs[0];
      // Buckets after now, where an instance whose clock is ahead already counts.
      if (newest) runs.unshift(...bucketsAhead(newest, second, skewSeconds));
      const buckets: WindowBucket[] = [];
      let settledLength = 0;
      for (let r = runs.length - 1; r >= 0; r--) {
        const { size, start: runStart, count, calendar } = runs[r] as (typeof runs)[number];
        const name = calendar ? calendar.tag : size;
        const level = levelOf.get(name);
        if (level === undefined) throw new Error(`bucket size ${size} is not a level of event ${plan.event}`);
        for (let i = 0; i < count; i++) {
          const start = runStart + i * size;
          const settled = this.isSettled(start, size);
          if (start === currentStarts[level] && (this.currentAt?.[level] ?? level) !== -1) {
            buckets.push((current[level] ??= { start, size, count: 0 }));
            continue;
          }
          const shared = byStart[level] as Map<number, WindowBucket>;
          let bucket = shared.get(start);
          if (!bucket) {
            const known = settled ? previous?.knownSettled(level, start) : undefined;
            bucket = { start, size, count: known ?? 0 };
            shared.set(start, bucket);
            if (known === undefined) {
              const list = settled ? unknown : live;
              list.keys.push(bucketKey(base, name, start));
              list.targets.push(bucket);
            }
          }
          // Time tiles the window, so settled buckets come first.
          if (settled && settledLength === buckets.length) settledLength++;
          buckets.push(bucket);
        }
      }
      return { plan: limit, buckets, settledLength };
    });
    this.current = current;
    this.byStart = byStart;
    this.live = live;
    this.carriedAllSettled = unknown.keys.length === 0;
    this.reads =
      unknown.keys.length === 0
        ? live
        : { keys: [...live.keys, ...unknown.keys], targets: [...live.targets, ...unknown.targets] };
    if (this.reads === live) this.sumSettled();
  }

  /** A check's increments of the current buckets; the same objects for the same cost, as stores only read them. */
  increments(cost: number): readonly CounterIncrement[] {
    if (this.lastIncrements[0]?.delta !== cost) {
      this.lastIncrements = this.currentKeys.map((key, level) => ({
        key,
        delta: cost,
        ttlSeconds: this.ttls[level] ?? 0,
      }));
    }
    return this.lastIncrements;
  }

  /**
   * Fills the buckets from one call's answers: `read` holds the values of `reads.keys`,
   * `current` each level's current bucket (an increment's result, or a peek's read), less
   * `ownCost`, the part the request being decided added. The counts hold until the next
   * fill: decide on them before anything else runs.
   */
  fill(reads: ReadList, read: readonly number[], current: readonly number[], ownCost: number): readonly LimitCounts[] {
    const { targets } = reads;
    const resetAt = read[0] ?? 0;
    if (resetAt !== this.resetSecond) this.forgetUntil(resetAt);
    for (let i = 1; i < targets.length; i++) {
      const bucket = targets[i] as WindowBucket;
      bucket.count = bucket.start + bucket.size <= resetAt ? 0 : (read[i] ?? 0);
    }
    for (let level = 0; level < this.current.length; level++) {
      const bucket = this.current[level];
      if (bucket) bucket.count = (current[this.currentAt?.[level] ?? level] ?? ownCost) - ownCost;
    }
    // A list longer than the live one held every settled bucket: their counts are known now.
    if (reads !== this.live && targets.length > this.live.targets.length) {
      this.reads = this.live;
      this.sumSettled();
    }
    return this.limits;
  }

  /** The counts as the last fill left them, copied: the window's buckets are shared with concurrent checks. */
  snapshot(): CountsSnapshot {
    return {
      limits: this.limits.map(({ plan, buckets }) => ({ plan, buckets: buckets.map((bucket) => ({ ...bucket })) })),
      lastResetAt: this.resetSecond,
    };
  }

  get resetAt(): number {
    return this.resetSecond;
  }

  /** What this window leaves to a later one once it is let go: its settled counts, if they are known. */
  settledCounts(): SettledCounts | undefined {
    if (this.reads !== this.live) return undefined;
    return SettledCounts.of(this.resetSecond, this.byStart, (bucket) => this.isSettled(bucket.start, bucket.size));
  }

  /** A bucket's count if it was settled and known in this window. */
  knownSettled(level: number, start: number): number | undefined {
    if (this.reads !== this.live) return undefined;
    const bucket = this.byStart[level]?.get(start);
    return bucket && this.isSettled(bucket.start, bucket.size) ? bucket.count : undefined;
  }

  /** Whether `reads` includes settled buckets whose counts were not kept (a cold feature or second). */
  readsSettled(reads: ReadList): boolean {
    return reads !== this.live;
  }

  /** A reset at `resetAt`: every bucket that ended by then counts nothing from now on. */
  private forgetUntil(resetAt: number): void {
    this.resetSecond = resetAt;
    for (const limit of this.limits) {
      for (const bucket of limit.buckets) if (bucket.start + bucket.size <= resetAt) bucket.count = 0;
    }
    if (this.reads === this.live) this.sumSettled();
  }

  private isSettled(start: number, size: number): boolean {
    return start + size + this.settleSeconds <= this.second;
  }

  /** Sums each limit's settled buckets once, so decide() walks only the live ones. */
  private sumSettled(): void {
    for (const limit of this.limits) {
      if (limit.settledLength > 0 && limit.settledLength < limit.buckets.length)
        limit.settled = settledPrefix(limit.buckets, limit.settledLength);
    }
  }
}
