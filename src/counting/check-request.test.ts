import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../config/policies.js';
import { checkItem, togetherItem, validCost, validFeature } from './check-request.js';
import { leaseItem } from './lease.js';
import { planEvents } from './plan.js';

const plans = planEvents(
  parsePolicies(
    {
      events: {
        api: { limits: [{ limit: 5, window: '1m' }] },
        leased: { limits: [{ limit: 30, window: '1m' }], lease: { maxUnits: 10, life: '5s' } },
      },
    },
    'request.test.yaml',
  ),
);

describe('check items', () => {
  it('are a check or a peek of a known event, cost 1 by default', () => {
    expect(checkItem(plans, { event: 'api', feature: 'ann' }, 'check')).toMatchObject({
      feature: 'ann',
      cost: 1,
      counting: true,
      enforced: true,
      impossible: false,
    });
    expect(checkItem(plans, { event: 'api', feature: 'ann', cost: 3 }, 'peek')).toMatchObject({
      cost: 3,
      counting: false,
    });
  });

  it('refuse what the limiter cannot decide, with the code of the one table', () => {
    const refused = (request: object) => {
      try {
        checkItem(plans, request as never, 'check');
        return 'accepted';
      } catch (error) {
        return (error as { code?: string }).code;
      }
    };
    expect(refused({ event: 'nope', feature: 'a' })).toBe('unknown_event');
    expect(refused({ event: '', feature: 'a' })).toBe('invalid_event');
    expect(refused({ event: 'api', feature: '' })).toBe('invalid_feature');
    expect(refused({ event: 'api', feature: 'a\ud800' })).toBe('invalid_feature');
    expect(refused({ event: 'api', feature: 'é'.repeat(513) })).toBe('feature_too_long');
    for (const cost of [0, -1, 1.5, '2', Number.MAX_SAFE_INTEGER + 2])
      expect(refused({ event: 'api', feature: 'a', cost })).toBe('invalid_cost');
    expect(refused({ event: 'api', feature: 'a', cost: 6 })).toBe('cost_exceeds_limit');
  });

  it('of a request decided together take any positive cost, one beyond a limit as a question answered "never"', () => {
    expect(togetherItem(plans, { event: 'api', feature: 'a', cost: 6 })).toMatchObject({
      cost: 6,
      counting: false,
      impossible: true,
      enforced: true,
    });
    expect(togetherItem(plans, { event: 'api', feature: 'a', peek: true, enforced: false })).toMatchObject({
      counting: false,
      enforced: false,
      impossible: false,
    });
  });

  it('of a lease ask at most maxUnits and the tightest limit, with a record token of their own', () => {
    const first = leaseItem(plans, { event: 'leased', feature: 'a', units: 50 });
    const second = leaseItem(plans, { event: 'leased', feature: 'a', units: 3 });
    expect(first).toMatchObject({ cost: 10, upTo: true, counting: true });
    expect(second.cost).toBe(3);
    expect(first.record?.token).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(first.record?.token).not.toBe(second.record?.token);
    expect(() => leaseItem(plans, { event: 'api', feature: 'a', units: 1 })).toThrow(/takes no leases/);
  });

  it('measure a feature in UTF-8 bytes, and a cost against the event’s limits', () => {
    expect(validFeature('x'.repeat(1024))).toHaveLength(1024);
    expect(() => validFeature('€'.repeat(342))).toThrow(/1026 bytes/);
    const api = plans.get('api');
    if (!api) throw new Error('no plan');
    expect(validCost(undefined, api)).toBe(1);
    expect(validCost(9, api, { beyondLimit: true })).toBe(9);
  });
});
