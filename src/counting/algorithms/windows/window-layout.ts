// What every feature's window of a plan shares at one second: which buckets each limit counts,
// which of them are settled, live or current, and the part of their keys after the feature's
// key base. Worked out once per plan and second (layoutOf), so that a check builds only its own
// counts and keys (feature-window.ts), and a feature's settled counts between checks are numbers
// whose buckets their place implies (settled-counts.ts).
import { countedAt } from './plan.js';
import { bucketStart, levelName, levelStart, type BucketRun } from './buckets.js';
import type { WindowsPlan } from '../../plan-types.js';

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

/**
 * One plan's windows at one second, the same for every feature. Its buckets are *slots*,
 * numbered in the order the limits first name them (each limit's oldest first); limits share
 * slots.
 */
export class WindowLayout {
  readonly slots: number;
  /** Each slot's bucket: its start, size and level (its place among the plan's levels). */
  readonly starts: readonly number[] = [];
  readonly sizes: readonly number[] = [];
  readonly levels: readonly number[] = [];
  /** Each slot's key after the key base (`level:start`). */
  readonly suffixes: readonly string[] = [];
  /** Each limit's slots, oldest first, and how many of the oldest are settled. */
  readonly limitSlots: readonly (readonly number[])[];
  readonly settledLengths: readonly number[];
  /** The slots read at every check (neither settled nor current), in order. */
  readonly live: readonly number[] = [];
  /** The settled slots, in order: read once, while their counts are not known. */
  readonly settled: readonly number[] = [];
  /** Per level, the slot of its current bucket when a limit counts in it (-1: none). */
  readonly current: readonly number[];
  /** The current bucket's key suffix of each level still counted, in level order, and its TTL. */
  readonly currentSuffixes: readonly string[];
  readonly ttls: readonly number[];
  /** Per level, its index among the current keys (-1: not counted any more), when some level is not counted. */
  readonly currentAt: readonly number[] | undefined;
  /**
   * The settled slots as runs of consecutive buckets of one level and size, by level and start:
   * four numbers a run (level, first start, size, buckets), and `runSlots` the slots in run order.
   * A feature's settled counts are kept in this order (settled-counts.ts).
   */
  readonly runs: readonly number[];
  readonly runSlots: readonly number[];
  /** Seconds after its end until a bucket is settled: the clock skew, and a lease's hold on its event. */
  readonly settleSeconds: number;
  /** Settled slots of the layout last asked about, by the slot of this one (see transferFrom). */
  private transfer: { readonly from: WindowLayout; readonly slots: Int32Array } | undefined;

