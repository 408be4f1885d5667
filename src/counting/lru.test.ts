// LruMap against lru-cache, whose place it takes in the library: the same operations on both, with
// the same bounds, hold the same entries in the same order, evict the same ones in the same order,
// and count the same sizes.
import fc from 'fast-check';
import { LRUCache } from 'lru-cache';
import { describe, expect, it } from 'vitest';
import { LruMap, type LruOptions } from './lru.js';

interface Value {
  readonly id: number;
}

type Op =
  | { readonly op: 'set'; readonly key: string; readonly size: number }
  | { readonly op: 'get'; readonly key: string }
  | { readonly op: 'delete'; readonly key: string };

// Few keys, so that keys come back; sizes up to 40, so that some exceed a small maxSize.
const key = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h');
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('set' as const), key, size: fc.integer({ min: 1, max: 40 }) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('get' as const), key }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), key }), weight: 1 },
);
/**
 * Plays one step on both, with a new value each time a key is set (as the library sets: see
 * the last test); what a read answers must be the same object on both.
 */
function playOnBoth(
  step: Op | { readonly op: 'peek'; readonly key: string },
  id: number,
  oracle: LRUCache<string, Value>,
  lru: LruMap<string, Value>,
  sized: boolean,
): void {
  switch (step.op) {
    case 'set': {
      const value = { id };
      if (sized) {
        oracle.set(step.key, value, { size: step.size });
        lru.set(step.key, value, step.size);
      } else {
        oracle.set(step.key, value);
        lru.set(step.key, value);
      }
      break;
    }
    case 'get':
      expect(lru.get(step.key)).toBe(oracle.get(step.key));
      break;
    case 'peek':
      expect(lru.peek(step.key)).toBe(oracle.peek(step.key));
      break;
    case 'delete':
      expect(lru.delete(step.key)).toBe(oracle.delete(step.key));
      break;
  }
}

const max = fc.integer({ min: 1, max: 6 });
const maxSize = fc.integer({ min: 1, max: 80 });
// As lru-cache's types ask: one bound at least.
type Bounds = LruOptions & ({ readonly max: number } | { readonly maxSize: number });
const options: fc.Arbitrary<Bounds> = fc.oneof(fc.record({ max }), fc.record({ maxSize }), fc.record({ max, maxSize }));

