import { settledPrefix, type CountedBucket, type SettledPrefix } from './buckets.js';
import type { LimitCounts } from './counts.js';
import { SettledCounts } from './settled-counts.js';
import { layoutOf, type WindowLayout } from './window-layout.js';
import { resetMarkerKey } from '../../keys.js';
import type { WindowsPlan } from '../../plan-types.js';
import type { CounterIncrement } from '../../../store/counter-store.js';

/** What a window is built on from the second before: its window, or the settled counts it left once let go. */
export type CarriedCounts = FeatureWindow | SettledCounts;

/** A settled bucket's count until it is known. */
const UNKNOWN = -1;

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
export class FeatureWindow {
  readonly second: number;
  /** Each limit's buckets, oldest first, as decide() takes them. Limits share bucket objects. */
  readonly limits: readonly WindowLimit[];
  /** The current bucket's key of each of the plan's levels, in level order. */
  readonly currentKeys: readonly string[];
  /** What a check reads now: live buckets, and settled ones until their counts are known. */
  reads: ReadList;
  /** Whether every settled count came from the window or counts it was built from: it read none. */
  readonly carriedAllSettled: boolean;
  /** What every feature's window of the plan shares at this second. */
  readonly layout: WindowLayout;
  private readonly live: ReadList;
  private lastIncrements: readonly CounterIncrement[] = [];
  /** The second the feature's counts were last reset at: buckets that ended by then count nothing. */
  private resetSecond: number;
  /** Every bucket, by its slot in the layout: one object however many limits count it. */
  private readonly buckets: readonly WindowBucket[];

  constructor(
    plan: WindowsPlan,
    base: string,
    second: number,
    skewSeconds: number,
    previous?: CarriedCounts,
    layout: WindowLayout = layoutOf(plan, second, skewSeconds),
  ) {
    this.second = second;
    this.layout = layout;
    this.resetSecond = previous?.resetAt ?? 0;
    const { starts, sizes, suffixes, settled } = layout;
    const buckets = new Array<WindowBucket>(layout.slots);
    for (let slot = 0; slot < buckets.length; slot++)
      buckets[slot] = { start: starts[slot] as number, size: sizes[slot] as number, count: 0 };
    for (const slot of settled) (buckets[slot] as WindowBucket).count = UNKNOWN;
    if (previous instanceof FeatureWindow) previous.carryInto(layout, buckets);
    else previous?.carryInto(layout, buckets);
    this.buckets = buckets;

    // The reset marker is read with every check, so a reset elsewhere is seen at once.
    const keys = [resetMarkerKey(base)];
    const targets: (WindowBucket | undefined)[] = [undefined];
    for (const slot of layout.live) {
      keys.push(base + (suffixes[slot] as string));
      targets.push(buckets[slot]);
    }
    const live: ReadList = { keys, targets };
    let unknown: { keys: string[]; targets: (WindowBucket | undefined)[] } | undefined;
    for (const slot of settled) {
      const bucket = buckets[slot] as WindowBucket;
      if (bucket.count !== UNKNOWN) continue;
      bucket.count = 0;
      unknown ??= { keys: keys.slice(), targets: targets.slice() };
      unknown.keys.push(base + (suffixes[slot] as string));
      unknown.targets.push(bucket);
    }
    this.limits = layout.limitSlots.map((slots, i) => ({
      plan: plan.limits[i] as WindowLimit['plan'],
      buckets: slots.map((slot) => buckets[slot] as WindowBucket),
      settledLength: layout.settledLengths[i] as number,
    }));
    this.currentKeys = layout.currentSuffixes.map((suffix) => base + suffix);
    this.live = live;
    this.carriedAllSettled = unknown === undefined;
    this.reads = unknown ?? live;
    if (this.reads === live) this.sumSettled();
  }

  /** A check's increments of the current buckets; the same objects for the same cost, as stores only read them. */
  increments(cost: number): readonly CounterIncrement[] {
    if (this.lastIncrements[0]?.delta !== cost) {
      this.lastIncrements = this.currentKeys.map((key, level) => ({
        key,
        delta: cost,
        ttlSeconds: this.layout.ttls[level] ?? 0,
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
    const { current: currentSlots, currentAt } = this.layout;
    for (let level = 0; level < currentSlots.length; level++) {
      const slot = currentSlots[level] as number;
      if (slot >= 0)
        (this.buckets[slot] as WindowBucket).count = (current[currentAt?.[level] ?? level] ?? ownCost) - ownCost;
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
    return SettledCounts.of(this.layout, this.resetSecond, this.buckets);
  }

  /** A bucket's count if it was settled and known in this window. */
  knownSettled(level: number, start: number): number | undefined {
    if (this.reads !== this.live) return undefined;
    const { settled, levels, starts } = this.layout;
    for (const slot of settled)
      if (levels[slot] === level && starts[slot] === start) return (this.buckets[slot] as WindowBucket).count;
    return undefined;
  }

  /** Sets the count of each settled slot of `layout` this window knows, in `buckets` (by slot). */
  carryInto(layout: WindowLayout, buckets: readonly { count: number }[]): void {
    if (this.reads !== this.live) return;
    const from = layout.transferFrom(this.layout);
    const { settled } = layout;
    for (let i = 0; i < from.length; i++) {
      const slot = from[i] as number;
      if (slot >= 0)
        (buckets[settled[i] as number] as { count: number }).count = (this.buckets[slot] as WindowBucket).count;
    }
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

  /** Sums each limit's settled buckets once, so decide() walks only the live ones. */
  private sumSettled(): void {
    for (const limit of this.limits) {
      if (limit.settledLength > 0 && limit.settledLength < limit.buckets.length)
        limit.settled = settledPrefix(limit.buckets, limit.settledLength);
    }
  }
}
