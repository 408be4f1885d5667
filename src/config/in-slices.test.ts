import { describe, expect, it } from 'vitest';
import { allAtOnce, inSlices } from './in-slices.js';

/** `count` steps, each busy about `busyMs`; its value is the steps taken, in order. */
function* busySteps(count: number, busyMs: number): Generator<void, number[]> {
  const taken: number[] = [];
  for (let i = 0; i < count; i++) {
    const until = performance.now() + busyMs;
    while (performance.now() < until);
    taken.push(i);
    yield;
  }
  return taken;
}

describe('inSlices', () => {
  it('gives the same value as allAtOnce', async () => {
    expect(await inSlices(busySteps(20, 0.1), 1)).toEqual(allAtOnce(busySteps(20, 0.1)));
  });

  it('lets the event loop through between slices of sliceMs, not within one', async () => {
    /** The turns the event loop took while the steps ran. */
    const turnsDuring = async (sliceMs: number): Promise<number> => {
      let turns = 0;
      let stopped = false;
      const turn = () => {
        if (stopped) return;
        turns++;
        setImmediate(turn);
      };
      setImmediate(turn);
      await inSlices(busySteps(40, 1), sliceMs);
      const seen = turns;
      stopped = true;
      return seen;
    };
    // 40 ms of steps: sliced every 5 ms the loop turns between slices; in one slice, never.
    expect(await turnsDuring(5)).toBeGreaterThanOrEqual(1);
    expect(await turnsDuring(Number.POSITIVE_INFINITY)).toBe(0);
  });
});
