import { createServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../scripts/lib/memcached-process.js';
import { createLimiter } from '../src/counting/limiter.js';
import { StoreOverloadedError, StoreUnavailableError } from '../src/store/counter-store.js';
import { ServerConnection } from '../src/store/memcached/connection.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { serverStats } from '../src/store/memcached/stats.js';
import { itemTtls } from './conformance/helpers-integration.js';
import { startMemcachedProcess, uniquePrefix, useMemcached, type MemcachedProcess } from './helpers/memcached.js';

describe('memcached store on one server', () => {
  const memcached = useMemcached();

  it('reads only the statistics asked for, of the 90 or so a STAT answers', async () => {
    const [host, port] = (memcached().servers.split(',')[0] as string).split(':') as [string, string];
    const connection = new ServerConnection({
      host,
      port: Number(port),
      label: `${host}:${port}`,
      deadlineMs: 1000,
      coalesceWrites: false,
    });
    const { stats, sentAt, receivedAt } = await serverStats(connection, ['time', 'evictions']);
    expect(Object.keys(stats).sort()).toEqual(['evictions', 'time']);
    expect(Math.abs(Number(stats.time) - Date.now() / 1000)).toBeLessThan(5);
    expect(Number.isSafeInteger(Number(stats.evictions))).toBe(true);
    expect(receivedAt).toBeGreaterThanOrEqual(sentAt);
    // A name the server does not send is simply absent.
    expect((await serverStats(connection, ['no_such_statistic'])).stats).toEqual({});
    connection.close();
  });

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

  it('lengthens each counter an increment creates by a jitter of its own, below expirationJitterS', async () => {
    expect(() => createMemcachedStore({ servers: memcached().servers, expirationJitterS: -1 })).toThrow(RangeError);
    const store = createMemcachedStore({ servers: memcached().servers, expirationJitterS: 3600 });
    const prefix = uniquePrefix();
    const keys = Array.from({ length: 10 }, (_, i) => `${prefix}:{t}:${i}`);
    const began = performance.now();
    await store.incrementAndRead(
      keys.map((key) => ({ key, delta: 1, ttlSeconds: 60 })),
      [],
    );
    const ttls = [...(await itemTtls(memcached().servers, `${prefix}:`)).values()];
    // Seconds that passed before the TTLs were read, on a busy host too.
    const passed = Math.ceil((performance.now() - began) / 1000);
    expect(ttls).toHaveLength(10);
    for (const ttl of ttls) {
      expect(ttl).toBeGreaterThanOrEqual(59 - passed);
      expect(ttl).toBeLessThanOrEqual(60 + 3599);
    }
    // Ten draws all below 60 s: (60/3600)^10, about 2e-18.
    expect(Math.max(...ttls)).toBeGreaterThan(120);
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

  it('tells onOperation of compare-and-swap calls by name', async () => {
    const seen: string[] = [];
    const store = createMemcachedStore({
      servers: memcached().servers,
      onOperation: (operation, _seconds, outcome) => seen.push(`${operation}:${outcome}`),
    });
    const key = `${uniquePrefix()}:{t}:cas`;
    await store.readVersioned(key);
    await store.swap(key, 1, 60, undefined);
    await expect(store.swap(key, 1.5, 60, undefined)).rejects.toThrow(RangeError);
    expect(seen).toEqual(['readVersioned:ok', 'swap:ok']);
    await store.close();
  });

  it("tells onOperation of each check's call: answered, refused past maxInFlight, and past its deadline", async () => {
    const seen: { operation: string; outcome: string; seconds: number }[] = [];
    const onOperation = (operation: string, seconds: number, outcome: string) =>
      seen.push({ operation, outcome, seconds });
    const key = `${uniquePrefix()}:{t}:op`;
    const answering = createMemcachedStore({ servers: memcached().servers, onOperation, maxInFlight: 1 });
    const first = answering.incrementAndRead([{ key, delta: 1, ttlSeconds: 60 }], []);
    // A second call while the first waits on the server is one too many.
    await expect(answering.incrementAndRead([], [key])).rejects.toBeInstanceOf(StoreOverloadedError);
    expect((await first).incremented).toEqual([1]);
    await answering.close();
    // A server that accepts and never answers (nor reads: its sockets are destroyed to close it).
    const accepted = new Set<Socket>();
    const silent = createNetServer((socket) => accepted.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as AddressInfo;
      const deaf = createMemcachedStore({ servers: `127.0.0.1:${port}`, onOperation, timeoutMs: 100, logger: false });
      await expect(deaf.incrementAndRead([{ key, delta: 1, ttlSeconds: 60 }], [])).rejects.toBeInstanceOf(
        StoreUnavailableError,
      );
      await deaf.close();
    } finally {
      for (const socket of accepted) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
    expect(seen.map(({ operation, outcome }) => `${operation}:${outcome}`)).toEqual([
      'incrementAndRead:overloaded',
      'incrementAndRead:ok',
      'incrementAndRead:unavailable',
    ]);
    // Timed from the call: the unanswered one waited out its deadline.
    expect(seen[2]?.seconds).toBeGreaterThanOrEqual(0.09);
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

  it('swaps a key on the server of its hash tag, beside the counters of that tag', async () => {
    const cluster = createMemcachedStore({ servers: `${a.servers},${b.servers}` });
    const onlyA = createMemcachedStore({ servers: a.servers });
    const onlyB = createMemcachedStore({ servers: b.servers });
    const prefix = uniquePrefix();
    for (let i = 0; i < 20; i++) {
      const counter = `${prefix}:{feature-${i}}:1:0`;
      const bucket = `${prefix}:{feature-${i}}:gcra`;
      await cluster.incrementAndRead([{ key: counter, delta: 1, ttlSeconds: 60 }], []);
      expect(await cluster.swap(bucket, i + 1, 60, undefined)).toBe(true);
      const [inA, inB] = await Promise.all([onlyA.readVersioned(bucket), onlyB.readVersioned(bucket)]);
      const counterOnA = (await onlyA.incrementAndRead([], [counter])).read[0] === 1;
      expect(counterOnA ? inA.value : inB.value).toBe(i + 1);
      expect(counterOnA ? inB.value : inA.value).toBeUndefined();
      // The version the cluster reads is the one its server keeps, tagged with that server
      // (each numbers its own: another server's version must never match by chance).
      const { version } = await cluster.readVersioned(bucket);
      expect((version ?? 0n) & (2n ** 64n - 1n)).toBe(counterOnA ? inA.version : inB.version);
      expect((version ?? 0n) >> 64n).toBe(counterOnA ? 1n : 2n);
      // A version of the other server is refused unsent (false: read again), never applied.
      const otherTag = (counterOnA ? 2n : 1n) << 64n;
      expect(await cluster.swap(bucket, 99, 60, ((version ?? 0n) & (2n ** 64n - 1n)) | otherTag)).toBe(false);
      expect(await cluster.swap(bucket, i + 2, 60, version)).toBe(true);
    }
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

  it('gives up compare-and-swap on a hung server at its deadline, then refuses at once while it is down', async () => {
    const store = createMemcachedStore({ servers: server.servers, timeoutMs: 200 });
    const key = `${uniquePrefix()}:{t}:cas`;
    await store.swap(key, 1, 60, undefined);
    const { version } = await store.readVersioned(key);
    await server.pause();
    let started = performance.now();
    const swapped = store.swap(key, 2, 60, version);
    const read = store.readVersioned(key);
    await expect(swapped).rejects.toThrow(StoreUnavailableError);
    await expect(read).rejects.toThrow(StoreUnavailableError);
    expect(performance.now() - started).toBeLessThan(1500);
    started = performance.now();
    await expect(store.readVersioned(key)).rejects.toThrow(/is down/);
    await expect(store.swap(key, 3, 60, version)).rejects.toThrow(/is down/);
    expect(performance.now() - started).toBeLessThan(50);
    server.process.kill('SIGCONT');
    // The late swap may or may not have landed when the server resumed: exactly one of 1 and 2 is there.
    await expect.poll(() => store.readVersioned(key).then((r) => r.value), { timeout: 2000 }).toBeOneOf([1, 2]);
    await store.close();
  });

  it('refuses compare-and-swap calls past maxInFlight at once, as checks are', async () => {
    const store = createMemcachedStore({ servers: server.servers, timeoutMs: 300, maxInFlight: 2 });
    const key = `${uniquePrefix()}:{t}:cas`;
    await store.ping();
    await server.pause();
    const waiting = [store.readVersioned(key), store.swap(key, 1, 60, undefined)];
    const started = performance.now();
    await expect(store.readVersioned(key)).rejects.toThrow(StoreOverloadedError);
    await expect(store.swap(key, 1, 60, undefined)).rejects.toThrow(StoreOverloadedError);
    expect(performance.now() - started).toBeLessThan(50);
    for (const call of waiting) await expect(call).rejects.toThrow(StoreUnavailableError);
    server.process.kill('SIGCONT');
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

  it('rejects compare-and-swap on a stopped server within the deadline', async () => {
    const gone = await startMemcachedProcess();
    const store = createMemcachedStore({ servers: gone.servers, timeoutMs: 1000 });
    const key = `${uniquePrefix()}:{t}:cas`;
    await store.swap(key, 1, 60, undefined);
    const { version } = await store.readVersioned(key);
    await gone.stop();
    const started = performance.now();
    await expect(store.readVersioned(key)).rejects.toThrow(StoreUnavailableError);
    await expect(store.swap(key, 2, 60, version)).rejects.toThrow(StoreUnavailableError);
    await expect(store.swap(key, 2, 60, undefined)).rejects.toThrow(StoreUnavailableError);
    expect(performance.now() - started).toBeLessThan(1000);
    await store.close();
  });
});

describe('memcached store on a server without CAS (-C)', () => {
  let server: MemcachedProcess;
  beforeAll(async () => {
    server = await startMemcachedProcess({ withoutCas: true });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('refuses to read versions, since the server would ignore them and swaps would overwrite others', async () => {
    const store = createMemcachedStore({ servers: server.servers });
    const key = `${uniquePrefix()}:{t}:cas`;
    // ADD needs no CAS: a create stays exact.
    expect(await store.swap(key, 1, 60, undefined)).toBe(true);
    expect(await store.swap(key, 2, 60, undefined)).toBe(false);
    await expect(store.readVersioned(key)).rejects.toThrow(/keeps no CAS uniques/);
    await expect(store.readVersioned(key)).rejects.toThrow(StoreUnavailableError);
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

describe('a library whose Memcached cannot be reached', () => {
  const policies = { events: { login: { limits: [{ limit: 5, window: '1m' }] } } };

  it('warns once per outage through the logger it was given, and health() says which server', async () => {
    const warnings: string[] = [];
    const port = await freePort();
    const store = createMemcachedStore({
      servers: `127.0.0.1:${port}`,
      timeoutMs: 200,
      logger: { warn: (line) => warnings.push(line) },
    });
    const limiter = createLimiter({ policies, store });
    for (let i = 0; i < 20; i++) {
      const decision = await limiter.check({ event: 'login', feature: 'alice' });
      expect([decision.allowed, decision.degraded]).toEqual([true, true]);
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`Memcached 127.0.0.1:${port} cannot be reached`);
    expect(warnings[0]).toContain('onStoreError');
    const [health] = await store.health();
    expect(health).toMatchObject({ server: `127.0.0.1:${port}`, up: false });
    expect(health?.error).toContain(`127.0.0.1:${port}`);

    // It comes back: health says so, and the next outage is told again.
    const server = await startMemcachedProcess({ port });
    await expect.poll(async () => (await store.health())[0]?.up, { timeout: 5000 }).toBe(true);
    expect((await limiter.check({ event: 'login', feature: 'alice' })).degraded).toBeUndefined();
    await server.stop();
    await limiter.check({ event: 'login', feature: 'alice' });
    await expect.poll(() => warnings.length, { timeout: 5000 }).toBe(2);
    await limiter.close();
  });

  it('warns on the console by default, and says nothing with logger: false', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const servers = `127.0.0.1:${await freePort()}`;
      for (const logger of [undefined, false as const]) {
        const limiter = createLimiter({ policies, store: createMemcachedStore({ servers, timeoutMs: 200, logger }) });
        for (let i = 0; i < 5; i++) await limiter.check({ event: 'login', feature: 'bob' });
        await limiter.close();
      }
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]?.[0]).toContain(`Memcached ${servers} cannot be reached`);
    } finally {
      warn.mockRestore();
    }
  });
});

describe('a test memcached started on a port another process took', () => {
  it('is refused, not mistaken for the server that answers there', async () => {
    // A stranger (an HTTP server, say another test's service) listening where memcached was to be.
    const stranger = createServer((_request, response) => response.end('not memcached'));
    await new Promise<void>((resolve) => stranger.listen(0, '127.0.0.1', resolve));
    const { port } = stranger.address() as AddressInfo;
    try {
      await expect(startMemcachedProcess({ port })).rejects.toThrow(/did not start/);
    } finally {
      await new Promise((resolve) => stranger.close(resolve));
    }
  });
});
