import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../../../config/policies.js';
import { counterCall, countsOf, incrementsAt } from './counter-call.js';
import { FeatureWindow } from './feature-window.js';
import { planEvents } from '../../plan.js';
import type { WindowsPlan } from '../../plan-types.js';

const plans = planEvents(
  parsePolicies(
    {
      events: {
        api: { limits: [{ limit: 100, window: '30s' }] },
        strict: { limits: [{ limit: 100, window: '30s' }], onStoreError: 'deny' },
      },
    },
    'call.test.yaml',
  ),
);
const S = 1_790_000_000;
const BASE = 'p:{api:=x}:';

function windowOf(event: string) {
  const plan = plans.get(event) as WindowsPlan | undefined;
  if (!plan) throw new Error(`no plan ${event}`);
  return new FeatureWindow(plan, BASE, S, 0);
}

describe('a counter’s store call', () => {
  it('counts: increments the current buckets (living window, bucket and 2 s) and reads the rest, kept by the store if unanswered where the rule admits', () => {
    const call = counterCall(windowOf('api'), 'count', { cost: 3, onStoreError: 'allow', recorded: false });
    expect(call.increments).toEqual([{ key: `${BASE}1:${S}`, delta: 3, ttlSeconds: 33 }]);
    // The reset marker and the 29 seconds before this one.
    expect(call.keys).toHaveLength(30);
    expect(call.options).toEqual({ admittedIfUnanswered: true });
    expect(
      counterCall(windowOf('strict'), 'count', { cost: 1, onStoreError: 'deny', recorded: false }).options,
    ).toEqual({
      admittedIfUnanswered: false,
    });
  });

  it('takes back a count a record follows (a lease, a reservation) if unanswered, whatever the rule', () => {
    const call = counterCall(windowOf('api'), 'count', { cost: 4, onStoreError: 'allow', recorded: true });
    expect(call.increments.every(({ delta }) => delta === 4)).toBe(true);
    expect(call.options).toEqual({ admittedIfUnanswered: false });
  });

  it('reads: no increment, the current buckets read after the rest', () => {
    const call = counterCall(windowOf('api'), 'read', { cost: 3, onStoreError: 'allow', recorded: false });
    expect(call.increments).toEqual([]);
    expect(call.keys.at(-1)).toBe(`${BASE}1:${S}`);
    expect(call.cost).toBe(0);
  });

  it('reads its answer into counts before the request: a count’s own cost comes out', () => {
    const counting = counterCall(windowOf('api'), 'count', { cost: 2, onStoreError: 'allow', recorded: false });
    const read = counting.keys.map((_, i) => (i === 0 ? 0 : 1));
    const [limit] = countsOf(counting, { incremented: [7], read });
    const total = (limit?.buckets ?? []).reduce((sum, bucket) => sum + bucket.count, 0);
    // 29 past seconds of 1, and the current second's 7 less the request's 2.
    expect(total).toBe(29 + 5);
    const reading = counterCall(windowOf('api'), 'read', { cost: 2, onStoreError: 'allow', recorded: false });
    const [peeked] = countsOf(reading, { incremented: [], read: [...reading.keys.map(() => 0).slice(0, -1), 7] });
    expect((peeked?.buckets ?? []).reduce((sum, bucket) => sum + bucket.count, 0)).toBe(7);
  });

  it('counts a refund or a return at any second in every bucket size', () => {
    const plan = plans.get('api') as WindowsPlan | undefined;
    if (!plan) throw new Error('no plan');
    expect(incrementsAt(plan, BASE, S + 5, 2)).toEqual([{ key: `${BASE}1:${S + 5}`, delta: 2, ttlSeconds: 33 }]);
  });
});