  constructor(
    readonly plan: WindowsPlan,
    readonly second: number,
    readonly skewSeconds: number,
  ) {
    // A returned lease or a settled reservation takes units back from the buckets of its second until its hold ends.
    this.settleSeconds = skewSeconds + (plan.holdSeconds ?? 0);
    const starts: number[] = [];
    const sizes: number[] = [];
    const levels: number[] = [];
    const suffixes: string[] = [];
    const settledSlot: boolean[] = [];
    const live: number[] = [];
    const settled: number[] = [];
    const levelOf = new Map(plan.levels.map((level, index) => [levelName(level), index]));
    const currentStarts = plan.levels.map((level) => levelStart(level, second));
    // A size a reload's transition retired is no longer counted (nor read: the cover left it).
    const counted = plan.levels.filter((level) => countedAt(level, second));
    this.currentAt =
      counted.length === plan.levels.length ? undefined : plan.levels.map((level) => counted.indexOf(level));
    this.currentSuffixes = counted.map((level) => `${levelName(level)}:${levelStart(level, second)}`);
    this.ttls = counted.map(({ ttlSeconds }) => ttlSeconds);
    const current = plan.levels.map(() => -1);
    const byStart = plan.levels.map(() => new Map<number, number>());
    const slotOf = (level: number, start: number, size: number, name: number | string, isSettled: boolean) => {
      const slot = starts.length;
      starts.push(start);
      sizes.push(size);
      levels.push(level);
      suffixes.push(`${name}:${start}`);
      settledSlot.push(isSettled);
      return slot;
    };

    this.limitSlots = plan.limits.map((limit) => {
      const runs = limit.cover(second);
      const newest = runs[0];
      // Buckets after now, where an instance whose clock is ahead already counts.
      if (newest) runs.unshift(...bucketsAhead(newest, second, skewSeconds));
      const slots: number[] = [];
      for (let r = runs.length - 1; r >= 0; r--) {
        const { size, start: runStart, count, calendar } = runs[r] as (typeof runs)[number];
        const name = calendar ? calendar.tag : size;
        const level = levelOf.get(name);
        if (level === undefined) throw new Error(`bucket size ${size} is not a level of event ${plan.event}`);
        for (let i = 0; i < count; i++) {
          const start = runStart + i * size;
          if (start === currentStarts[level] && (this.currentAt?.[level] ?? level) !== -1) {
            if (current[level] === -1) current[level] = slotOf(level, start, size, name, false);
            slots.push(current[level] as number);
            continue;
          }
          const shared = byStart[level] as Map<number, number>;
          let slot = shared.get(start);
          if (slot === undefined) {
            const isSettled = this.isSettled(start, size);
            slot = slotOf(level, start, size, name, isSettled);
            shared.set(start, slot);
            (isSettled ? settled : live).push(slot);
          }
          slots.push(slot);
        }
      }
      return slots;
    });
    // Time tiles a window, so its settled buckets come first.
    this.settledLengths = this.limitSlots.map((slots) => {
      let length = 0;
      while (length < slots.length && settledSlot[slots[length] as number]) length++;
      return length;
    });
    this.slots = starts.length;
    Object.assign(this, { starts, sizes, levels, suffixes, live, settled });
    this.current = current;

    // The settled slots by level and start, in runs.
    const ordered = [...settled].sort(
      (a, b) => (levels[a] as number) - (levels[b] as number) || (starts[a] as number) - (starts[b] as number),
    );
    const runs: number[] = [];
    for (const slot of ordered) {
      const [level, start, size] = [levels[slot] as number, starts[slot] as number, sizes[slot] as number];
      const at = runs.length - 4;
      if (
        at >= 0 &&
        runs[at] === level &&
        runs[at + 2] === size &&
        (runs[at + 1] as number) + (runs[at + 3] as number) * size === start
      ) {
        runs[at + 3] = (runs[at + 3] as number) + 1;
      } else {
        runs.push(level, start, size, 1);
      }
    }
    this.runs = runs;
    this.runSlots = ordered;
  }

  /** Whether a bucket has settled by this second. */
  isSettled(start: number, size: number): boolean {
    return start + size + this.settleSeconds <= this.second;
  }

  /**
   * For each settled slot of this layout (in `settled` order), the slot of `from` holding the
   * same bucket, settled there too, or -1. Kept for the last layout asked about: a hot
   * feature's window of the second before.
   */
  transferFrom(from: WindowLayout): Int32Array {
    if (this.transfer?.from === from) return this.transfer.slots;
    const index = new Map<string, number>();
    for (const slot of from.settled) index.set(`${from.levels[slot]}:${from.starts[slot]}`, slot);
    const slots = new Int32Array(this.settled.length);
    this.settled.forEach((slot, i) => {
      slots[i] = index.get(`${this.levels[slot]}:${this.starts[slot]}`) ?? -1;
    });
    this.transfer = { from, slots };
    return slots;
  }
}

/** Layouts kept per plan: a few seconds, as instances' clocks (one per store server) may differ. */
const KEPT = 4;
const layouts = new WeakMap<WindowsPlan, WindowLayout[]>();

/** The layout of `plan` at `second`, worked out once. */
export function layoutOf(plan: WindowsPlan, second: number, skewSeconds: number): WindowLayout {
  let kept = layouts.get(plan);
  if (kept === undefined) layouts.set(plan, (kept = []));
  for (const layout of kept) if (layout.second === second && layout.skewSeconds === skewSeconds) return layout;
  const layout = new WindowLayout(plan, second, skewSeconds);
  // The oldest second goes first.
  if (kept.length >= KEPT) {
    let oldest = 0;
    kept.forEach((held, i) => {
      if (held.second < (kept[oldest] as WindowLayout).second) oldest = i;
    });
    kept[oldest] = layout;
  } else {
    kept.push(layout);
  }
  return layout;
}
