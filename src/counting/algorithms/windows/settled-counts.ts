// What one second's window of a feature leaves to the next (feature-window.ts) once the window
// itself is let go: the counts of its settled buckets, per level, and the second of the feature's
// last reset. A settled count no instance can change any more, so it stands in any later window
// (a reset is seen through the marker every check reads). Kept per cached client between checks,
// so it holds numbers only: a bucket's start is implied by its place in its level's list.
import type { CountedBucket } from './buckets.js';

/** What a window is built on from the second before: FeatureWindow, or SettledCounts once it is let go. */
export interface CarriedCounts {
  /** The second the feature's counts were last reset at (0: never, as far as known). */
  readonly resetAt: number;
  /** A bucket's count, if it was settled and known. */
  knownSettled(level: number, start: number): number | undefined;
}

/** Settled counts of consecutive buckets of one level: the bucket at `first + i × size` counted `counts[i]`. */
interface SettledRun {
  readonly first: number;
  readonly size: number;
  readonly counts: readonly number[];
}

const NO_RUNS: readonly SettledRun[] = [];

export class SettledCounts implements CarriedCounts {
  private constructor(
    readonly resetAt: number,
    /**
     * By level, as the plan orders them, oldest first; empty where no bucket was settled. A
     * sliding window reads a level at both its ends (a day's oldest and newest seconds), so a
     * level may hold runs far apart.
     */
    private readonly levels: readonly (readonly SettledRun[])[],
  ) {}

  /**
   * The settled buckets of a window's levels (each level's buckets by start), or undefined
   * when nothing would carry over.
   */
  static of(
    resetAt: number,
    byStart: readonly ReadonlyMap<number, CountedBucket>[],
    isSettled: (bucket: CountedBucket) => boolean,
  ): SettledCounts | undefined {
    const levels = byStart.map((buckets) => {
      const runs: { first: number; size: number; counts: number[] }[] = [];
      const settled = [...buckets.values()].filter(isSettled).sort((a, b) => a.start - b.start);
      for (const { start, size, count } of settled) {
        const last = runs[runs.length - 1];
        // A calendar window's periods differ in size: each is a run of its own.
        if (last?.size === size && last.first + last.counts.length * size === start) last.counts.push(count);
        else runs.push({ first: start, size, counts: [count] });
      }
      if (runs.length === 0) return NO_RUNS;
      // Copied to their length: a list grown by push holds room for half as many more.
      return runs.map((run) => ({ ...run, counts: run.counts.slice() }));
    });
    // Without settled counts the reset second need not carry either: the next window's first
    // check reads every bucket and the marker, and counts nothing that ended by it.
    return levels.some((runs) => runs.length > 0) ? new SettledCounts(resetAt, levels) : undefined;
  }

  knownSettled(level: number, start: number): number | undefined {
    for (const { first, size, counts } of this.levels[level] ?? []) {
      const index = (start - first) / size;
      if (index >= 0 && index < counts.length && Number.isInteger(index)) return counts[index];
    }
    return undefined;
  }
}
