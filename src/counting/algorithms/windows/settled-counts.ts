// What one second's window of a feature leaves to the next (feature-window.ts) once the window
// itself is let go: the counts of its settled buckets, and the second of the feature's last
// reset. A settled count no instance can change any more, so it stands in any later window
// (a reset is seen through the marker every check reads). Kept per cached client between checks,
// so it is one list of numbers: the reset second, the runs of buckets its counts are of (each a
// level, a first start, a size and a length, as the window's layout orders them: window-layout.ts)
// and the counts, a bucket's start implied by its place in its run.
import type { CountedBucket } from './buckets.js';
import type { WindowLayout } from './window-layout.js';

const RESET_AT = 0;
const RUNS = 1;
const HEADER = 2;

export class SettledCounts {
  private constructor(private readonly numbers: readonly number[]) {}

  /**
   * The settled buckets of a window of `layout` (its buckets by slot), or undefined when none
   * would carry over: without settled counts the reset second need not carry either (the next
   * window's first check reads every bucket and the marker, and counts nothing that ended by it).
   */
  static of(layout: WindowLayout, resetAt: number, buckets: readonly CountedBucket[]): SettledCounts | undefined {
    const { runs, runSlots } = layout;
    if (runSlots.length === 0) return undefined;
    // As long as it needs to be: a list grown by push holds room for half as many more.
    const numbers = new Array<number>(HEADER + runs.length + runSlots.length);
    numbers[RESET_AT] = resetAt;
    numbers[RUNS] = runs.length / 4;
    for (let i = 0; i < runs.length; i++) numbers[HEADER + i] = runs[i] as number;
    const first = HEADER + runs.length;
    for (let i = 0; i < runSlots.length; i++)
      numbers[first + i] = (buckets[runSlots[i] as number] as CountedBucket).count;
    return new SettledCounts(numbers);
  }

  /** The second the feature's counts were last reset at (0: never, as far as known). */
  get resetAt(): number {
    return this.numbers[RESET_AT] as number;
  }

  /** A bucket's count, if it was settled and known. */
  knownSettled(level: number, start: number): number | undefined {
    const { numbers } = this;
    const runs = numbers[RUNS] as number;
    let offset = HEADER + 4 * runs;
    for (let r = 0; r < runs; r++) {
      const at = HEADER + 4 * r;
      const [runLevel, first, size, length] = [
        numbers[at],
        numbers[at + 1],
        numbers[at + 2],
        numbers[at + 3],
      ] as number[];
      const index = (start - (first as number)) / (size as number);
      if (runLevel === level && index >= 0 && index < (length as number) && Number.isInteger(index))
        return numbers[offset + index];
      offset += length as number;
    }
    return undefined;
  }

  /**
   * Sets the count of each settled slot of `layout` these counts know, in `buckets` (by slot):
   * run by run, a level's runs at once where they overlap.
   */
  carryInto(layout: WindowLayout, buckets: readonly { count: number }[]): void {
    const { numbers } = this;
    const runs = numbers[RUNS] as number;
    const { runs: into, runSlots } = layout;
    let slotAt = 0;
    for (let n = 0; n < into.length; n += 4) {
      const level = into[n] as number;
      const first = into[n + 1] as number;
      const size = into[n + 2] as number;
      const length = into[n + 3] as number;
      let offset = HEADER + 4 * runs;
      for (let r = 0; r < runs; r++) {
        const at = HEADER + 4 * r;
        const heldLength = numbers[at + 3] as number;
        if (numbers[at] === level) {
          const heldFirst = numbers[at + 1] as number;
          const heldSize = numbers[at + 2] as number;
          if (heldSize === size) {
            // Buckets of one size are aligned alike: the runs overlap on a range of starts.
            const from = Math.max(first, heldFirst);
            const to = Math.min(first + length * size, heldFirst + heldLength * size);
            if ((from - heldFirst) % size === 0) {
              for (let start = from; start < to; start += size) {
                const slot = runSlots[slotAt + (start - first) / size] as number;
                (buckets[slot] as { count: number }).count = numbers[offset + (start - heldFirst) / size] as number;
              }
            }
          } else {
            // A calendar window's periods differ in size: bucket by bucket.
            for (let i = 0; i < length; i++) {
              const index = (first + i * size - heldFirst) / heldSize;
              if (index >= 0 && index < heldLength && Number.isInteger(index))
                (buckets[runSlots[slotAt + i] as number] as { count: number }).count = numbers[
                  offset + index
                ] as number;
            }
          }
        }
        offset += heldLength;
      }
      slotAt += length;
    }
  }
}
