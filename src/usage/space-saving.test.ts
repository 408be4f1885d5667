import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SpaceSaving } from './space-saving.js';

/** The stream's true counts. */
function exact(stream: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of stream) counts.set(item, (counts.get(item) ?? 0) + 1);
  return counts;
}

const streams = fc.record({
  capacity: fc.integer({ min: 1, max: 12 }),
  // Skewed: a few items often, many rarely.
  stream: fc.array(
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom('a', 'b', 'c') },
      { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 2 }) },
    ),
    { maxLength: 400 },
  ),
});

describe('SpaceSaving', () => {
  it('never undercounts, overcounts by at most its error, and follows every item above total/capacity', () => {
    fc.assert(
      fc.property(streams, ({ capacity, stream }) => {
        const summary = new SpaceSaving(capacity);
        for (const item of stream) summary.add(item);
        const truth = exact(stream);
        const followed = summary.top(capacity);
        expect(followed.length).toBe(Math.min(capacity, truth.size));
        for (const { item, count, error } of followed) {
          const real = truth.get(item) ?? 0;
          expect(count).toBeGreaterThanOrEqual(real);
          expect(count - error).toBeLessThanOrEqual(real);
        }
        const items = new Set(followed.map(({ item }) => item));
        for (const [item, count] of truth) {
          if (count > stream.length / capacity) expect(items.has(item)).toBe(true);
        }
      }),
    );
  });

  it('is exact while it has seen no more items than it has counters', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { maxLength: 300 }), (stream) => {
        const summary = new SpaceSaving(5);
        for (const item of stream) summary.add(item);
        const truth = exact(stream);
        expect(Object.fromEntries(summary.top(5).map(({ item, count, error }) => [item, [count, error]]))).toEqual(
          Object.fromEntries([...truth].map(([item, count]) => [item, [count, 0]])),
        );
      }),
    );
  });

  it('ranks highest first and cuts at the limit', () => {
    const summary = new SpaceSaving(10);
    for (const [item, times] of [
      ['x', 3],
      ['y', 7],
      ['z', 5],
    ] as const)
      for (let i = 0; i < times; i++) summary.add(item);
    expect(summary.top(2)).toEqual([
      { item: 'y', count: 7, error: 0 },
      { item: 'z', count: 5, error: 0 },
    ]);
  });

  it('refuses a capacity that is not a positive whole number', () => {
    expect(() => new SpaceSaving(0)).toThrow(RangeError);
    expect(() => new SpaceSaving(1.5)).toThrow(RangeError);
  });
});
