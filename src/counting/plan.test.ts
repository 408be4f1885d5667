import { describe, expect, it, vi } from 'vitest';
import { parsePolicies, PolicyError } from '../config/policies.js';
import { partFor } from './algorithms/parts.js';
import { planEvents, planEventsInSlices, TTL_MARGIN_SECONDS, type EventPlan, type WindowsPlan } from './plan.js';

const plan = (events: object) => planEvents(parsePolicies({ events }, 'test.yaml')) as Map<string, WindowsPlan>;

describe('planEvents', () => {
  it('shares bucket levels between an event’s limits, each kept as long as its longest reader needs', () => {
    const login = plan({
      login: {
        limits: [
          { limit: 5, window: '1m' },
          { limit: 100, window: '1d' },
        ],
      },
    }).get('login');
    expect(login?.levels).toEqual([
      { size: 3600, ttlSeconds: 86_400 + 3600 + TTL_MARGIN_SECONDS },
      { size: 60, ttlSeconds: 86_400 + 60 + TTL_MARGIN_SECONDS },
      { size: 1, ttlSeconds: 86_400 + 1 + TTL_MARGIN_SECONDS },
    ]);
    expect(login?.maxCost).toBe(5);
  });

  it('keeps the design’s 120 s for the second buckets of a lone 60 s window (plus the margin)', () => {
    const api = plan({ api: { limits: [{ limit: 5, window: '60s' }] } }).get('api');
    expect(api?.levels.find((l) => l.size === 1)?.ttlSeconds).toBe(61 + TTL_MARGIN_SECONDS);
    expect(api?.levels.find((l) => l.size === 60)?.ttlSeconds).toBe(120 + TTL_MARGIN_SECONDS);
  });

  it('keeps a fixed window’s counter for one window', () => {
    const exportPlan = plan({ export: { algorithm: 'fixed', limits: [{ limit: 10, window: '1h' }] } }).get('export');
    expect(exportPlan?.levels).toEqual([{ size: 3600, ttlSeconds: 3600 + TTL_MARGIN_SECONDS }]);
  });

  it('refuses a limit that would read more than 1000 keys per check, naming it', () => {
    expect(() => plan({ slow: { limits: [{ limit: 5, window: 7007, granularity: 7 }] } })).toThrow(PolicyError);
    expect(() => plan({ slow: { limits: [{ limit: 5, window: 7007, granularity: 7 }] } })).toThrow(
      'event "slow", field limits[0]: a 7007s window in 7s buckets reads up to 1002 keys per check (at most 1000)',
    );
  });
});

describe('planEventsInSlices', () => {
  const overrides = (count: number) =>
    Array.from({ length: count }, (_, i) => ({
      match: { feature: `user-${i}` },
      limits: [
        { limit: i + 1, window: '1m' },
        { limit: 10_000 + i, window: '1d' },
      ],
    }));
  const policies = parsePolicies({
    events: {
      a: { limits: [{ limit: 100, window: '1m' }], overrides: overrides(5000) },
      b: { limits: [{ limit: 100, window: '1m' }], overrides: overrides(5000) },
    },
  });

  it('plans what planEvents plans, letting the event loop through between slices', async () => {
    let turns = 0;
    let planning = true;
    const turn = () => {
      turns++;
      if (planning) setImmediate(turn);
    };
    setImmediate(turn);
    const sliced = await planEventsInSlices(policies, 1);
    planning = false;
    const whole = planEvents(policies);
    expect([...sliced.keys()]).toEqual([...whole.keys()]);
    for (const [event, plan] of whole) {
      const chosen = (each: EventPlan, feature: string) =>
        each.clients?.choose(each, feature, undefined, () => 0, { lists: true });
      for (const feature of ['user-0', 'user-4999', 'nobody']) {
        const [a, b] = [chosen(plan, feature), chosen(sliced.get(event) as EventPlan, feature)];
        expect(typeof a === 'string' ? a : a?.limits.map((limit) => limit.policy)).toEqual(
          typeof b === 'string' ? b : b?.limits.map((limit) => limit.policy),
        );
      }
    }
    // 10,000 overrides in slices of 1 ms: the loop ran many times meanwhile.
    expect(turns).toBeGreaterThan(5);
  });
});

describe('override plans', () => {
  const policies = parsePolicies({
    events: {
      api: {
        limits: [{ limit: 100, window: '1m' }],
        overrides: Array.from({ length: 1000 }, (_, i) => ({
          match: { feature: `user-${i}` },
          limits: [
            { limit: i + 1, window: '1m' },
            ...(i === 7 ? [{ name: 'trial', limit: 3, window: '1m', mode: 'shadow' }] : []),
          ],
        })),
      },
    },
  });

  it('are made when a client first matches one, once, and answer as a plan made at load would', () => {
    const made = vi.spyOn(partFor('sliding'), 'eventPlan');
    const api = planEvents(policies).get('api') as EventPlan;
    // The event's own plan and the one its shadow limits count apart in; none of 1,000 overrides.
    expect(made).toHaveBeenCalledTimes(2);
    const choose = (feature: string) => api.clients?.choose(api, feature, undefined, () => 0, { lists: true });
    const first = choose('user-41') as EventPlan;
    expect(made).toHaveBeenCalledTimes(3);
    made.mockRestore();
    expect(first.limits.map((limit) => limit.policy.limit)).toEqual([42]);
    // The same plan object each time: what a client counted in it stays its own.
    expect(choose('user-41')).toBe(first);
  });

  it('leave every limit and the shadow plan apart known without making them', () => {
    const api = planEvents(policies).get('api') as EventPlan;
    // Every override's limits, for a correction's longest window and a reload's carry.
    expect(api.clients?.limits).toHaveLength(1001);
    // Override 7's shadow limit beside its enforced one counts apart, under api~shadow.
    expect(api.clients?.apart?.event).toBe('api~shadow');
    expect(api.clients?.apart?.limits.map((limit) => limit.policy.limit)).toEqual([3]);
  });
});