describe('LruMap', () => {
  it('does what lru-cache does with the same bounds, step by step', () => {
    fc.assert(
      fc.property(options, fc.array(op, { maxLength: 80 }), (bounds, ops) => {
        const evicted: string[] = [];
        const oracle = new LRUCache<string, Value>({
          ...bounds,
          dispose: (_value, key, reason) => {
            if (reason === 'evict') evicted.push(key);
          },
        });
        const lru = new LruMap<string, Value>(bounds);
        const sized = bounds.maxSize !== undefined;
        ops.forEach((step, id) => {
          const before = [...lru.entries()].map(([key]) => key);
          evicted.length = 0;
          playOnBoth(step, id, oracle, lru, sized);
          // Least recently used first, on both; and what a set dropped to make room went least
          // recently used first, as lru-cache's did. Compared as text at every step, and
          // asserted (with its diff) only where they differ: an expect per step was most of the time.
          const held = new Set([...lru.entries()].map(([key]) => key));
          const dropped = before.filter((key) => !held.has(key) && !(step.op !== 'get' && key === step.key));
          const ours = { entries: [...lru.entries()], size: lru.size, bytes: lru.calculatedSize, dropped };
          const theirs = {
            entries: [...oracle.rentries()],
            size: oracle.size,
            bytes: oracle.calculatedSize,
            dropped: evicted,
          };
          if (JSON.stringify(ours) !== JSON.stringify(theirs)) expect(ours).toEqual(theirs);
          // The very objects, not copies: values are compared by identity.
          const values = [...lru.values()];
          const oracleValues = [...oracle.rvalues()];
          if (values.some((value, i) => value !== oracleValues[i])) expect(values).toEqual(oracleValues);
        });
      }),
      { numRuns: 2000 },
    );
  });

  it('tells what it lets go, and why, as lru-cache’s dispose does; peeks without using', () => {
    fc.assert(
      fc.property(
        options,
        fc.array(fc.oneof(op, fc.record({ op: fc.constant('peek' as const), key })), { maxLength: 80 }),
        (bounds, ops) => {
          const told: [number, string, string][] = [];
          const oracleTold: [number, string, string][] = [];
          const oracle = new LRUCache<string, Value>({
            ...bounds,
            dispose: (value, key, reason) => oracleTold.push([value.id, key, reason]),
          });
          const lru = new LruMap<string, Value>({
            ...bounds,
            dispose: (value, key, reason) => told.push([value.id, key, reason]),
          });
          const sized = bounds.maxSize !== undefined;
          ops.forEach((step, id) => {
            playOnBoth(step, id, oracle, lru, sized);
            expect(told).toEqual(oracleTold);
            expect([...lru.entries()].map(([held]) => held)).toEqual([...oracle.rkeys()]);
          });
          lru.clear();
          oracle.clear();
          expect(told).toEqual(oracleTold);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('makes room for a key set again with a larger size from the others, least recently used first', () => {
    const lru = new LruMap<string, Value>({ maxSize: 10 });
    lru.set('a', { id: 1 }, 3).set('b', { id: 2 }, 3).set('c', { id: 3 }, 3);
    lru.get('a');
    // b, used less recently than a, goes first; then a; c itself stays.
    lru.set('c', { id: 4 }, 5);
    expect([...lru.entries()]).toEqual([
      ['a', { id: 1 }],
      ['c', { id: 4 }],
    ]);
    lru.set('c', { id: 5 }, 10);
    expect([...lru.entries()]).toEqual([['c', { id: 5 }]]);
    expect(lru.calculatedSize).toBe(10);
  });

  it('holds no value larger than maxSize, and drops what its key held', () => {
    const lru = new LruMap<string, Value>({ maxSize: 10 });
    lru.set('a', { id: 1 }, 4).set('b', { id: 2 }, 4);
    lru.set('a', { id: 3 }, 11);
    expect([...lru.entries()]).toEqual([['b', { id: 2 }]]);
    expect(lru.calculatedSize).toBe(4);
  });

  it('counts against max and maxSize together', () => {
    const lru = new LruMap<string, Value>({ max: 2, maxSize: 100 });
    lru.set('a', { id: 1 }, 1).set('b', { id: 2 }, 1).set('c', { id: 3 }, 1);
    expect([...lru.entries()].map(([key]) => key)).toEqual(['b', 'c']);
    lru.set('d', { id: 4 }, 100);
    expect([...lru.entries()].map(([key]) => key)).toEqual(['d']);
  });

  it('empties with clear', () => {
    const lru = new LruMap<string, Value>({ maxSize: 10 });
    lru.set('a', { id: 1 }, 4).clear();
    expect(lru.size).toBe(0);
    expect(lru.calculatedSize).toBe(0);
    expect(lru.get('a')).toBeUndefined();
    lru.set('b', { id: 2 }, 10);
    expect([...lru.values()]).toEqual([{ id: 2 }]);
  });

  it('refuses bounds and sizes that are not positive integers', () => {
    expect(() => new LruMap({})).toThrow(TypeError);
    for (const bad of [0, -1, 1.5, NaN, Infinity]) {
      expect(() => new LruMap({ max: bad })).toThrow(TypeError);
      expect(() => new LruMap({ maxSize: bad })).toThrow(TypeError);
      expect(() => new LruMap<string, Value>({ maxSize: 10 }).set('a', { id: 1 }, bad)).toThrow(TypeError);
    }
    expect(() => new LruMap<string, Value>({ maxSize: 10 }).set('a', { id: 1 })).toThrow(TypeError);
    expect(() => new LruMap<string, Value>({ max: 10 }).set('a', { id: 1 }, 1)).toThrow(TypeError);
  });

  it('tells nothing of a value set again under its key', () => {
    const told: string[] = [];
    const value = { id: 1 };
    const lru = new LruMap<string, Value>({
      maxSize: 100,
      dispose: (_value, key, reason) => told.push(`${key} ${reason}`),
    });
    lru.set('a', value, 10).set('a', value, 20).set('a', { id: 2 }, 20);
    expect(told).toEqual(['a set']);
  });

  it('takes the new size of a value set again under its key, where lru-cache keeps the old one', () => {
    const value = { id: 1 };
    const lru = new LruMap<string, Value>({ maxSize: 100 });
    const oracle = new LRUCache<string, Value>({ maxSize: 100 });
    for (const cache of [lru, oracle]) {
      if (cache instanceof LruMap) cache.set('a', value, 10).set('a', value, 20);
      else cache.set('a', value, { size: 10 }).set('a', value, { size: 20 });
    }
    expect(lru.calculatedSize).toBe(20);
    expect(oracle.calculatedSize).toBe(10);
  });
});
