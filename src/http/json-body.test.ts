import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonShapeProblem, markNotUtf8Strings, poisonedKey } from './json-body.js';

const LIMITS = { maxDepth: 4, maxValues: 1024 };
const shape = (text: string) => jsonShapeProblem(Buffer.from(text), LIMITS);

describe('jsonShapeProblem, before a body is parsed', () => {
  it('skips every string whole, however many escaped quotes and backslashes it holds (fast-check)', () => {
    // Quotes, backslashes, commas and brackets inside strings: none may count as structure.
    const tricky = fc.string({
      unit: fc.constantFrom('"', '\\', ',', '[', '{', 'a', '\n'),
      minLength: 0,
      maxLength: 300,
      size: 'max',
    });
    fc.assert(
      fc.property(fc.array(tricky, { minLength: 2, maxLength: 40 }), (strings) => {
        const bytes = Buffer.from(JSON.stringify(strings));
        expect(jsonShapeProblem(bytes, { maxDepth: 1, maxValues: strings.length })).toBeUndefined();
        expect(jsonShapeProblem(bytes, { maxDepth: 1, maxValues: strings.length - 1 })?.code).toBe('payload_too_large');
      }),
    );
  });

  it('lets through every request memgate takes: a full lease batch of any text (fast-check)', () => {
    const item = fc.record({
      event: fc.string({ maxLength: 64 }),
      feature: fc.string({ unit: 'binary', maxLength: 200 }),
      id: fc.string({ maxLength: 64 }),
      unused: fc.nat(),
    });
    fc.assert(
      fc.property(fc.array(item, { maxLength: 50 }), fc.array(item, { maxLength: 50 }), (take, giveBack) => {
        expect(shape(JSON.stringify({ take, return: giveBack }))).toBeUndefined();
      }),
    );
  });

  it('refuses nesting beyond the limit, wherever it is, and counts none inside strings', () => {
    expect(shape('[[[[1]]]]')).toBeUndefined();
    expect(shape('[[[[[1]]]]]')?.code).toBe('invalid_request');
    expect(shape(`{"a": 1, "b": ${'['.repeat(100_000)}`)?.message).toMatch(/more than 4 deep/);
    // Brackets, commas and escaped quotes inside strings are text.
    expect(shape(JSON.stringify({ feature: '[[[[[[{{{{,,,,"\\"[[[' }))).toBeUndefined();
    expect(shape(JSON.stringify({ feature: ','.repeat(5000) }))).toBeUndefined();
  });

  it('refuses more values than any request holds, before any are built', () => {
    expect(shape(`[${Array(1024).fill(1).join(',')}]`)).toBeUndefined();
    const problem = shape(`[${Array(1025).fill(1).join(',')}]`);
    expect(problem?.code).toBe('payload_too_large');
    expect(problem?.message).toMatch(/more than 1024 values/);
  });
});

describe('markNotUtf8Strings', () => {
  it('is the body decoded as UTF-8 when it is UTF-8 (fast-check)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const bytes = Buffer.from(JSON.stringify(value));
        expect(markNotUtf8Strings(bytes)).toBe(bytes.toString('utf8'));
      }),
    );
  });

  it('marks exactly the strings whose bytes are not UTF-8, so no two such strings read alike (fast-check)', () => {
    const text = fc.uint8Array({ maxLength: 12 }).map((bytes) =>
      // Bytes for a JSON string: no quote, backslash or control character.
      Buffer.from(bytes.filter((byte) => byte !== 0x22 && byte !== 0x5c && byte >= 0x20)),
    );
    fc.assert(
      fc.property(text, text, (event, feature) => {
        const body = Buffer.concat([
          Buffer.from('{"event":"'),
          event,
          Buffer.from('","feature":"'),
          feature,
          Buffer.from('"}'),
        ]);
        const parsed = JSON.parse(markNotUtf8Strings(body)) as { event: string; feature: string };
        expect(parsed.event.isWellFormed()).toBe(isUtf8(event));
        expect(parsed.feature.isWellFormed()).toBe(isUtf8(feature));
        if (isUtf8(feature)) expect(parsed.feature).toBe(feature.toString('utf8'));
      }),
    );
  });

  it('reads "Jos\\xe9" and "Jos\\xe8" as not well-formed, not as one "Jos\\ufffd"', () => {
    const body = (last: number) =>
      Buffer.concat([Buffer.from('{"feature":"Jos'), Buffer.from([last]), Buffer.from('"}')]);
    for (const last of [0xe9, 0xe8]) {
      expect((JSON.parse(markNotUtf8Strings(body(last))) as { feature: string }).feature.isWellFormed()).toBe(false);
    }
    // U+FFFD sent as UTF-8 is text like any other.
    expect(JSON.parse(markNotUtf8Strings(Buffer.from('{"feature":"Jos\ufffd"}')))).toEqual({ feature: 'Jos\ufffd' });
  });
});

describe('poisonedKey', () => {
  it('finds a __proto__ or constructor.prototype key at any depth, however it was escaped', () => {
    const parse = (text: string) => poisonedKey(JSON.parse(text));
    expect(parse('{"event":"a","feature":"b"}')).toBeUndefined();
    expect(parse('[{"a":1},{"__proto__":{"x":1}}]')).toBe('__proto__');
    expect(parse('{"take":[{"\\u005f_proto__":1}]}')).toBe('__proto__');
    expect(parse('{"constructor":{"prototype":{"x":1}}}')).toBe('constructor.prototype');
    // Text that only names them is no key.
    expect(parse('{"feature":"__proto__","constructor":"prototype"}')).toBeUndefined();
  });
});
