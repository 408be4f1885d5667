import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CounterStore } from '../src/store/counter-store.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

/** A store under test and a way to let time pass for it. */
interface Subject {
  store: CounterStore;
  pass(seconds: number): Promise<void>;
  /** Another instance counting in the same counters, when the store is shared (else the store itself). */
  another(): CounterStore;
}

const memcached = useMemcached();

const subjects: [string, () => Subject][] = [
  [
    'embedded',
    () => {
      let nowMs = Date.UTC(2026, 10, 22);
      const store = createEmbeddedStore({ now: () => nowMs });
      return {
        store,
        pass: (seconds) => {
          nowMs += seconds * 1000;
          return Promise.resolve();
        },
        another: () => store,
      };
    },
  ],
  [
    'memcached',
    () => {
      const open = () => createMemcachedStore({ servers: memcached().servers, timeoutMs: 2000 });
      const others: CounterStore[] = [];
      const store = open();
      return {
        // Closing it closes the other instances too.
        store: { ...store, close: () => Promise.all([store, ...others].map((s) => s.close())).then(() => undefined) },
        pass: (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000)),
        another: () => {
          const other = open();
          others.push(other);
          return other;
        },
      };
    },
  ],
];

describe.each(subjects)('%s store', (_name, makeSubject) => {
  let subject: Subject;
  let store: CounterStore;
  let prefix: string;
  beforeAll(() => {
    subject = makeSubject();
    store = subject.store;
  });
  afterAll(async () => {
    await store.close();
  });
  const key = (name: string): string => `${prefix}:{tag}:${name}`;
  const incr = (name: string, delta = 1, ttlSeconds = 60) => ({ key: key(name), delta, ttlSeconds });

  it('creates a missing counter holding the delta, then adds to it', async () => {
    prefix = uniquePrefix();
    expect((await store.incrementAndRead([incr('a', 3)], [])).incremented).toEqual([3]);
    expect((await store.incrementAndRead([incr('a', 2)], [])).incremented).toEqual([5]);
  });

  it('reads 0 for missing keys and sees the same call’s increments', async () => {
    prefix = uniquePrefix();
    await store.incrementAndRead([incr('x', 4)], []);
    const result = await store.incrementAndRead([incr('y', 7)], [key('x'), key('missing'), key('y')]);
    expect(result).toEqual({ incremented: [7], read: [4, 0, 7] });
  });

  it('decrements without going below zero or creating keys', async () => {
    prefix = uniquePrefix();
    await store.incrementAndRead([incr('d', 5)], []);
    await store.decrement([
      { key: key('d'), delta: 2 },
      { key: key('never'), delta: 1 },
    ]);
    expect((await store.incrementAndRead([], [key('d'), key('never')])).read).toEqual([3, 0]);
    await store.decrement([{ key: key('d'), delta: 10 }]);
    expect((await store.incrementAndRead([], [key('d')])).read).toEqual([0]);
    // A decremented-away key still exists; the next increment adds to it rather than recreating it.
    expect((await store.incrementAndRead([incr('d', 1)], [])).incremented).toEqual([1]);
  });

  it('expires a counter after its TTL', async () => {
    prefix = uniquePrefix();
    await store.incrementAndRead([incr('short', 1, 1), incr('long', 1, 60)], []);
    await subject.pass(2.2);
    expect((await store.incrementAndRead([], [key('short'), key('long')])).read).toEqual([0, 1]);
  });

  it('answers concurrent calls each with its own values', async () => {
    prefix = uniquePrefix();
    const values = await Promise.all(Array.from({ length: 300 }, () => store.incrementAndRead([incr('hot')], [])));
    expect(values.map((v) => v.incremented[0]).sort((a = 0, b = 0) => a - b)).toEqual(
      Array.from({ length: 300 }, (_, i) => i + 1),
    );
  });

  describe('compare-and-swap', () => {
    it('reads a missing key as no value and no version', async () => {
      prefix = uniquePrefix();
      expect(await store.readVersioned(key('none'))).toEqual({ value: undefined, version: undefined });
    });

    it('creates a missing key once: a second create finds it there', async () => {
      prefix = uniquePrefix();
      expect(await store.swap(key('c'), 5, 60, undefined)).toBe(true);
      expect(await store.swap(key('c'), 6, 60, undefined)).toBe(false);
      const read = await store.readVersioned(key('c'));
      expect(read.value).toBe(5);
      expect(typeof read.version).toBe('bigint');
    });

    it('swaps over the version read, and not over a stale one', async () => {
      prefix = uniquePrefix();
      await store.swap(key('s'), 1, 60, undefined);
      const first = await store.readVersioned(key('s'));
      expect(await store.swap(key('s'), 2, 60, first.version)).toBe(true);
      const second = await store.readVersioned(key('s'));
      expect(second).toMatchObject({ value: 2 });
      expect(second.version).not.toBe(first.version);
      expect(await store.swap(key('s'), 3, 60, first.version)).toBe(false);
      expect(await store.swap(key('s'), 4, 60, second.version)).toBe(true);
      expect((await store.readVersioned(key('s'))).value).toBe(4);
    });

    it('does not swap over a key that is missing, whatever the version', async () => {
      prefix = uniquePrefix();
      await store.swap(key('gone'), 1, 60, undefined);
      const { version } = await store.readVersioned(key('gone'));
      await store.reset({ key: key('marker'), value: 1, ttlSeconds: 60 }, [key('gone')]);
      expect(await store.swap(key('gone'), 2, 60, version)).toBe(false);
      expect(await store.readVersioned(key('gone'))).toEqual({ value: undefined, version: undefined });
      // Created again, it has a new version: the old one does not name it (no ABA).
      expect(await store.swap(key('gone'), 3, 60, undefined)).toBe(true);
      expect(await store.swap(key('gone'), 4, 60, version)).toBe(false);
      expect((await store.readVersioned(key('gone'))).value).toBe(3);
    });

    it('shares values with increments, which change the version', async () => {
      prefix = uniquePrefix();
      await store.swap(key('mixed'), 41, 60, undefined);
      const before = await store.readVersioned(key('mixed'));
      // Stored as the decimal text an INCREMENT reads.
      expect((await store.incrementAndRead([incr('mixed')], [])).incremented).toEqual([42]);
      expect(await store.swap(key('mixed'), 0, 60, before.version)).toBe(false);
      await store.incrementAndRead([incr('counted', 3)], []);
      expect((await store.readVersioned(key('counted'))).value).toBe(3);
    });

    it('keeps whole numbers up to 2^53 exact', async () => {
      prefix = uniquePrefix();
      for (const value of [0, 2 ** 32 + 1, 2 ** 53 - 1, 2 ** 53]) {
        expect(await store.swap(key(`big${value}`), value, 60, undefined)).toBe(true);
        expect((await store.readVersioned(key(`big${value}`))).value).toBe(value);
      }
      const { version } = await store.readVersioned(key('big0'));
      expect(await store.swap(key('big0'), 2 ** 53 - 3, 60, version)).toBe(true);
      expect((await store.readVersioned(key('big0'))).value).toBe(2 ** 53 - 3);
    });

    it('refuses values, TTLs and versions it cannot store as asked, writing nothing', async () => {
      prefix = uniquePrefix();
      for (const [value, ttl, version] of [
        [1.5, 60, undefined],
        [-1, 60, undefined],
        [2 ** 53 + 2, 60, undefined],
        [Number.NaN, 60, undefined],
        [1, 0, undefined],
        [1, 0.5, undefined],
        [1, 60, 0n],
        [1, 60, -1n],
      ] as const)
        await expect(store.swap(key('bad'), value, ttl, version)).rejects.toThrow(RangeError);
      expect(await store.readVersioned(key('bad'))).toEqual({ value: undefined, version: undefined });
    });

    it('deletes a key only over the version read: not one changed, deleted or made again since', async () => {
      prefix = uniquePrefix();
      await store.swap(key('held'), 7, 60, undefined);
      const held = await store.readVersioned(key('held'));
      await store.swap(key('moved'), 1, 60, undefined);
      const stale = await store.readVersioned(key('moved'));
      await store.incrementAndRead([incr('moved')], []);
      expect(await store.remove(key('moved'), stale.version ?? 0n)).toBe(false);
      expect((await store.readVersioned(key('moved'))).value).toBe(2);
      expect(await store.remove(key('held'), held.version ?? 0n)).toBe(true);
      expect(await store.readVersioned(key('held'))).toEqual({ value: undefined, version: undefined });
      // Gone, then made again: the old version names neither.
      expect(await store.remove(key('held'), held.version ?? 0n)).toBe(false);
      expect(await store.swap(key('held'), 8, 60, undefined)).toBe(true);
      expect(await store.remove(key('held'), held.version ?? 0n)).toBe(false);
      expect((await store.readVersioned(key('held'))).value).toBe(8);
    });

    it('expires a swapped value after its TTL', async () => {
      prefix = uniquePrefix();
      await store.swap(key('short'), 1, 1, undefined);
      await store.swap(key('long'), 2, 60, undefined);
      const { version } = await store.readVersioned(key('short'));
      await subject.pass(2.2);
      expect(await store.readVersioned(key('short'))).toEqual({ value: undefined, version: undefined });
      expect((await store.readVersioned(key('long'))).value).toBe(2);
      // Gone means gone: the old version does not bring it back, a create does.
      expect(await store.swap(key('short'), 3, 60, version)).toBe(false);
      expect(await store.swap(key('short'), 3, 60, undefined)).toBe(true);
    });

    it('keeps a value whose TTL exceeds 30 days (sent as an absolute time)', async () => {
      prefix = uniquePrefix();
      expect(await store.swap(key('month'), 7, 40 * 86_400, undefined)).toBe(true);
      const { version } = await store.readVersioned(key('month'));
      expect(await store.swap(key('month'), 8, 90 * 86_400, version)).toBe(true);
      await subject.pass(1.1);
      expect((await store.readVersioned(key('month'))).value).toBe(8);
    });

    it('counts exactly under racing read-modify-swap loops of several instances', async () => {
      prefix = uniquePrefix();
      const stores = [store, subject.another(), subject.another(), subject.another()];
      let conflicts = 0;
      const racer = async (racing: CounterStore) => {
        for (let added = 0; added < 50;) {
          const { value, version } = await racing.readVersioned(key('raced'));
          if (await racing.swap(key('raced'), (value ?? 0) + 1, 60, version)) added++;
          else if (++conflicts > 100_000) throw new Error('the racers never get through');
        }
      };
      await Promise.all(Array.from({ length: 20 }, (_, i) => racer(stores[i % stores.length] as CounterStore)));
      expect((await store.readVersioned(key('raced'))).value).toBe(1000);
      // They did race: many swaps lost to another's.
      expect(conflicts).toBeGreaterThan(0);
    });
  });

  it('answers a ping', async () => {
    await expect(store.ping()).resolves.toBeUndefined();
  });
});
