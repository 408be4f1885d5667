import { describe, expect, it } from 'vitest';
import { TimeOrder } from './time-order.js';

interface Line {
  readonly ms: number;
  readonly line: number;
}

/** Lines at `times` (ms) through a TimeOrder: what it released, in order, and the lines it refused. */
function reorder(times: readonly number[], holdMs: number, holdBytes = Infinity, bytes = 1) {
  const released: number[] = [];
  const refused: number[] = [];
  const order = new TimeOrder<Line>({ holdMs, holdBytes, release: (item) => released.push(item.line) });
  times.forEach((ms, index) => {
    if (!order.add({ ms, line: index + 1 }, bytes)) refused.push(index + 1);
  });
  order.flush();
  return { released, refused };
}

describe('a log put back in time order', () => {
  it('releases lines oldest first, equal times in the order of the log', () => {
    expect(reorder([3000, 1000, 2000, 1000, 3000], 60_000)).toEqual({ released: [2, 4, 3, 1, 5], refused: [] });
  });

  it('holds a line until the log has moved past it by holdMs, and refuses one older than a line released', () => {
    // Line 3 is 10 s ahead: line 1 (12 s behind it) leaves; line 4 (11 s behind it) still fits in its place.
    const released: number[] = [];
    const order = new TimeOrder<Line>({
      holdMs: 10_000,
      holdBytes: Infinity,
      release: (item) => released.push(item.line),
    });
    expect(order.add({ ms: 0, line: 1 }, 1)).toBe(true);
    expect(order.add({ ms: 2000, line: 2 }, 1)).toBe(true);
    expect(released).toEqual([]);
    expect(order.add({ ms: 12_000, line: 3 }, 1)).toBe(true);
    expect(released).toEqual([1, 2]);
    expect(order.add({ ms: 1000, line: 4 }, 1)).toBe(false);
    expect(order.add({ ms: 2000, line: 5 }, 1)).toBe(true);
    order.flush();
    expect(released).toEqual([1, 2, 5, 3]);
  });

  it('holds no more than holdBytes, releasing the oldest early', () => {
    // Lines of 10 bytes, all within a second, 35 bytes held at most: three at a time. The fourth
    // releases the oldest (line 4, at 6 ms); later lines older than it cannot take their place.
    expect(reorder([9, 8, 7, 6, 5, 4, 3], 60_000, 35, 10)).toEqual({ released: [4, 3, 2, 1], refused: [5, 6, 7] });
    expect(reorder([0, 1, 2, 3, 4], 60_000, 35, 10)).toEqual({ released: [1, 2, 3, 4, 5], refused: [] });
  });
});
