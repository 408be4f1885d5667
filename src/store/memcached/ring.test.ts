import fc from 'fast-check';
import HashRingPackage from 'hashring';
import { describe, expect, it } from 'vitest';
import { HashRing, ketamaHash } from './ring.js';

/**
 * The ring must place every key where hashring 3.x placed it (memgate's ring before this
 * one), or old and new instances would count one client on two servers during an upgrade.
 * hashring stays a devDependency for this file only.
 */

/** The parts of hashring these tests read that its types leave out. */
interface HashRingInside {
  readonly ring: readonly { readonly value: number; readonly server: string }[];
  find(hash: number): number;
  hashValue(key: string): number;
}

function reference(servers: readonly string[]) {
  const ring = new HashRingPackage([...servers]);
  const inside = ring as unknown as HashRingInside;
  return {
    ring,
    inside,
    /** hashring's placement without its cache (see get, below). */
    serverAt: (hash: number) => (inside.ring[inside.find(hash)] as { server: string }).server,
  };
}

/**
 * hashring's lookup cache is a plain object: a key that names an Object.prototype property
 * (`__proto__`, `constructor`, ...) reads that property as a cached entry and writes to it,
 * changing Object.prototype for the whole process (these unit tests share one). Such keys are
 * compared with hashring's uncached placement instead of calling its get.
 */
const notAnObjectProperty = (key: string) => !(key in {});

const port = fc.integer({ min: 1, max: 65_535 });
const label = fc.oneof(
  fc.tuple(fc.ipV4(), port).map(([host, p]) => `${host}:${p}`),
  fc.tuple(fc.domain(), port).map(([host, p]) => `${host}:${p}`),
  fc.tuple(fc.ipV6(), port).map(([host, p]) => `[${host}]:${p}`),
  fc.constantFrom('[::1]:11211', '[fe80::1%eth0]:11211', 'memcached-0.memcached:11211', 'localhost:11211'),
  // Odd names: empty, unicode, with the `-` and `:` hashring joins and splits on.
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: fc.constantFrom('a', '-', ':', '1', '[', ']'), maxLength: 12 }),
);
/**
 * 1 to 12 servers, usually distinct (memgate refuses a label listed twice; the ring copes as
 * hashring does). Not a label that names an Object.prototype property: hashring keeps its
 * servers in a plain object, where `__proto__` is lost (a ring of `__proto__` and `[::1]:11211`
 * had one server's points, memgate's both), and memgate's labels are `host:port`.
 */
const servers = fc.oneof(
  { weight: 5, arbitrary: fc.uniqueArray(label.filter(notAnObjectProperty), { minLength: 1, maxLength: 12 }) },
  { weight: 1, arbitrary: fc.array(fc.constantFrom('a:1', 'b:1', 'c:1'), { minLength: 1, maxLength: 12 }) },
);
/** Any UTF-16 unit, lone surrogates included: UTF-8 encoding turns them into U+FFFD alike. */
const utf16Unit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
const key = fc.oneof(
  fc.constant(''),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: utf16Unit, maxLength: 20 }),
  fc.string({ unit: 'binary-ascii', minLength: 1_000, maxLength: 5_000 }),
  // memgate's hash tags: `${event}:${feature tag}`.
  fc.tuple(fc.stringMatching(/^[a-z][a-z0-9_.-]{0,15}$/), fc.string({ maxLength: 40 })).map(([e, f]) => `${e}:=${f}`),
);

