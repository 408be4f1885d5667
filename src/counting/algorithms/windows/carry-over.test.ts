import { describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../../../store/embedded-store.js';
import { createLimiter, type Limiter } from '../../limiter.js';
import type { WindowsPlan } from '../../plan-types.js';

const T0 = Date.UTC(2026, 10, 28, 12, 0, 0);

function drive(first: object, spread = 0) {
  const clock = { ms: T0 };
  const now = () => clock.ms;
  const store = createEmbeddedStore({ now });
  const limiter = createLimiter({ policies: first, store, now });
  const reload = (next: object, replacing: Limiter) =>
    createLimiter({ policies: next, store, now, replacing, reloadSpreadSeconds: spread });
  return { clock, limiter, reload };
}

async function admitted(limiter: Limiter, n: number, feature = 'c'): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < n; i++) if ((await limiter.check({ event: 'e', feature })).allowed) allowed++;
  return allowed;
}

describe('a reload that changes no bucket size', () => {
  it.each([
    ['sliding', { limits: [{ limit: 10, window: '1m' }] }, { limits: [{ limit: 20, window: '1m' }] }],
    [
      'fixed',
      { algorithm: 'fixed', limits: [{ limit: 10, window: '1h' }] },
      { algorithm: 'fixed', limits: [{ limit: 20, window: '1h' }] },
    ],
    [
      'calendar',
      { algorithm: 'fixed', limits: [{ limit: 10, window: '1mo' }] },
      { algorithm: 'fixed', limits: [{ limit: 20, window: '1mo' }] },
    ],
  ])('carries nothing and is exact at once (%s)', async (_name, before, after) => {
    const { limiter, reload } = drive({ events: { e: before } });
    expect(await admitted(limiter, 8)).toBe(8);
    const next = reload({ events: { e: after } }, limiter);
    expect((next.plans.get('e') as WindowsPlan).carry).toBeUndefined();
    expect(await admitted(next, 20)).toBe(12);
  });
});

describe('a reload that changes bucket sizes', () => {
  it('1 s → 10 s granularity: 10/min admits no more than 10 within the minute', async () => {
    const { clock, limiter, reload } = drive({ events: { e: { limits: [{ limit: 10, window: '1m' }] } } });
    clock.ms += 15_000;
    expect(await admitted(limiter, 10)).toBe(10);
    clock.ms += 5_000;
    const next = reload({ events: { e: { limits: [{ limit: 10, window: '1m', granularity: '10s' }] } } }, limiter);
    const plan = next.plans.get('e') as WindowsPlan;
    expect(plan.carry?.how).toBe('conservative');
    expect(await admitted(next, 10)).toBe(0);
    clock.ms += 25_000;
    expect(await admitted(next, 10)).toBe(0);
  });

  it('1,000/min → a 10/day override after 50 admitted: denied', async () => {
    const { clock, limiter, reload } = drive({ events: { e: { limits: [{ limit: 1000, window: '1m' }] } } });
    expect(await admitted(limiter, 50)).toBe(50);
    clock.ms += 3_000;
    const next = reload(
      {
        events: {
          e: {
            limits: [{ limit: 1000, window: '1m' }],
            overrides: [{ match: { feature: 'c' }, limits: [{ limit: 10, window: '1d' }] }],
          },
        },
      },
      limiter,
    );
    expect(await admitted(next, 5)).toBe(0);
  });
});

describe('carriedCover', () => {
  const plans = (first: object, next: object, second: number) => {
    const old = createLimiter({ policies: first, store: createEmbeddedStore() });
    const now = () => second * 1000;
    return createLimiter({
      policies: next,
      store: createEmbeddedStore(),
      now,
      replacing: old,
      reloadSpreadSeconds: 20,
    }).plans.get('e') as WindowsPlan;
  };

  it('covers a minute in 10 s buckets with the old 1 s ones until the new ones are complete, then exactly', () => {
    const R = 1_000_020; // 20 s past a minute boundary
    const plan = plans(
      { events: { e: { limits: [{ limit: 10, window: '1m' }] } } },
      { events: { e: { limits: [{ limit: 10, window: '1m', granularity: '10s' }] } } },
      R,
    );
    const [limit] = plan.limits;
    const carry = plan.carry;
    // Complete from R + 20: exact once a window starting there ends (its first second R + 20, its last R + 79).
    expect(carry?.exactAt).toBe(R + 20 + 59);
    // Right after the reload: the current minute whole, then the old 1 s buckets back to the window's start.
    const runs = limit?.cover(R + 5) ?? [];
    expect(runs.every((run) => run.size !== 10)).toBe(true);
    const seconds = runs.reduce((sum, run) => sum + run.size * run.count, 0);
    expect(seconds).toBeGreaterThanOrEqual(60);
    // The old 1 s level is counted until the transition is over everywhere, then not.
    expect(plan.levels.find((level) => level.size === 1)?.countedUntil).toBe((carry?.exactAt ?? 0) + 20 + 60);
    // Once exact, the plan's own cover.
    const exact = limit?.cover(carry?.exactAt ?? 0) ?? [];
    expect(exact.some((run) => run.size === 10)).toBe(true);
  });

  it('stops where the old counters no longer hold anything: what they did not keep is not read', () => {
    const R = 1_000_020;
    const plan = plans(
      { events: { e: { limits: [{ limit: 5, window: '30s' }] } } },
      { events: { e: { limits: [{ limit: 5, window: '1h' }] } } },
      R,
    );
    const runs = plan.limits[0]?.cover(R + 600) ?? [];
    const oldest = Math.min(...runs.map((run) => run.start));
    // The old 30 s window's 1 s buckets lived 33 s: nothing older than that before the reload is read.
    expect(oldest).toBeGreaterThanOrEqual(R - 40);
    expect(runs.reduce((keys, run) => keys + run.count, 0)).toBeLessThan(200);
    expect(plan.carry?.reasons.join(' ')).toContain('kept 30 s of counts');
  });
});
