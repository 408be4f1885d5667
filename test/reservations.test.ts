// Reservations counted in a real Memcached by two memgate instances: a cost reserved before a
// response, settled after it with the actual cost, once, within the reservation's life.
import { afterAll, describe, expect, it } from 'vitest';
import { parsePolicies } from '../src/config/policies.js';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached();
const stores: CounterStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

const policies = {
  events: {
    tokens: {
      reservations: { life: '5m' },
      limits: [{ name: 'daily', limit: 10_000, window: '1d', granularity: '1m' }],
    },
    plain: { limits: [{ limit: 10, window: '1m' }] },
  },
};

function twoInstances(clock: { ms: number }): [Limiter, Limiter] {
  const keyPrefix = uniquePrefix();
  const make = () => {
    const store = createMemcachedStore({ servers: memcached().servers });
    stores.push(store);
    return createLimiter({ policies: parsePolicies(policies), store, keyPrefix, now: () => clock.ms });
  };
  return [make(), make()];
}

const remaining = async (limiter: Limiter, feature: string) =>
  (await limiter.peek({ event: 'tokens', feature })).limits[0]?.remaining;

describe('reservations on two instances', () => {
  it('a reservation of 1,000 settled at 1,700 leaves the day 700 higher, and the next check sees it', async () => {
    // 90 s before the hour: the settle comes after it, once the reservation's hour bucket has ended.
    const clock = { ms: Date.parse('2026-11-26T10:58:30.000Z') };
    const [a, b] = twoInstances(clock);
    expect((await a.check({ event: 'tokens', feature: 'tenant', cost: 2000 })).allowed).toBe(true);
    const reserved = await a.check({ event: 'tokens', feature: 'tenant', reserve: 1000 });
    expect(reserved).toMatchObject({
      allowed: true,
      limits: [{ remaining: 7000 }],
      reservation: { units: 1000, seconds: 300 },
    });
    expect(reserved.reservation?.expiresAt).toBe(clock.ms + 300_000);
    // B checks often meanwhile, keeping what it read in memory.
    expect(await remaining(b, 'tenant')).toBe(7000);
    clock.ms += 95_000;
    expect(await remaining(b, 'tenant')).toBe(7000);
    // A settles: B learns of it only from Memcached.
    const settled = await a.settle({
      event: 'tokens',
      feature: 'tenant',
      id: reserved.reservation?.id ?? '',
      cost: 1700,
    });
    expect(settled).toEqual({ reserved: 1000, cost: 1700, counted: 700 });
    // Both instances see the day 700 higher at once: 2,000 + 1,700 counted.
    expect(await remaining(a, 'tenant')).toBe(6300);
    expect(await remaining(b, 'tenant')).toBe(6300);
    // Settled once.
    await expect(
      a.settle({ event: 'tokens', feature: 'tenant', id: reserved.reservation?.id ?? '', cost: 1 }),
    ).rejects.toMatchObject({
      code: 'reservation_settled',
    });
  });

  it('refunds what a smaller cost leaves, and a larger one can put the client over', async () => {
    const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
    const [a, b] = twoInstances(clock);
    const big = await a.check({ event: 'tokens', feature: 't2', reserve: 9000 });
    expect((await b.check({ event: 'tokens', feature: 't2', reserve: 2000 })).allowed).toBe(false);
    clock.ms += 30_000;
    expect(await b.settle({ event: 'tokens', feature: 't2', id: big.reservation?.id ?? '', cost: 500 })).toMatchObject({
      counted: -8500,
    });
    const second = await b.check({ event: 'tokens', feature: 't2', reserve: 2000 });
    expect(second).toMatchObject({ allowed: true, limits: [{ remaining: 7500 }] });
    // Far more than reserved: over the limit; the next check is refused.
    await a.settle({ event: 'tokens', feature: 't2', id: second.reservation?.id ?? '', cost: 12_000 });
    expect((await b.check({ event: 'tokens', feature: 't2' })).allowed).toBe(false);
    expect(await remaining(a, 't2')).toBe(0);
  });

  it('keeps an unsettled reservation counted, and refuses a late or unknown settle, counting nothing', async () => {
    const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
    const [a, b] = twoInstances(clock);
    const reserved = await a.check({ event: 'tokens', feature: 't3', reserve: 400 });
    const id = reserved.reservation?.id ?? '';
    await expect(b.settle({ event: 'tokens', feature: 'someone-else', id, cost: 1 })).rejects.toMatchObject({
      code: 'unknown_reservation',
    });
    await expect(b.settle({ event: 'tokens', feature: 't3', id: 'not-an-id', cost: 1 })).rejects.toMatchObject({
      code: 'unknown_reservation',
    });
    await expect(b.settle({ event: 'tokens', feature: 't3', id, cost: -1 })).rejects.toMatchObject({
      code: 'invalid_cost',
    });
    await expect(b.settle({ event: 'plain', feature: 't3', id, cost: 1 })).rejects.toMatchObject({
      code: 'reserve_off',
    });
    await expect(a.check({ event: 'plain', feature: 't3', reserve: 1 })).rejects.toMatchObject({ code: 'reserve_off' });
    await expect(a.check({ event: 'tokens', feature: 't3', reserve: 1, cost: 1 })).rejects.toMatchObject({
      code: 'invalid_cost',
    });
    await expect(a.check({ event: 'tokens', feature: 't3', reserve: 20_000 })).rejects.toMatchObject({
      code: 'cost_exceeds_limit',
    });
    clock.ms += 303_000;
    await expect(b.settle({ event: 'tokens', feature: 't3', id, cost: 1 })).rejects.toMatchObject({
      code: 'reservation_expired',
    });
    expect(await remaining(b, 't3')).toBe(9600);
  });
});

