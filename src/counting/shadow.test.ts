// Limits in shadow on the embedded store with a driven clock: never refusing, counted as if
// enforced, and naming what enforcing would have refused, which is checked against enforcing
// the same limits on the same arrivals.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../store/embedded-store.js';
import type { CounterStore } from '../store/counter-store.js';
import type { ObservedDecision } from './report.js';
import type { Decision } from './decision.js';
import { createLimiter } from './limiter.js';

const T0 = Date.UTC(2026, 10, 26, 12, 0, 0);

function setup(events: object, store?: CounterStore) {
  const clock = { ms: T0 };
  const now = () => clock.ms;
  const shared = store ?? createEmbeddedStore({ now });
  const observed: ObservedDecision[] = [];
  const limiter = createLimiter({ policies: { events }, store: shared, now, onDecision: (o) => observed.push(o) });
  return { clock, store: shared, limiter, observed };
}

describe('an event in shadow', () => {
  it('never refuses, names the limits that would have, and counts only what enforcing would admit', async () => {
    const store = createEmbeddedStore({ now: () => T0 });
    const { limiter, observed } = setup({ api: { mode: 'shadow', limits: [{ limit: 3, window: '1m' }] } }, store);
    const decisions: Decision[] = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.check({ event: 'api', feature: 'u' }));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect(decisions.map((d) => d.shadowDenied ?? [])).toEqual([[], [], [], ['api-1m'], ['api-1m']]);
    // No enforced limit: nothing for the RateLimit headers; the shadow limit's own status apart.
    expect(decisions[2]).toEqual({
      allowed: true,
      limits: [],
      shadowLimits: [{ name: 'api-1m', limit: 3, window: 60, remaining: 0, resetSeconds: 60 }],
      policyVersion: limiter.version,
    });
    expect(observed.map((o) => [o.event, o.decision.shadowDenied?.length ?? 0])).toEqual([
      ['api', 0],
      ['api', 0],
      ['api', 0],
      ['api', 1],
      ['api', 1],
    ]);
    // Enforced now, on the same counters: the 3 it would have admitted are there.
    const enforced = setup({ api: { limits: [{ limit: 3, window: '1m' }] } }, store);
    expect((await enforced.limiter.check({ event: 'api', feature: 'u' })).allowed).toBe(false);
  });

  it('takes a cost beyond its limit as a request it would refuse, not as bad input', async () => {
    const { limiter } = setup({ api: { mode: 'shadow', limits: [{ limit: 3, window: '1m' }] } });
    const decision = await limiter.check({ event: 'api', feature: 'u', cost: 5 });
    expect([decision.allowed, decision.shadowDenied]).toEqual([true, ['api-1m']]);
    expect((await limiter.peek({ event: 'api', feature: 'u' })).shadowLimits?.[0]?.remaining).toBe(3);
  });
});

