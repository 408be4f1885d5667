import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashTagOf } from '../store/memcached/servers.js';
import { bucketKey, counterKeyBase, featureTag } from './keys.js';

/** Memcached's rule for keys: at most 250 bytes, no whitespace or control characters. */
function isValidMemcachedKey(key: string): boolean {
  return Buffer.byteLength(key) <= 250 && /^[!-~]+$/.test(key); // printable ASCII, no space
}

const longestKey = (feature: string): string =>
  bucketKey(counterKeyBase('memgate-prefix-of-32-characters', 'e'.repeat(64), feature), 3600, 99_999_999_999);

describe('feature tags', () => {
  it.each(['203.0.113.7', '2001:db8::1', 'alice+tag@example.com', 'user_42', 'x'.repeat(64)])(
    'keeps %s readable',
    (feature) => {
      expect(featureTag(feature)).toBe(`=${feature}`);
    },
  );

  it.each([
    'with space',
    'tab\there',
    'nul\u0000',
    'ünïcödé',
    '{brace}',
    'x'.repeat(65),
    '名前',
    '\u{1F600}',
    'a\r\nb',
  ])('hashes %j', (feature) => {
    expect(featureTag(feature)).toMatch(/^#[A-Za-z0-9_-]{22}$/);
  });

  it('makes valid Memcached keys from any string up to 1 KB', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 1024 }), (feature) => {
        expect(isValidMemcachedKey(longestKey(feature))).toBe(true);
      }),
      { numRuns: 3000 },
    );
    expect(isValidMemcachedKey(longestKey('x'.repeat(64)))).toBe(true);
  });

  it('gives distinct features distinct tags', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 80 }),
        fc.string({ unit: 'binary', maxLength: 80 }),
        (a, b) => {
          fc.pre(a !== b);
          expect(featureTag(a)).not.toBe(featureTag(b));
        },
      ),
      { numRuns: 3000 },
    );
    // A readable feature can never equal a hashed one, even one that looks like a hash.
    expect(featureTag('#abc')).not.toBe(featureTag('abc'));
  });
});

describe('hash tags', () => {
  it('routes every bucket of one event+feature by the same tag', () => {
    const base = counterKeyBase('mg', 'login', '203.0.113.7');
    expect(hashTagOf(bucketKey(base, 1, 1_795_305_600))).toBe('login:=203.0.113.7');
    expect(hashTagOf(bucketKey(base, 3600, 1_795_302_000))).toBe('login:=203.0.113.7');
  });

  it('falls back to the whole key without braces', () => {
    expect(hashTagOf('plain-key')).toBe('plain-key');
    expect(hashTagOf('open{only')).toBe('open{only');
  });
});
