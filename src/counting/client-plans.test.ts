// Per-client limits on the embedded store with a driven clock: overrides (exact, prefix, CIDR,
// lapsing), tiers named by the caller or by an override, allow and deny lists, and a change of
// policies applied mid-window on counts already counted.
import { describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../store/embedded-store.js';
import type { CounterStore } from '../store/counter-store.js';
import type { ObservedDecision } from './report.js';
import { LimiterInputError } from './errors.js';
import { createLimiter, type Limiter } from './limiter.js';

const T0 = Date.UTC(2026, 10, 26, 12, 0, 0);

function setup(events: object, store?: CounterStore) {
  const clock = { ms: T0 + 10_000 };
  const now = () => clock.ms;
  const shared = store ?? createEmbeddedStore({ now });
  const observed: ObservedDecision[] = [];
  const limiter = createLimiter({ policies: { events }, store: shared, now, onDecision: (o) => observed.push(o) });
  return { clock, store: shared, limiter, observed };
}

/** How many of `tries` checks of `feature` are allowed, one after the other. */
async function admitted(
  limiter: Limiter,
  feature: string,
  tries: number,
  extra: { tier?: string; event?: string } = {},
): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < tries; i++)
    if ((await limiter.check({ event: extra.event ?? 'api', feature, tier: extra.tier })).allowed) allowed++;
  return allowed;
}

const API = {
  limits: [{ limit: 3, window: '1m' }],
  tiers: { pro: { limits: [{ limit: 10, window: '1m' }] }, free: { limits: [{ limit: 2, window: '1m' }] } },
  overrides: [
    { match: { feature: 'acme' }, limits: [{ limit: 5, window: '1m' }] },
    { match: { prefix: 'tenant-' }, tier: 'pro' },
    { match: { prefix: 'tenant-7' }, limits: [{ limit: 1, window: '1m' }] },
    { match: { cidr: '10.0.0.0/8' }, limits: [{ limit: 6, window: '1m' }] },
    { match: { cidr: '10.1.0.0/16' }, limits: [{ limit: 4, window: '1m' }] },
  ],
};

describe('overrides', () => {
  it('give the most specific match its limits: exact, narrowest network, longest prefix', async () => {
    const { limiter } = setup({ api: API });
    expect(await admitted(limiter, 'someone', 12)).toBe(3);
    expect(await admitted(limiter, 'acme', 12)).toBe(5);
    expect(await admitted(limiter, 'tenant-1', 12)).toBe(10);
    expect(await admitted(limiter, 'tenant-77', 12)).toBe(1);
    expect(await admitted(limiter, '10.9.9.9', 12)).toBe(6);
    expect(await admitted(limiter, '10.1.2.3', 12)).toBe(4);
    expect(await admitted(limiter, '::ffff:10.1.2.4', 12)).toBe(4);
  });

  it('name their limits in the decision, as the RateLimit headers will', async () => {
    const { limiter } = setup({ api: API });
    const decision = await limiter.check({ event: 'api', feature: 'acme' });
    expect(decision.limits).toEqual([expect.objectContaining({ name: 'api-1m', limit: 5, remaining: 4 })]);
  });

  it('apply mid-window to what a client counted under the limits before them', async () => {
    const store = createEmbeddedStore({ now: () => T0 + 10_000 });
    const before = setup({ api: { limits: [{ limit: 3, window: '1m' }] } }, store);
    expect(await admitted(before.limiter, 'acme', 5)).toBe(3);
    const after = setup({ api: API }, store);
    // 3 counted already under the new 5: exactly 2 more.
    expect(await admitted(after.limiter, 'acme', 5)).toBe(2);
    // And back: 5 counted against 3, none.
    const again = setup({ api: { limits: [{ limit: 3, window: '1m' }] } }, store);
    expect(await admitted(again.limiter, 'acme', 2)).toBe(0);
  });

  it('count in every bucket size any plan of the event reads, so a client moved to a longer window keeps its counts', async () => {
    const events = (overrides: object[]) => ({
      api: { limits: [{ limit: 100, window: '1m' }], overrides },
    });
    const store = createEmbeddedStore({ now: () => T0 + 10_000 });
    // The hour override exists (for someone else) while acme counts under the event's minute.
    const first = setup(events([{ match: { feature: 'other' }, limits: [{ limit: 50, window: '1h' }] }]), store);
    expect(await admitted(first.limiter, 'acme', 8)).toBe(8);
    const moved = setup(events([{ match: { feature: 'acme' }, limits: [{ limit: 10, window: '1h' }] }]), store);
    expect(await admitted(moved.limiter, 'acme', 5)).toBe(2);
  });

  it('lapse at their until, giving way to the next most specific rule, counting what was counted', async () => {
    const until = new Date(T0 + 20_000).toISOString();
    const { limiter, clock } = setup({
      api: {
        limits: [{ limit: 3, window: '1m' }],
        overrides: [
          { match: { feature: 'acme' }, limits: [{ limit: 8, window: '1m' }], until },
          { match: { prefix: 'ac' }, limits: [{ limit: 6, window: '1m' }] },
        ],
      },
    });
    expect(await admitted(limiter, 'acme', 5)).toBe(5);
    clock.ms = T0 + 20_000;
    // The boost is over: the prefix's 6, with 5 counted.
    expect(await admitted(limiter, 'acme', 5)).toBe(1);
  });
});