describe('reservations over HTTP, with memgate/client', () => {
  it('reserves with /check, settles with /settle, and says so in the counts', async () => {
    const { buildApp } = await import('../src/http/app.js');
    const { createClient } = await import('../src/client/index.js');
    const clock = { ms: Date.parse('2026-11-26T10:00:00.000Z') };
    const [limiter] = twoInstances(clock);
    const app = buildApp({
      validateResponses: true,
      limiter,
      store: stores[stores.length - 2] as CounterStore,
      maxEventLoopDelayMs: 0,
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    // The service answers every call, however loaded the machine (the client's own 500 ms would answer for it).
    const client = createClient({ url, timeoutMs: 60_000 });
    try {
      const reserved = await client.reserve('tokens', 'tenant-h', 4096);
      expect(reserved).toMatchObject({ allowed: true, source: 'server', reservation: { units: 4096, seconds: 300 } });
      const id = reserved.reservation?.id ?? '';
      expect(await client.settle('tokens', 'tenant-h', id, 512)).toEqual({ reserved: 4096, cost: 512, counted: -3584 });
      expect((await client.check('tokens', 'tenant-h')).limits[0]?.remaining).toBe(10_000 - 512 - 1);
      await expect(client.settle('tokens', 'tenant-h', id, 512)).rejects.toMatchObject({
        code: 'reservation_settled',
        status: 409,
      });
      await expect(client.reserve('plain', 'tenant-h', 2)).rejects.toMatchObject({ code: 'reserve_off' });
      // GET /check takes reserve too; a peek does not.
      const viaQuery = await app.inject({ method: 'GET', url: '/check?event=tokens&feature=q&reserve=7' });
      expect(viaQuery.json()).toMatchObject({ allowed: true, reservation: { units: 7 } });
      const peeked = await app.inject({ method: 'GET', url: '/peek?event=tokens&feature=q&reserve=7' });
      expect(peeked.statusCode).toBe(400);
      expect(peeked.json()).toMatchObject({ error: { code: 'invalid_request' } });
    } finally {
      await client.close();
      await app.close();
    }
  });
});
