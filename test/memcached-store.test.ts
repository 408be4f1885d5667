import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { startMemcachedProcess, uniquePrefix, useMemcached, type MemcachedProcess } from './helpers/memcached.js';

describe('memcached store on one server', () => {
  const memcached = useMemcached();

  it('keeps counters exact beyond 32 bits', async () => {
    const store = createMemcachedStore({ servers: memcached().servers });
    const key = `${uniquePrefix()}:{t}:big`;
    const big = 2 ** 40 + 7;
    expect((await store.incrementAndRead([{ key, delta: big, ttlSeconds: 60 }], [])).incremented).toEqual([big]);
    expect((await store.incrementAndRead([{ key, delta: big, ttlSeconds: 60 }], [key])).incremented).toEqual([2 * big]);
    await store.close();
  });

  it('keeps counters whose TTL exceeds 30 days (sent as an absolute time)', async () => {
    const store = createMemcachedStore({ servers: memcached().servers });
    const key = `${uniquePrefix()}:{t}:month`;
    await store.incrementAndRead([{ key, delta: 1, ttlSeconds: 40 * 86_400 }], []);
    expect((await store.incrementAndRead([], [key])).read).toEqual([1]);
    await store.close();
  });

  it('counts every increment when connections create the same keys at once', async () => {
    // memcached answers NOT_STORED to the slower of two connections creating one key; the
    // store sends that increment again.
    const stores = Array.from({ length: 4 }, () => createMemcachedStore({ servers: memcached().servers }));
    const prefix = uniquePrefix();
    for (let round = 0; round < 100; round++) {
      const keys = Array.from({ length: 8 }, (_, k) => `${prefix}:{r${round}}:${k}`);
      const increments = keys.map((key) => ({ key, delta: 1, ttlSeconds: 60 }));
      const results = await Promise.all(
        stores.flatMap((store) => [store.incrementAndRead(increments, []), store.incrementAndRead(increments, [])]),
      );
      expect(results.map((r) => r.incremented.length)).toEqual(results.map(() => keys.length));
      expect((await stores[0]?.incrementAndRead([], keys))?.read).toEqual(keys.map(() => 8));
    }
    await Promise.all(stores.map((store) => store.close()));
  });

  it('reads replies that arrive split across many socket reads', async () => {
    // 3,000 increments and 3,000 reads in one call: about 200 KB of replies, read in chunks
    // that end in the middle of a reply.
    const store = createMemcachedStore({ servers: memcached().servers });
    const prefix = uniquePrefix();
    const keys = Array.from({ length: 3000 }, (_, i) => `${prefix}:{t}:${i}`);
    const increments = keys.map((key, i) => ({ key, delta: i + 1, ttlSeconds: 60 }));
    const first = await store.incrementAndRead(increments, keys);
    expect(first.incremented).toEqual(keys.map((_, i) => i + 1));
    expect(first.read).toEqual(keys.map((_, i) => i + 1));
    await store.close();
  });

  it('reads a large multi-get in one batch', async () => {
    const store = createMemcachedStore({ servers: memcached().servers });
    const prefix = uniquePrefix();
    const keys = Array.from({ length: 400 }, (_, i) => `${prefix}:{t}:${i}`);
    await store.incrementAndRead(
      keys.filter((_, i) => i % 3 === 0).map((key, i) => ({ key, delta: i + 1, ttlSeconds: 60 })),
      [],
    );
    const { read } = await store.incrementAndRead([], keys);
    expect(read).toEqual(keys.map((_, i) => (i % 3 === 0 ? i / 3 + 1 : 0)));
    await store.close();
  });
});

