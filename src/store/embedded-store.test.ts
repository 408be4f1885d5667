import { describe, expect, it } from 'vitest';
import { createEmbeddedStore } from './embedded-store.js';

function clockedStore(maxItems: number) {
  const clock = { ms: Date.UTC(2026, 10, 22) };
  const store = createEmbeddedStore({ now: () => clock.ms, maxItems });
  const add = (key: string, ttlSeconds: number) => store.incrementAndRead([{ key, delta: 1, ttlSeconds }], []);
  const values = async (...keys: string[]) => (await store.incrementAndRead([], keys)).read;
  return { clock, add, values, store };
}

describe('embedded store', () => {
  it('evicts the oldest item when full, as a full Memcached would', async () => {
    const { add, values } = clockedStore(2);
    await add('a', 60);
    await add('b', 60);
    await add('c', 60);
    expect(await values('a', 'b', 'c')).toEqual([0, 1, 1]);
  });

  it('frees expired items as its clock passes them, so they take no room', async () => {
    const { clock, add, values } = clockedStore(2);
    await add('long', 100);
    await add('short', 1);
    clock.ms += 2000;
    // Were `short` still held, adding a third item would evict the oldest, `long`.
    await add('new', 100);
    expect(await values('long', 'short', 'new')).toEqual([1, 0, 1]);
  });

  it('frees expired items after a long jump of the clock too', async () => {
    const { clock, add, values } = clockedStore(2);
    await add('long', 10 * 86_400);
    await add('short', 1);
    clock.ms += 5 * 86_400 * 1000;
    await add('new', 100);
    expect(await values('long', 'short', 'new')).toEqual([1, 0, 1]);
  });

  it('counts swapped items against maxItems, a swap making its item the newest', async () => {
    const { add, values, store } = clockedStore(2);
    expect(await store.swap('a', 5, 60, undefined)).toBe(true);
    await add('b', 60);
    const { version } = await store.readVersioned('a');
    expect(await store.swap('a', 6, 60, version)).toBe(true);
    await add('c', 60);
    expect(await values('a', 'b', 'c')).toEqual([6, 0, 1]);
  });

  it('gives a swapped item its new TTL', async () => {
    const { clock, store } = clockedStore(10);
    await store.swap('k', 1, 1, undefined);
    const { version } = await store.readVersioned('k');
    await store.swap('k', 2, 100, version);
    clock.ms += 5000;
    expect((await store.readVersioned('k')).value).toBe(2);
    clock.ms += 100_000;
    expect(await store.readVersioned('k')).toEqual({ value: undefined, version: undefined });
  });
});
