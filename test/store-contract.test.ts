import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CounterStore } from '../src/store/counter-store.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

/** A store under test and a way to let time pass for it. */
interface Subject {
  store: CounterStore;
  pass(seconds: number): Promise<void>;
}

const memcached = useMemcached();

const subjects: [string, () => Subject][] = [
  [
    'embedded',
    () => {
      let nowMs = Date.UTC(2026, 10, 22);
      return {
        store: createEmbeddedStore({ now: () => nowMs }),
        pass: (seconds) => {
          nowMs += seconds * 1000;
          return Promise.resolve();
        },
      };
    },
  ],
  [
    'memcached',
    () => ({
      store: createMemcachedStore({ servers: memcached().servers, timeoutMs: 2000 }),
      pass: (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000)),
    }),
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

  it('answers a ping', async () => {
    await expect(store.ping()).resolves.toBeUndefined();
  });
});
