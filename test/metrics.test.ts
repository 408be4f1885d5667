// GET /metrics on a running app over a real memcached: what Prometheus scrapes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createMetrics } from '../src/http/metrics.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached();
let scrape: () => Promise<string>;
let check: (feature: string) => Promise<number>;
let close: () => Promise<void>;

beforeAll(() => {
  const metrics = createMetrics();
  const store = createMemcachedStore({ servers: memcached().servers, onOperation: metrics.onOperation });
  const policies = { events: { login: { limits: [{ limit: 2, window: '1m' }] } } };
  // The four checks happen in one second by the limiter's clock: what it remembers of the room
  // left holds for the second it was seen in, and a loaded run once crossed into the next.
  const second = Math.floor(Date.now() / 1000) * 1000 + 500;
  const limiter = createLimiter({
    policies,
    store,
    keyPrefix: uniquePrefix(),
    onDecision: metrics.onDecision,
    now: () => second,
  });
  metrics.watchCache(() => limiter.cacheUsage);
  const app = buildApp({ validateResponses: true, limiter, store, metrics });
  scrape = async () => (await app.inject({ method: 'GET', url: '/metrics' })).body;
  check = async (feature) =>
    (await app.inject({ method: 'GET', url: `/check?event=login&feature=${feature}` })).statusCode;
  close = async () => {
    await app.close();
    await store.close();
  };
});
afterAll(async () => {
  await close();
});

/** The value of one sample line, e.g. `memgate_decisions_total{event="login",…}`. */
function sample(text: string, name: string, labels: string): number {
  const line = text
    .split('\n')
    .find(
      (l) =>
        (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && labels.split(',').every((label) => l.includes(label)),
    );
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('/metrics', () => {
  it('counts decisions by outcome, repeated denials as local cache hits, and Memcached calls with their latency', async () => {
    expect([await check('eve'), await check('eve'), await check('eve'), await check('eve')]).toEqual([
      200, 200, 429, 429,
    ]);
    const text = await scrape();
    expect(sample(text, 'memgate_decisions_total', 'event="login",kind="check",outcome="allowed"')).toBe(2);
    expect(sample(text, 'memgate_decisions_total', 'outcome="denied"')).toBe(2);
    // The fourth check repeated the third's denial from memory.
    expect(sample(text, 'memgate_local_cache_total', 'cache="denial",result="hit"')).toBe(1);
    expect(sample(text, 'memgate_local_cache_total', 'cache="settled",result="miss"')).toBeGreaterThanOrEqual(1);
    // Three checks reached Memcached, and the exact-retry read of the denial. The second check left
    // no room, so the third read before counting: there was nothing to take back.
    expect(
      sample(text, 'memgate_store_operations_total', 'operation="incrementAndRead",outcome="ok"'),
    ).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'memgate_store_operations_total', 'operation="decrement",outcome="ok"')).toBe(0);
    expect(
      sample(text, 'memgate_store_operation_seconds_count', 'operation="incrementAndRead"'),
    ).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'memgate_keys_read_per_check_count', '')).toBe(3);
    expect(text).toContain('process_cpu_user_seconds_total');
    // One client kept in memory, at its plan's worst-case size.
    expect(sample(text, 'memgate_local_cache_features', '')).toBe(1);
    expect(sample(text, 'memgate_local_cache_bytes', '')).toBeGreaterThan(1000);
  });
});
