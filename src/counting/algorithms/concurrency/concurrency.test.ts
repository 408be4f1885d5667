import { describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../../../store/embedded-store.js';
import { createLimiter } from '../../limiter.js';
import { parseSlotId, slotId } from './slots.js';

const T0 = Date.UTC(2026, 10, 28, 12, 0, 0);

function setup(limits: object = { limit: 2, timeout: '30s' }, extra: object = {}) {
  const clock = { ms: T0 };
  const now = () => clock.ms;
  const limiter = createLimiter({
    policies: { events: { export: { algorithm: 'concurrency', limits: [limits], ...extra } } },
    store: createEmbeddedStore({ now }),
    now,
  });
  return { limiter, clock };
}

describe('a concurrency limit', () => {
  it('holds a slot per request in flight, refuses past the limit, and frees a slot on release', async () => {
    const { limiter } = setup();
    const first = await limiter.check({ event: 'export', feature: 'acme' });
    const second = await limiter.check({ event: 'export', feature: 'acme' });
    expect(first).toMatchObject({
      allowed: true,
      limits: [{ name: 'export-inflight', limit: 2, window: 30, remaining: 1 }],
    });
    expect(second).toMatchObject({ allowed: true, limits: [{ remaining: 0 }] });
    expect(first.slot?.expiresAt).toBe(T0 + 30_000);
    const third = await limiter.check({ event: 'export', feature: 'acme' });
    expect(third).toMatchObject({ allowed: false, retryAfter: 1, limits: [{ remaining: 0 }] });
    expect(third.slot).toBeUndefined();
    // Another client has slots of its own.
    expect((await limiter.check({ event: 'export', feature: 'other' })).allowed).toBe(true);
    expect(await limiter.release({ event: 'export', feature: 'acme', id: first.slot?.id ?? '' })).toEqual({
      released: true,
    });
    expect(await limiter.release({ event: 'export', feature: 'acme', id: first.slot?.id ?? '' })).toEqual({
      released: false,
    });
    expect((await limiter.check({ event: 'export', feature: 'acme' })).allowed).toBe(true);
  });

  it('frees a slot never released once its timeout passes', async () => {
    const { limiter, clock } = setup({ limit: 1, timeout: '10s' });
    const held = await limiter.check({ event: 'export', feature: 'acme' });
    expect(held.allowed).toBe(true);
    clock.ms += 9_000;
    expect((await limiter.check({ event: 'export', feature: 'acme' })).allowed).toBe(false);
    clock.ms += 2_000;
    expect((await limiter.check({ event: 'export', feature: 'acme' })).allowed).toBe(true);
    // The old id names a slot another request holds now: it is not released.
    expect(await limiter.release({ event: 'export', feature: 'acme', id: held.slot?.id ?? '' })).toEqual({
      released: false,
    });
    expect((await limiter.check({ event: 'export', feature: 'acme' })).allowed).toBe(false);
  });

  it('peeks at what is free without taking a slot, and takes as many as a request costs', async () => {
    const { limiter } = setup({ limit: 3 });
    expect(await limiter.peek({ event: 'export', feature: 'acme', cost: 3 })).toMatchObject({
      allowed: true,
      limits: [{ remaining: 3 }],
    });
    const two = await limiter.check({ event: 'export', feature: 'acme', cost: 2 });
    expect(parseSlotId(two.slot?.id)?.indices).toHaveLength(2);
    expect((await limiter.check({ event: 'export', feature: 'acme', cost: 2 })).allowed).toBe(false);
    expect((await limiter.check({ event: 'export', feature: 'acme' })).allowed).toBe(true);
  });

  it('gives back the slots of a request another check refuses, decided together', async () => {
    const { limiter } = setup();
    const refused = await limiter.checkTogether([
      { event: 'export', feature: 'acme' },
      { event: 'export', feature: 'acme', cost: 5 },
    ]);
    expect(refused.allowed).toBe(false);
    expect(await limiter.peek({ event: 'export', feature: 'acme' })).toMatchObject({ limits: [{ remaining: 2 }] });
  });

  it('refuses what it cannot hold or release, with the codes of the one table', async () => {
    const { limiter } = setup();
    await expect(limiter.release({ event: 'export', feature: 'acme', id: 'nope' })).rejects.toMatchObject({
      code: 'unknown_slot',
    });
    await expect(limiter.lease({ event: 'export', feature: 'acme', units: 1 })).rejects.toMatchObject({
      code: 'lease_off',
    });
    const windows = createLimiter({
      policies: { events: { api: { limits: [{ limit: 1, window: '1m' }] } } },
      store: createEmbeddedStore(),
    });
    await expect(windows.release({ event: 'api', feature: 'a', id: slotId([0], 5) })).rejects.toMatchObject({
      code: 'release_off',
    });
  });

  it('is refused in a policy file where it cannot hold: two limits, a window, a lease', () => {
    const refuse = (event: object) => () =>
      createLimiter({
        policies: { events: { e: { algorithm: 'concurrency', ...event } } },
        store: createEmbeddedStore(),
      });
    expect(refuse({ limits: [{ limit: 2 }, { limit: 3 }] })).toThrow(/one limit per set/);
    expect(refuse({ limits: [{ limit: 2, window: '1m' }] })).toThrow(/takes limit and timeout/);
    expect(refuse({ limits: [{ limit: 2 }], lease: { maxUnits: 1 } })).toThrow(
      /holds each request until it is released/,
    );
    expect(refuse({ limits: [{ limit: 2, timeout: '2d' }] })).toThrow(/longer than/);
    expect(refuse({ limits: [{ limit: 2 }] })).not.toThrow();
  });
});

describe('slot ids', () => {
  it('name the slots and the token, and nothing else reads as one', () => {
    expect(parseSlotId(slotId([3, 17], 2 ** 47))).toEqual({ indices: [3, 17], token: 2 ** 47 });
    for (const id of ['', '3', '3.', '.abc', '3.ABC', '3.0', 'x.1', `1.${(2 ** 48).toString(36)}`, 42])
      expect(parseSlotId(id)).toBeUndefined();
  });
});
