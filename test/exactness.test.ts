// Exact in both directions, against a real Memcached: two limiter instances (each its own
// connection) receive a burst of requests at once. Never more than the limit is admitted, and
// no request is refused while the room left, counting only admitted requests, would have held
// it: whatever is refused costs more than what the burst leaves. fast-check draws the limits,
// what was used before, the costs and which instance each request reaches.
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../src/client/index.js';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import type { Decision } from '../src/counting/decision.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached();
const LIMITS = { api: 30, user: 5, tenant: 1, leased: 30 } as const;
const policies = {
  events: {
    api: { limits: [{ limit: LIMITS.api, window: '1m' }] },
    user: { limits: [{ limit: LIMITS.user, window: '1h' }] },
    tenant: { limits: [{ limit: LIMITS.tenant, window: '1h' }] },
    leased: { limits: [{ limit: LIMITS.leased, window: '1m' }], lease: { maxUnits: 10, life: '5s' } },
  },
};

let stores: CounterStore[] = [];
let instances: [Limiter, Limiter];
let keyPrefix: string;
beforeAll(() => {
  keyPrefix = uniquePrefix();
  stores = [0, 1].map(() => createMemcachedStore({ servers: memcached().servers, timeoutMs: 5000 }));
  instances = [
    createLimiter({ policies, store: stores[0] as CounterStore, keyPrefix }),
    createLimiter({ policies, store: stores[1] as CounterStore, keyPrefix }),
  ];
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

/** What is left of a feature's limit now, read by an instance with no memory of it. */
async function roomLeft(event: keyof typeof LIMITS, feature: string): Promise<number> {
  const fresh = createLimiter({ policies, store: stores[0] as CounterStore, keyPrefix });
  return (await fresh.peek({ event, feature })).limits[0]?.remaining ?? -1;
}

const RUNS = 20;

describe('two instances racing for the last room of a limit', () => {
  it('admit exactly what fits: whatever is refused costs more than the room the burst leaves (fast-check)', async () => {
    const request = fc.record({ instance: fc.integer({ min: 0, max: 1 }), cost: fc.integer({ min: 1, max: 12 }) });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: LIMITS.api - 1 }),
        fc.array(request, { minLength: 2, maxLength: 120, size: 'large' }),
        async (used, burst) => {
          const feature = `f${uniquePrefix()}`;
          if (used > 0) await instances[0].check({ event: 'api', feature, cost: used });
          const answers = await Promise.all(
            burst.map(({ instance, cost }) => instances[instance as 0 | 1].check({ event: 'api', feature, cost })),
          );
          const admitted = burst.reduce((sum, { cost }, i) => sum + (answers[i]?.allowed ? cost : 0), 0);
          expect(used + admitted).toBeLessThanOrEqual(LIMITS.api);
          const room = await roomLeft('api', feature);
          expect(room).toBe(LIMITS.api - used - admitted);
          burst.forEach(({ cost }, i) => {
            const answer = answers[i] as Decision;
            if (answer.allowed) return;
            // Refused only when it did not fit even in what the burst left.
            expect(cost).toBeGreaterThan(room);
            expect(answer.retryAfter).toBeGreaterThanOrEqual(1);
          });
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('grant exactly the limit to leases and checks mixed, leases taking what remains (fast-check)', async () => {
    const ask = fc.record({
      instance: fc.integer({ min: 0, max: 1 }),
      lease: fc.integer({ min: 0, max: 10 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(ask, { minLength: 5, maxLength: 60, size: 'large' }), async (asks) => {
        const feature = `l${uniquePrefix()}`;
        const granted = await Promise.all(
          asks.map(async ({ instance, lease }) => {
            const limiter = instances[instance as 0 | 1];
            if (lease === 0) return (await limiter.check({ event: 'leased', feature })).allowed ? 1 : 0;
            return (await limiter.lease({ event: 'leased', feature, units: lease })).lease?.units ?? 0;
          }),
        );
        const total = granted.reduce((sum, units) => sum + units, 0);
        const demand = asks.reduce((sum, { lease }) => sum + (lease === 0 ? 1 : lease), 0);
        expect(total).toBe(Math.min(LIMITS.leased, demand));
        expect(await roomLeft('leased', feature)).toBe(LIMITS.leased - total);
      }),
      { numRuns: RUNS },
    );
  });

  it('admit exactly the user’s limit of [user] requests beside [user, exhausted tenant] ones (fast-check)', async () => {
    const call = fc.record({ instance: fc.integer({ min: 0, max: 1 }), withTenant: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 2, maxLength: 80, size: 'large' }), async (calls) => {
        const user = `u${uniquePrefix()}`;
        const tenant = `t${uniquePrefix()}`;
        await instances[1].check({ event: 'tenant', feature: tenant });
        const answers = await Promise.all(
          calls.map(({ instance, withTenant }) =>
            instances[instance as 0 | 1].checkTogether(
              withTenant
                ? [
                    { event: 'user', feature: user },
                    { event: 'tenant', feature: tenant },
                  ]
                : [{ event: 'user', feature: user }],
            ),
          ),
        );
        const alone = calls.filter((c, i) => !c.withTenant && answers[i]?.allowed).length;
        const withTenant = calls.filter((c, i) => c.withTenant && answers[i]?.allowed).length;
        expect(withTenant).toBe(0);
        expect(alone).toBe(Math.min(LIMITS.user, calls.filter((c) => !c.withTenant).length));
        expect(await roomLeft('user', user)).toBe(LIMITS.user - alone);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('memgate/client callers before two instances racing for the last room', () => {
  let apps: FastifyInstance[] = [];
  let urls: string[] = [];
  beforeAll(async () => {
    apps = stores.map((store, i) => buildApp({ validateResponses: true, limiter: instances[i as 0 | 1], store }));
    urls = await Promise.all(apps.map((app) => app.listen({ port: 0, host: '127.0.0.1' })));
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
  });

  it('hold no local denial that memgate would not confirm (fast-check)', async () => {
    const request = fc.record({ client: fc.integer({ min: 0, max: 1 }), cost: fc.integer({ min: 1, max: 8 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 2, maxLength: 60, size: 'large' }), async (burst) => {
        const clients = urls.map((url) => createClient({ url }));
        try {
          const feature = `c${uniquePrefix()}`;
          await instances[0].check({ event: 'api', feature, cost: 25 });
          const answers = await Promise.all(
            burst.map(({ client, cost }) => (clients[client] as (typeof clients)[0]).check('api', feature, { cost })),
          );
          const room = await roomLeft('api', feature);
          burst.forEach(({ cost }, i) => {
            if (!answers[i]?.allowed) expect(cost).toBeGreaterThan(room);
          });
          // What each caller was refused it is refused again, from its own memory or memgate's,
          // and the room is still there: a local denial only repeats one memgate confirmed.
          for (const [c, client] of clients.entries()) {
            const refused = new Set(burst.filter((r, i) => r.client === c && !answers[i]?.allowed).map((r) => r.cost));
            for (const cost of refused) expect((await client.check('api', feature, { cost })).allowed).toBe(false);
          }
          expect(await roomLeft('api', feature)).toBe(room);
        } finally {
          await Promise.all(clients.map((client) => client.close()));
        }
      }),
      { numRuns: RUNS },
    );
  });
});