describe('tiers', () => {
  it('apply the tier the caller names; an override naming the client wins over it', async () => {
    const { limiter } = setup({ api: API });
    expect(await admitted(limiter, 'u1', 12, { tier: 'pro' })).toBe(10);
    expect(await admitted(limiter, 'u2', 12, { tier: 'free' })).toBe(2);
    expect(await admitted(limiter, 'acme', 12, { tier: 'pro' })).toBe(5);
  });

  it('refuse an unknown tier, or a tier for an event without tiers, counting nothing', async () => {
    const { limiter, observed } = setup({ api: API, login: { limits: [{ limit: 3, window: '1m' }] } });
    const refusal = (request: Parameters<Limiter['check']>[0]) =>
      limiter.check(request).then(
        () => undefined,
        (error: unknown) => error,
      );
    const unknown = await refusal({ event: 'api', feature: 'u', tier: 'gold' });
    expect(unknown).toBeInstanceOf(LimiterInputError);
    expect(unknown).toMatchObject({ code: 'unknown_tier' });
    expect((unknown as Error).message).toContain('its tiers are pro, free');
    const noTiers = await refusal({ event: 'login', feature: 'u', tier: 'pro' });
    expect(noTiers).toMatchObject({ code: 'unknown_tier' });
    expect((noTiers as Error).message).toContain('has no tiers');
    expect(await refusal({ event: 'api', feature: 'u', tier: '' })).toMatchObject({ code: 'invalid_tier' });
    expect(await refusal({ event: 'api', feature: 'u', tier: 7 as unknown as string })).toMatchObject({
      code: 'invalid_tier',
    });
    // An unknown tier is refused even for a listed client: bad input is bad input.
    expect(observed).toEqual([]);
    expect((await limiter.peek({ event: 'api', feature: 'u' })).limits[0]?.remaining).toBe(3);
  });
});

describe('allow and deny lists', () => {
  const LISTED = {
    api: {
      limits: [{ limit: 2, window: '1m' }],
      overrides: [{ match: { feature: '10.1.2.3' }, limits: [{ limit: 50, window: '1m' }] }],
      allow: [{ cidr: '10.1.2.0/24' }, { feature: 'monitor' }],
      deny: [{ cidr: '10.0.0.0/8' }, { prefix: 'bot-' }],
    },
  };

  it('allow without counting and refuse for good, the most specific entry of either list winning', async () => {
    const { limiter, observed } = setup(LISTED);
    const allowed = await limiter.check({ event: 'api', feature: '10.1.2.9' });
    expect(allowed).toEqual({ allowed: true, limits: [], listed: 'allow', policyVersion: limiter.version });
    expect(await admitted(limiter, 'monitor', 20)).toBe(20);
    const denied = await limiter.check({ event: 'api', feature: '10.200.0.1' });
    expect(denied).toEqual({ allowed: false, limits: [], listed: 'deny', policyVersion: limiter.version });
    expect(await admitted(limiter, 'bot-1', 3)).toBe(0);
    // Lists beat overrides: 10.1.2.3 has an override but is in the allow list's /24.
    expect((await limiter.check({ event: 'api', feature: '10.1.2.3' })).listed).toBe('allow');
    // Nothing was counted for the listed: their own limits are untouched.
    expect(await admitted(limiter, 'someone', 3)).toBe(2);
    expect(observed.filter((o) => o.decision.listed === 'allow')).toHaveLength(22);
    expect(observed.every((o) => o.kind === 'check')).toBe(true);
  });

  it('refuse a denied client a lease; allow an allowed one without one, counting nothing', async () => {
    const { limiter } = setup({ api: { ...LISTED.api, lease: { maxUnits: 2, life: '5s' } } });
    expect(await limiter.lease({ event: 'api', feature: 'bot-9', units: 1 })).toEqual({
      allowed: false,
      limits: [],
      listed: 'deny',
      policyVersion: limiter.version,
    });
    // Listed, as its checks are: nothing is counted, so there is nothing to lease or return.
    expect(await limiter.lease({ event: 'api', feature: 'monitor', units: 5 })).toEqual({
      allowed: true,
      limits: [],
      listed: 'allow',
      policyVersion: limiter.version,
    });
    expect(await admitted(limiter, 'monitor', 3)).toBe(3);
  });

  it('answer a denied client among checks decided together as never allowed, counting nothing', async () => {
    const { limiter } = setup(LISTED);
    const together = await limiter.checkTogether([
      { event: 'api', feature: 'someone' },
      { event: 'api', feature: 'bot-2' },
    ]);
    expect(together.allowed).toBe(false);
    // Each answer is what a lone check of it would be: the listed one says so.
    expect(together.checks[1]).toEqual({ allowed: false, limits: [], listed: 'deny', policyVersion: limiter.version });
    expect(await admitted(limiter, 'someone', 3)).toBe(2);
    // An allowed client does not hold the others back, and counts nothing itself.
    const allowed = await limiter.checkTogether([
      { event: 'api', feature: 'monitor' },
      { event: 'api', feature: 'fresh' },
    ]);
    expect(allowed.allowed).toBe(true);
    expect(allowed.checks[0]).toEqual({ allowed: true, limits: [], listed: 'allow', policyVersion: limiter.version });
    expect(await admitted(limiter, 'fresh', 3)).toBe(1);
  });
});