describe('a limit in shadow beside enforced ones', () => {
  const MIXED = {
    api: {
      limits: [
        { limit: 10, window: '1m' },
        { name: 'tight', limit: 3, window: '10s', mode: 'shadow' },
      ],
    },
  };

  it('leaves the decision to the enforced limits and says what the shadow one would have done', async () => {
    const { limiter, observed } = setup(MIXED);
    const decisions: Decision[] = [];
    for (let i = 0; i < 12; i++) decisions.push(await limiter.check({ event: 'api', feature: 'u' }));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(decisions.map((d) => d.shadowDenied?.join() ?? '')).toEqual([
      ...Array<string>(3).fill(''),
      ...Array<string>(9).fill('tight'),
    ]);
    expect(decisions[0]?.limits.map((l) => l.name)).toEqual(['api-1m']);
    expect(decisions[0]?.shadowLimits?.map((l) => l.name)).toEqual(['tight']);
    expect(
      observed.map((o) => o.decision.allowed && o.decision.shadowDenied !== undefined).filter(Boolean),
    ).toHaveLength(7);
  });

  const arrivalsArbitrary = fc.array(
    fc.record({
      at: fc.integer({ min: 0, max: 40_000 }),
      feature: fc.constantFrom('a', 'b'),
      cost: fc.integer({ min: 1, max: 4 }),
    }),
    { maxLength: 60 },
  );

  it('names exactly what the shadow limit enforced would refuse among the requests served (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(arrivalsArbitrary, async (arrivals) => {
        arrivals.sort((x, y) => x.at - y.at);
        const shadow = setup(MIXED);
        // The shadow limit alone, enforced, asked about the same requests: counting those the enforced limits served.
        const reference = setup({ api: { limits: [{ name: 'tight', limit: 3, window: '10s' }] } });
        for (const { at, feature, cost } of arrivals) {
          shadow.clock.ms = T0 + at;
          reference.clock.ms = T0 + at;
          const inShadow = await shadow.limiter.check({ event: 'api', feature, cost });
          const ask = { event: 'api', feature, cost };
          const enforced = await (inShadow.allowed ? reference.limiter.check(ask) : reference.limiter.peek(ask)).catch(
            () => ({ allowed: false }),
          );
          expect(inShadow.shadowDenied !== undefined).toBe(!enforced.allowed);
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('an event in shadow, against the same event enforced', () => {
  it('names exactly the requests enforcing refuses, on any arrivals (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            at: fc.integer({ min: 0, max: 40_000 }),
            feature: fc.constantFrom('a', 'b'),
            cost: fc.integer({ min: 1, max: 3 }),
          }),
          {
            maxLength: 60,
          },
        ),
        async (arrivals) => {
          arrivals.sort((x, y) => x.at - y.at);
          const limits = [
            { limit: 3, window: '10s' },
            { limit: 6, window: '30s', granularity: '5s' },
          ];
          const shadow = setup({ api: { mode: 'shadow', limits } });
          const enforced = setup({ api: { limits } });
          let refused = 0;
          let named = 0;
          for (const { at, feature, cost } of arrivals) {
            shadow.clock.ms = T0 + at;
            enforced.clock.ms = T0 + at;
            const inShadow = await shadow.limiter.check({ event: 'api', feature, cost });
            const whenEnforced = await enforced.limiter.check({ event: 'api', feature, cost });
            expect(inShadow.allowed).toBe(true);
            expect(inShadow.shadowDenied !== undefined).toBe(!whenEnforced.allowed);
            if (!whenEnforced.allowed) refused++;
            if (inShadow.shadowDenied) named++;
          }
          expect(named).toBe(refused);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("Envoy's shadow_mode", () => {
  it('is told to onDecision as allowed, with what it would have refused', async () => {
    const { limiter, observed } = setup({ api: { limits: [{ limit: 1, window: '1m' }] } });
    await limiter.checkTogether([{ event: 'api', feature: 'u', enforced: false }]);
    const together = await limiter.checkTogether([{ event: 'api', feature: 'u', enforced: false }]);
    expect(together.allowed).toBe(true);
    expect(observed.map((o) => [o.decision.allowed, o.decision.shadowDenied])).toEqual([
      [true, undefined],
      [true, ['api-1m']],
    ]);
  });
});

describe('a reset', () => {
  it('forgets what shadow limits beside enforced ones counted, as well as the enforced ones', async () => {
    const { limiter } = setup({
      api: {
        limits: [
          { limit: 10, window: '1m' },
          { name: 'tight', limit: 2, window: '1m', mode: 'shadow' },
        ],
      },
    });
    for (let i = 0; i < 3; i++) await limiter.check({ event: 'api', feature: 'u' });
    expect((await limiter.peek({ event: 'api', feature: 'u' })).shadowLimits?.[0]?.remaining).toBe(0);
    await limiter.reset({ event: 'api', feature: 'u' });
    const after = await limiter.peek({ event: 'api', feature: 'u' });
    expect([after.limits[0]?.remaining, after.shadowLimits?.[0]?.remaining]).toEqual([10, 2]);
  });
});

describe('moving a limit out of shadow', () => {
  it('judges a limit switched from shadow to enforce on every request served meanwhile', async () => {
    const store = createEmbeddedStore({ now: () => T0 });
    const clock = { ms: T0 };
    const during = createLimiter({
      policies: {
        events: {
          api: {
            limits: [
              { limit: 10, window: '1m' },
              { name: 'hour', limit: 15, window: '1h', mode: 'shadow' },
            ],
          },
        },
      },
      store,
      now: () => clock.ms,
    });
    let served = 0;
    for (let minute = 0; minute < 3; minute++) {
      clock.ms = T0 + minute * 60_000;
      for (let i = 0; i < 10; i++) if ((await during.check({ event: 'api', feature: 'u' })).allowed) served++;
    }
    expect(served).toBe(30);
    const after = createLimiter({
      policies: {
        events: {
          api: {
            limits: [
              { limit: 10, window: '1m' },
              { name: 'hour', limit: 15, window: '1h' },
            ],
          },
        },
      },
      store,
      now: () => clock.ms + 60_000,
    });
    expect((await after.check({ event: 'api', feature: 'u' })).allowed).toBe(false);
  });

  it('counts a limit set wholly in shadow under its event, beside an enforced tier', async () => {
    const { limiter, observed } = setup({
      api: {
        mode: 'shadow',
        limits: [{ limit: 2, window: '1m' }],
        tiers: { pro: { limits: [{ limit: 3, window: '1m', mode: 'enforce' }] } },
      },
    });
    for (let i = 0; i < 3; i++) await limiter.check({ event: 'api', feature: 'u' });
    expect(observed.map((o) => o.event)).toEqual(['api', 'api', 'api']);
    // Counted as if enforced (2), on the event's own counters: the pro tier sees them.
    const pro = [];
    for (let i = 0; i < 2; i++) pro.push((await limiter.check({ event: 'api', feature: 'u', tier: 'pro' })).allowed);
    expect(pro).toEqual([true, false]);
    await limiter.reset({ event: 'api', feature: 'u' });
    expect((await limiter.check({ event: 'api', feature: 'u', tier: 'pro' })).allowed).toBe(true);
  });
});
