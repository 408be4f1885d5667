import memjs from 'memjs';
import { afterAll, describe, expect, it } from 'vitest';
import { watchEvictions } from '../src/store/eviction-watch.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { startMemcachedProcess, type MemcachedProcess } from './helpers/memcached.js';

let small: MemcachedProcess | undefined;
afterAll(async () => {
  await small?.stop();
});

describe('evictions', () => {
  it('are reported per server when Memcached runs out of memory', async () => {
    small = await startMemcachedProcess({ memoryMb: 2 });
    // A loaded machine can starve memcached for longer than the service's 250 ms deadline;
    // a stats read that came back late would report the server down, with no evictions.
    const store = createMemcachedStore({ servers: small.servers, timeoutMs: 30_000 });
    const heard: { server: string; evicted: number; total: number }[] = [];
    const watch = watchEvictions(store, (server, evicted, total) => heard.push({ server, evicted, total }));
    await watch.check();
    expect(await store.health()).toEqual([{ server: small.servers, up: true, evictions: 0, state: 'up' }]);

    // Fill a 2 MB server with 8 MB of items. Every set is answered before the counts are
    // read, and memcached evicts only while storing an item (its background threads move
    // items between LRUs but never evict), so the count read next is final. memjs would
    // drop the connection and resend after 0.5 s without an answer: wait instead.
    const client = memjs.Client.create(small.servers, { timeout: 30, logger: { log: () => undefined } });
    const value = 'v'.repeat(1000);
    for (let batch = 0; batch < 80; batch++) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => client.set(`fill-${batch}-${i}`, value, { expires: 600 })),
      );
    }
    client.close();

    await watch.check();
    expect(heard).toHaveLength(1);
    expect(heard[0]?.server).toBe(small.servers);
    expect(heard[0]?.evicted).toBeGreaterThan(1000);
    expect((await store.health())[0]?.evictions).toBe(heard[0]?.total);
    // Nothing new, nothing told.
    await watch.check();
    expect(heard).toHaveLength(1);
    watch.stop();
    await store.close();
  });
});