describe('memcached store on two servers', () => {
  let a: MemcachedProcess;
  let b: MemcachedProcess;
  beforeAll(async () => {
    [a, b] = await Promise.all([startMemcachedProcess(), startMemcachedProcess()]);
  });
  afterAll(async () => {
    await Promise.all([a.stop(), b.stop()]);
  });

  it('keeps every key of one hash tag on one server and spreads tags over both', async () => {
    const cluster = createMemcachedStore({ servers: `${a.servers},${b.servers}` });
    const onlyA = createMemcachedStore({ servers: a.servers });
    const onlyB = createMemcachedStore({ servers: b.servers });
    const prefix = uniquePrefix();
    const tags = Array.from({ length: 40 }, (_, i) => `feature-${i}`);
    const keysOf = (tag: string) => [1, 60, 3600].map((size) => `${prefix}:{${tag}}:${size}:0`);
    for (const tag of tags)
      await cluster.incrementAndRead(
        keysOf(tag).map((key) => ({ key, delta: 1, ttlSeconds: 60 })),
        [],
      );

    let onA = 0;
    for (const tag of tags) {
      const [inA, inB] = await Promise.all([
        onlyA.incrementAndRead([], keysOf(tag)),
        onlyB.incrementAndRead([], keysOf(tag)),
      ]);
      const allOnA = inA.read.every((v) => v === 1) && inB.read.every((v) => v === 0);
      const allOnB = inB.read.every((v) => v === 1) && inA.read.every((v) => v === 0);
      expect(allOnA || allOnB, `keys of ${tag} are split across servers`).toBe(true);
      if (allOnA) onA++;
    }
    expect(onA).toBeGreaterThan(5);
    expect(onA).toBeLessThan(35);

    // One call with keys on both servers returns every value in the caller's order.
    const mixed = tags.flatMap(keysOf);
    expect((await cluster.incrementAndRead([], mixed)).read).toEqual(mixed.map(() => 1));
    await Promise.all([cluster.close(), onlyA.close(), onlyB.close()]);
  });
});

describe('memcached store faults', () => {
  let server: MemcachedProcess;
  beforeAll(async () => {
    server = await startMemcachedProcess();
  });
  afterEach(() => {
    server.process.kill('SIGCONT');
  });
  afterAll(async () => {
    await server.stop();
  });

  it('gives up on a hung server at its deadline, then recovers', async () => {
    const store = createMemcachedStore({ servers: server.servers, timeoutMs: 200 });
    const key = `${uniquePrefix()}:{t}:k`;
    await store.incrementAndRead([{ key, delta: 1, ttlSeconds: 60 }], []);
    await server.pause();
    const started = performance.now();
    await expect(store.incrementAndRead([{ key, delta: 1, ttlSeconds: 60 }], [])).rejects.toThrow(
      StoreUnavailableError,
    );
    expect(performance.now() - started).toBeLessThan(1500);
    await expect(store.ping()).rejects.toThrow(/did not answer within 200 ms|timed out/);
    server.process.kill('SIGCONT');
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The paused increment may or may not have been applied when the server resumed; reads work again.
    const { read } = await store.incrementAndRead([], [key]);
    expect(read[0]).toBeGreaterThanOrEqual(1);
    await store.close();
  });

  it('fails fast, without hanging, when the server is gone', async () => {
    const gone = await startMemcachedProcess();
    const store = createMemcachedStore({ servers: gone.servers, timeoutMs: 1000 });
    await store.ping();
    await gone.stop();
    await expect(store.incrementAndRead([{ key: 'k{t}', delta: 1, ttlSeconds: 60 }], [])).rejects.toThrow(
      StoreUnavailableError,
    );
    await expect(store.ping()).rejects.toThrow(StoreUnavailableError);
    await store.close();
  });
});

describe('memcached store with SASL', () => {
  const user = { username: 'memgate', password: 'a passphrase: with spaces' };
  let server: MemcachedProcess;
  beforeAll(async () => {
    server = await startMemcachedProcess({ sasl: user });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('authenticates with the credentials in MEMCACHED_SERVERS, before the first request of every connection', async () => {
    const store = createMemcachedStore({
      servers: server.servers,
      credentials: { username: user.username, password: user.password },
    });
    const key = `${uniquePrefix()}:{t}:k`;
    expect((await store.incrementAndRead([{ key, delta: 2, ttlSeconds: 60 }], [key])).read).toEqual([2]);
    await store.ping();
    await store.close();
  });

  it('refuses with the reason when the server refuses the credentials, and counts nothing', async () => {
    const store = createMemcachedStore({
      servers: server.servers,
      credentials: { username: user.username, password: 'wrong' },
    });
    const key = `${uniquePrefix()}:{t}:k`;
    await expect(store.incrementAndRead([{ key, delta: 1, ttlSeconds: 60 }], [])).rejects.toThrow(
      /refused the credentials/,
    );
    await store.close();
    const good = createMemcachedStore({ servers: server.servers, credentials: user });
    expect((await good.incrementAndRead([], [key])).read).toEqual([0]);
    await good.close();
  });
});