describe('HashRing', () => {
  it('places every key on the server hashring 3.x places it on, for get and range', () => {
    fc.assert(
      fc.property(servers, fc.array(key, { minLength: 1, maxLength: 30 }), (list, keys) => {
        const ring = new HashRing(list);
        const old = reference(list);
        // The same points in the same order: every lookup between them follows.
        expect(ring.owners).toEqual(old.inside.ring.map((point) => point.server));
        // Compared per lookup, asserted once: an expect per lookup was most of the test's time.
        const differ: unknown[] = [];
        for (const k of keys) {
          const expected = old.serverAt(old.inside.hashValue(k));
          if (ring.get(k) !== expected) differ.push({ key: k, get: ring.get(k), expected });
          if (notAnObjectProperty(k) && ring.get(k) !== old.ring.get(k))
            differ.push({ key: k, get: ring.get(k), hashring: old.ring.get(k) });
          for (let count = 1; count <= list.length + 1; count++) {
            const [ours, theirs] = [ring.range(k, count), old.ring.range(k, count, true)];
            if (JSON.stringify(ours) !== JSON.stringify(theirs))
              differ.push({ key: k, count, range: ours, hashring: theirs });
          }
        }
        expect(differ).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });

  it('finds the same point as hashring for every hash at, just below and just above each point, and the ends', () => {
    fc.assert(
      fc.property(servers, (list) => {
        const ring = new HashRing(list);
        const old = reference(list);
        const hashes = old.inside.ring.flatMap(({ value }) => [value - 1, value, value + 1]);
        const differ = [0, 1, 0xffff_fffe, 0xffff_ffff, ...hashes.filter((h) => h >= 0 && h <= 0xffff_ffff)]
          .filter((hash) => ring.serverAt(hash) !== old.serverAt(hash))
          .map((hash) => ({ hash, ours: ring.serverAt(hash), hashring: old.serverAt(hash) }));
        expect(differ).toEqual([]);
      }),
      { numRuns: 25 },
    );
  });

  it('hashes a key as hashring does', () => {
    const old = reference(['a:1']).inside;
    fc.assert(
      fc.property(key, (k) => {
        expect(ketamaHash(k)).toBe(old.hashValue(k));
      }),
    );
  });

  // Written out so that a change of algorithm shows in review. Computed with hashring 3.2.0.
  const CLUSTERS = {
    // 40 vnodes each, 480 points.
    three: ['10.0.0.1:11211', '10.0.0.2:11211', '10.0.0.3:11211'],
    bracketed: ['[::1]:11211', '[fe80::1%eth0]:11211', 'memcached-0.memcached:11211'],
    // The float product rounds to 39 vnodes each, 1092 points.
    seven: Array.from({ length: 7 }, (_, i) => `mc-${i}:11211`),
  };
  const KEYS = { empty: '', unicode: 'ünïcödé 🚀', '10,000 x': 'x'.repeat(10_000) };
  it.each([
    ['three', 'empty', '10.0.0.2:11211'],
    ['three', 'login:=user-1', '10.0.0.1:11211'],
    ['three', 'login:=user-2', '10.0.0.3:11211'],
    ['three', 'search:=ip-203.0.113.7', '10.0.0.2:11211'],
    ['three', 'unicode', '10.0.0.1:11211'],
    ['three', '10,000 x', '10.0.0.2:11211'],
    ['bracketed', 'empty', 'memcached-0.memcached:11211'],
    ['bracketed', 'login:=user-1', '[fe80::1%eth0]:11211'],
    ['bracketed', 'login:=user-3', '[::1]:11211'],
    ['seven', 'empty', 'mc-0:11211'],
    ['seven', 'login:=user-1', 'mc-3:11211'],
    ['seven', 'login:=user-2', 'mc-1:11211'],
    ['seven', 'search:=ip-203.0.113.7', 'mc-5:11211'],
  ] as const)('on %s servers, places %s on %s', (cluster, name, server) => {
    const k = name in KEYS ? KEYS[name as keyof typeof KEYS] : name;
    expect(new HashRing(CLUSTERS[cluster]).get(k)).toBe(server);
  });

  it('has 160 points a server, or 156 where hashring rounds down (7 servers)', () => {
    expect(new HashRing(['a:1', 'b:1', 'c:1']).owners).toHaveLength(480);
    expect(new HashRing(Array.from({ length: 7 }, (_, i) => `mc-${i}:11211`)).owners).toHaveLength(1092);
  });

  it('walks distinct servers clockwise for range', () => {
    const ring = new HashRing(['10.0.0.1:11211', '10.0.0.2:11211', '10.0.0.3:11211']);
    expect(ring.range('login:=user-1', 3)).toEqual(['10.0.0.1:11211', '10.0.0.3:11211', '10.0.0.2:11211']);
    expect(ring.range('login:=user-2', 3)).toEqual(['10.0.0.3:11211', '10.0.0.1:11211', '10.0.0.2:11211']);
    expect(ring.range('login:=user-2', 1)).toEqual(['10.0.0.3:11211']);
    expect(ring.range('login:=user-2', 9)).toHaveLength(3);
  });

  it('gives a point two servers share to the one listed first, as hashring does', () => {
    // Found by search: md5 of a vnode of each gives the point 4057872511.
    const [a, b] = ['10.1.0.72:11211', '10.1.1.102:11211'] as const;
    expect(new HashRing([a, b]).serverAt(4_057_872_511)).toBe(a);
    expect(new HashRing([b, a]).serverAt(4_057_872_511)).toBe(b);
    expect(reference([a, b]).serverAt(4_057_872_511)).toBe(a);
    expect(reference([b, a]).serverAt(4_057_872_511)).toBe(b);
  });

  it('places keys that name Object.prototype properties like any other', () => {
    const list = ['10.0.0.1:11211', '10.0.0.2:11211', '10.0.0.3:11211'];
    const ring = new HashRing(list);
    const old = reference(list);
    for (const k of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(ring.get(k)).toBe(old.serverAt(old.inside.hashValue(k)));
      expect(ring.get(k)).toBe(ring.get(k)); // remembered: the same again
    }
  });

  it('answers the same once it has forgotten (more keys than it remembers)', () => {
    const list = ['a:1', 'b:1', 'c:1'];
    const ring = new HashRing(list);
    const old = reference(list);
    const keys = Array.from({ length: 12_000 }, (_, i) => `login:=user-${i}`);
    const first = keys.map((k) => ring.get(k));
    expect(keys.map((k) => ring.get(k))).toEqual(first);
    expect(first).toEqual(keys.map((k) => old.serverAt(old.inside.hashValue(k))));
  });

  it('refuses an empty server list', () => {
    expect(() => new HashRing([])).toThrow(RangeError);
  });
});
