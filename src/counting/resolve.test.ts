import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../config/policies.js';
import { planEvents } from './plan.js';
import { recordToken } from './records/records.js';
import { resolveAsk, validCost, validFeature, type AskKind, type ResolveOptions } from './resolve.js';

const plans = planEvents(
  parsePolicies(
    {
      events: {
        api: { limits: [{ limit: 5, window: '1m' }] },
        leased: { limits: [{ limit: 30, window: '1m' }], lease: { maxUnits: 10, life: '5s' } },
        listed: {
          limits: [{ limit: 5, window: '1m' }],
          allow: [{ cidr: '10.0.0.0/8' }],
          deny: [{ feature: '10.6.6.6' }],
        },
        tried: {
          limits: [
            { limit: 5, window: '1m' },
            { name: 'trial', limit: 2, window: '1m', mode: 'shadow' },
          ],
        },
      },
    },
    'request.test.yaml',
  ),
);

const now = () => 0;
const alone: ResolveOptions = { now, beyondLimit: 'refuse' };
const together: ResolveOptions = { now, beyondLimit: 'answer' };
const checkItem = (request: object, kind: 'check' | 'peek') => resolveAsk(plans, kind, request as never, alone);
const togetherItem = (request: { peek?: boolean; event: string; feature: string; cost?: number; enforced?: boolean }) =>
  resolveAsk(plans, request.peek === true ? 'peek' : 'check', request, together);
const leaseItem = (request: { event: string; feature: string; units: number }) =>
  resolveAsk(plans, 'lease', { ...request, cost: request.units }, { ...alone, maxUnits: 10 });

describe('check items', () => {
  it('are a check or a peek of a known event, cost 1 by default', () => {
    expect(checkItem({ event: 'api', feature: 'ann' }, 'check')).toMatchObject({
      feature: 'ann',
      cost: 1,
      counting: true,
      enforced: true,
      impossible: false,
    });
    expect(checkItem({ event: 'api', feature: 'ann', cost: 3 }, 'peek')).toMatchObject({
      cost: 3,
      counting: false,
    });
  });

  it('refuse what the limiter cannot decide, with the code of the one table', () => {
    const refused = (request: object) => {
      try {
        checkItem(request, 'check');
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
    expect(togetherItem({ event: 'api', feature: 'a', cost: 6 })).toMatchObject({
      cost: 6,
      // Asked to count, and never counted: the step counts no impossible check.
      counting: true,
      impossible: true,
      enforced: true,
    });
    expect(togetherItem({ event: 'api', feature: 'a', peek: true, enforced: false })).toMatchObject({
      counting: false,
      enforced: false,
      impossible: false,
    });
  });

  it('of a lease ask at most maxUnits and the tightest limit, and take what remains', () => {
    expect(leaseItem({ event: 'leased', feature: 'a', units: 50 })).toMatchObject({
      cost: 10,
      hold: 'lease',
      counting: true,
    });
    expect(leaseItem({ event: 'leased', feature: 'a', units: 3 }).cost).toBe(3);
    // Their records' ids are 128 random bits each.
    expect(recordToken()).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(recordToken()).not.toBe(recordToken());
  });

  const kinds: AskKind[] = ['check', 'peek', 'lease', 'reserve'];

  it('of a listed client, on every kind of question, are decided by the list and count nothing', () => {
    for (const kind of kinds) {
      const ask = { event: 'listed', feature: '10.1.2.3', cost: 3 };
      expect(resolveAsk(plans, kind, ask, alone)).toMatchObject({ listed: 'allow', cost: 0 });
      expect(resolveAsk(plans, kind, { ...ask, feature: '10.6.6.6' }, together)).toMatchObject({
        listed: 'deny',
        cost: 0,
      });
      expect(resolveAsk(plans, kind, { ...ask, feature: '192.0.2.1' }, alone).listed).toBeUndefined();
    }
  });

  it('of a listed client by lists before the event’s own (the gateway’s), whatever the event lists', () => {
    const gateway = {
      ...alone,
      lists: { listed: (feature: string) => (feature === '10.1.2.3' ? ('deny' as const) : undefined) },
    };
    expect(resolveAsk(plans, 'check', { event: 'listed', feature: '10.1.2.3' }, gateway).listed).toBe('deny');
    expect(resolveAsk(plans, 'check', { event: 'api', feature: '10.1.2.3' }, gateway).listed).toBe('deny');
  });

  it('bring the shadow limits beside the enforced ones as a companion, on every kind of question', () => {
    for (const kind of ['check', 'peek'] as const) {
      for (const options of [alone, together]) {
        const item = resolveAsk(plans, kind, { event: 'tried', feature: 'a', cost: 3 }, options);
        expect(item).toMatchObject({ enforced: true, impossible: false, counting: kind === 'check' });
        expect(item.shadow).toMatchObject({ enforced: false, impossible: true, counting: kind === 'check', cost: 3 });
        expect(item.shadow?.plan.event).toBe('tried~shadow');
      }
    }
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
