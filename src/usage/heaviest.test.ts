import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareUtf8, Heaviest } from './heaviest.js';

describe('Heaviest', () => {
  it('keeps the k clients a full sort by count, then name in UTF-8 bytes, puts first (fast-check)', () => {
    const name = fc.constantFrom('a', 'b', 'B', 'ab', 'é', '\u{10000}', '\uE000', '\uFFFF', 'zz');
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ feature: name, count: fc.integer({ min: 0, max: 4 }) }), {
          selector: ({ feature }) => feature,
        }),
        fc.integer({ min: 0, max: 10 }),
        (clients, k) => {
          const heaviest = new Heaviest(k);
          for (const { feature, count } of clients) heaviest.offer(feature, count);
          const sorted = [...clients].sort((a, b) => b.count - a.count || compareUtf8(a.feature, b.feature));
          expect(heaviest.list()).toEqual(sorted.slice(0, k));
        },
      ),
    );
  });

  it('keeps the same from many clients: a heap many levels deep, with ties of count (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ feature: fc.string({ maxLength: 4 }), count: fc.integer({ min: 0, max: 6 }) }), {
          selector: ({ feature }) => feature,
          maxLength: 300,
        }),
        fc.integer({ min: 0, max: 120 }),
        (clients, k) => {
          const heaviest = new Heaviest(k);
          for (const { feature, count } of clients) heaviest.offer(feature, count);
          const sorted = [...clients].sort((a, b) => b.count - a.count || compareUtf8(a.feature, b.feature));
          expect(heaviest.list()).toEqual(sorted.slice(0, k));
        },
      ),
    );
  });
});

describe('compareUtf8', () => {
  it('orders strings as their UTF-8 bytes do, as SQLite does (fast-check)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(Math.sign(compareUtf8(a, b))).toBe(Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
      }),
    );
    // Where UTF-16 order differs: U+10000 (a surrogate pair) after U+E000.
    expect(compareUtf8('\u{10000}', '\uE000')).toBeGreaterThan(0);
    expect(['\uE000', '\u{10000}'].sort()).toEqual(['\u{10000}', '\uE000']);
  });
});
