import { describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../../../store/embedded-store.js';
import { createLimiter, type Limiter } from '../../limiter.js';
import type { TokenBucketPlan } from '../../plan-types.js';

const T0 = Date.UTC(2026, 10, 28, 12, 0, 0);

function drive(first: object) {
  const clock = { ms: T0 };
  const now = () => clock.ms;
  const store = createEmbeddedStore({ now });
  const limiter = createLimiter({ policies: first, store, now });
  const reload = (next: object, replacing: Limiter) =>
    createLimiter({ policies: next, store, now, replacing, reloadSpreadSeconds: 0 });
  return { clock, limiter, reload };
}

async function admitted(limiter: Limiter, n: number, feature = 'c'): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < n; i++) if ((await limiter.check({ event: 'e', feature })).allowed) allowed++;
  return allowed;
}

const bucket = { events: { e: { algorithm: 'token-bucket', limits: [{ rate: '10/m', burst: 10 }] } } };

describe('a reload from windows to a token bucket', () => {
  it.each([
    ['sliding', { limits: [{ limit: 10, window: '1m' }] }],
    ['fixed', { algorithm: 'fixed', limits: [{ limit: 10, window: '1m' }] }],
  ])('starts a client less what its %s window counted, not with a full burst', async (_name, windows) => {
    const { clock, limiter, reload } = drive({ events: { e: windows } });
    clock.ms += 20_000;
    expect(await admitted(limiter, 8)).toBe(8);
    const next = reload(bucket, limiter);
    const plan = next.plans.get('e') as TokenBucketPlan;
    expect(plan.carry).toMatchObject({
      how: 'conservative',
      since: (T0 + 20_000) / 1000,
      exactAt: (T0 + 80_000) / 1000,
    });
    // 8 of the 10 tokens were taken under the window: 2 are left.
    expect(await admitted(next, 5)).toBe(2);
    // One comes back every 6 s.
    clock.ms += 6_000;
    expect(await admitted(next, 5)).toBe(1);
    // A client the windows never saw has its whole burst.
    expect(await admitted(next, 12, 'fresh')).toBe(10);
  });

  it('starts full once the old windows have passed', async () => {
    const { clock, limiter, reload } = drive({ events: { e: { limits: [{ limit: 10, window: '1m' }] } } });
    expect(await admitted(limiter, 10)).toBe(10);
    const next = reload(bucket, limiter);
    clock.ms += 61_000;
    expect(await admitted(next, 12)).toBe(10);
  });
});
