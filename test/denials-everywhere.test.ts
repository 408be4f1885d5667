// Denials cost the same on every surface: a client over its limit asking by lease, batch item,
// check-together or gRPC is answered from memory like /check, with no store write and no item
// left behind in Memcached.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { oneDescriptor } from '../scripts/lib/rls-client.js';
import { useEnvoyServices } from './helpers/envoy-service.js';
import { counterItems, uniquePrefix, useMemcached } from './helpers/memcached.js';
import { awayFromWindowEnd } from './helpers/window.js';

const memcached = useMemcached({ own: true });
let app: FastifyInstance;
let store: CounterStore;
let limiter: Limiter;
// Driven, so that the test can pass the time a denial is held in memory (a second at most).
const clock = { ms: 1_900_000_000_000 };

beforeAll(async () => {
  store = createMemcachedStore({ servers: memcached().servers });
  limiter = createLimiter({
    policies: {
      events: {
        api: { limits: [{ limit: 10, window: '1h' }], lease: { maxUnits: 5, life: '5s' } },
        tenant: { limits: [{ limit: 1000, window: '1h' }] },
      },
    },
    store,
    keyPrefix: uniquePrefix(),
    now: () => clock.ms,
  });
  app = buildApp({ validateResponses: true, limiter, store, maxEventLoopDelayMs: 0 });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await store.close();
});

const post = (url: string, body: unknown) =>
  app.inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

/** What the store holds, counter by counter (the clocks' own items aside): any write changes it. */
function storeTouches() {
  return counterItems(memcached().servers);
}

describe('a client over its limit, 200 times more over 10 s', () => {
  it.each([
    ['/lease', (feature: string) => post('/lease', { event: 'api', feature, units: 3 })],
    ['/lease/batch', (feature: string) => post('/lease/batch', { take: [{ event: 'api', feature, units: 3 }] })],
    ['/check/batch', (feature: string) => post('/check/batch', [{ event: 'api', feature }])],
    ['/check', (feature: string) => post('/check', { event: 'api', feature })],
    [
      'checks together',
      (feature: string) =>
        limiter.checkTogether([
          { event: 'api', feature },
          { event: 'tenant', feature: 'acme' },
        ]),
    ],
  ])('%s: denied from memory, no store write, no item left', async (_surface, ask) => {
    const feature = `over-${uniquePrefix()}`;
    for (let i = 0; i < 10; i++) await limiter.check({ event: 'api', feature });
    await ask(feature);
    const before = await storeTouches();
    expect(before.size).toBeGreaterThan(0); // the admitted requests' counters are there to be seen
    // Ten seconds of a flood: memory releases a denial after a second, and the next one asks again.
    for (let second = 0; second < 10; second++) {
      for (let i = 0; i < 20; i++) await ask(feature);
      clock.ms += 1000;
    }
    expect(await storeTouches()).toEqual(before);
    expect((await limiter.peek({ event: 'api', feature })).limits[0]?.remaining).toBe(0);
  });
});

describe('a gRPC caller over its limit', () => {
  const start = useEnvoyServices(
    memcached,
    'domain: edge\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 2 }\n  - key: tenant\n    rate_limit: { unit: hour, requests_per_unit: 1000 }\n',
  );

  it('is answered OVER_LIMIT from memory, alone or beside another descriptor: no store write, no item left', async () => {
    const { client } = await start();
    // The service reads the real clock, and an hour unit is a fixed window: every call below must
    // fall in one hour, or the user's two would be admitted again past its edge.
    await awayFromWindowEnd(3600);
    const user = `over-${uniquePrefix()}`;
    const alone = oneDescriptor('edge', ['user', user]);
    const beside = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'user', value: user }] }, { entries: [{ key: 'tenant', value: 'acme' }] }],
    };
    for (let i = 0; i < 3; i++) await client.shouldRateLimit(alone);
    const before = await storeTouches();
    expect(before.size).toBeGreaterThan(0); // the admitted requests' counters are there to be seen
    for (let i = 0; i < 100; i++) {
      expect((await client.shouldRateLimit(alone)).overall_code).toBe('OVER_LIMIT');
      expect((await client.shouldRateLimit(beside)).overall_code).toBe('OVER_LIMIT');
    }
    expect(await storeTouches()).toEqual(before);
  });
});
