import { floorTo } from './cover.js';
import type { CountedBucket, LimitCounts } from './decision.js';
import { bucketKey } from './keys.js';
import type { EventPlan } from './plan.js';

/** A bucket of a limit's window whose count the window fills in. */
interface WindowBucket extends CountedBucket {
  count: number;
}

/** Keys to read and the buckets each one's value fills (limits of one event can share a bucket). */
export interface ReadList {
  readonly keys: readonly string[];
  readonly targets: readonly (readonly WindowBucket[])[];
}

/**
 * One feature's sliding windows at one second: every bucket each limit counts, and which of
 * them a check must ask the store for.
 *
 * A bucket is *settled* once no instance can add to it any more: it ended more than the
 * allowed clock skew ago. A settled count is read once and kept, within the second and
 * into the next second's window, so a feature checked often reads only its *live* buckets:
 * the few that ended within the skew, and those after now that an instance whose clock
 * runs ahead may already count in. The current buckets come from the check's increments.
 */
export class FeatureWindow {
  readonly second: number;
  /** Each limit's buckets, oldest first, as decide() takes them. */
  readonly limits: readonly LimitCounts[];
  /** The current bucket's key of each of the plan's levels, in level order. */
  readonly currentKeys: readonly string[];
  /** What a check reads now: live buckets, and settled ones not yet known. */
  reads: ReadList;
  private readonly live: ReadList;
  /** Per level, the current bucket of each limit that counts in it. */
  private readonly current: readonly (readonly WindowBucket[])[];
  /** Settled buckets by level and start, for the next second's window to take over. */
  private readonly settled: readonly Map<number, WindowBucket>[];
  private readonly unknownSettled: Set<WindowBucket>;

  constructor(plan: EventPlan, base: string, second: number, skewSeconds: number, previous?: FeatureWindow) {
    this.second = second;
    const levelOf = new Map(plan.levels.map(({ size }, index) => [size, index]));
    this.currentKeys = plan.levels.map(({ size }) => bucketKey(base, size, floorTo(second, size)));
    const current: WindowBucket[][] = plan.levels.map(() => []);
    const settled = plan.levels.map(() => new Map<number, WindowBucket>());
    const live = new ReadListBuilder();
    const unknown = new ReadListBuilder();

    this.limits = plan.limits.map((limit) => {
      const runs = limit.cover(second);
      const newest = runs[0];
      // Buckets after now, where an instance whose clock is ahead already counts.
      if (newest) {
        const last = floorTo(second + skewSeconds, newest.size);
        for (let start = floorTo(second, newest.size) + newest.size; start <= last; start += newest.size) {
          runs.unshift({ size: newest.size, start, count: 1 });
        }
      }
      const buckets: WindowBucket[] = [];
      for (let r = runs.length - 1; r >= 0; r--) {
        const { size, start: runStart, count } = runs[r] as (typeof runs)[number];
        const level = levelOf.get(size) ?? -1;
        for (let i = 0; i < count; i++) {
          const start = runStart + i * size;
          if (start === floorTo(second, size) && level !== -1) {
            const bucket = { start, size, count: 0 };
            (current[level] as WindowBucket[]).push(bucket);
            buckets.push(bucket);
          } else if (start + size + skewSeconds <= second && level !== -1) {
            const shared = settled[level] as Map<number, WindowBucket>;
            let bucket = shared.get(start);
            if (!bucket) {
              const known = previous?.settledBucket(level, start);
              bucket = { start, size, count: known?.count ?? 0 };
              shared.set(start, bucket);
              if (!known) unknown.add(bucketKey(base, size, start), bucket);
            }
            buckets.push(bucket);
          } else {
            const bucket = { start, size, count: 0 };
            live.add(bucketKey(base, size, start), bucket);
            buckets.push(bucket);
          }
        }
      }
      return { plan: limit, buckets };
    });
    this.current = current;
    this.settled = settled;
    this.live = live.build();
    this.unknownSettled = new Set(unknown.buckets());
    this.reads = this.unknownSettled.size === 0 ? this.live : concat(this.live, unknown.build());
  }

  /**
   * Fills the buckets from one call's answers: `read` holds the values of `reads.keys`,
   * `current` each level's current bucket (an increment's result, or a peek's read), less
   * `ownCost`, the part the request being decided added. The counts hold until the next
   * fill: decide on them before anything else runs.
   */
  fill(reads: ReadList, read: readonly number[], current: readonly number[], ownCost: number): readonly LimitCounts[] {
    reads.targets.forEach((buckets, i) => {
      const value = read[i] ?? 0;
      for (const bucket of buckets) {
        bucket.count = value;
        this.unknownSettled.delete(bucket);
      }
    });
    this.current.forEach((buckets, level) => {
      const value = (current[level] ?? ownCost) - ownCost;
      for (const bucket of buckets) bucket.count = value;
    });
    // Once every settled count is known, later checks read only the live buckets.
    if (this.unknownSettled.size === 0) this.reads = this.live;
    return this.limits;
  }

  private settledBucket(level: number, start: number): CountedBucket | undefined {
    const bucket = this.settled[level]?.get(start);
    return bucket && !this.unknownSettled.has(bucket) ? bucket : undefined;
  }
}

/** Each key once, with every bucket it fills. */
class ReadListBuilder {
  private readonly index = new Map<string, WindowBucket[]>();

  add(key: string, bucket: WindowBucket): void {
    const targets = this.index.get(key);
    if (targets) targets.push(bucket);
    else this.index.set(key, [bucket]);
  }

  buckets(): WindowBucket[] {
    return [...this.index.values()].flat();
  }

  build(): ReadList {
    return { keys: [...this.index.keys()], targets: [...this.index.values()] };
  }
}

function concat(a: ReadList, b: ReadList): ReadList {
  return { keys: [...a.keys, ...b.keys], targets: [...a.targets, ...b.targets] };
}
