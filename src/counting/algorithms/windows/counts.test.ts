import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../../../config/policies.js';
import type { CountedBucket } from './buckets.js';
import { fixedAnswers } from '../../decision.js';
import { decide, excessOf, windowTotals, type LimitCounts } from './counts.js';
import { planEvents } from '../../plan.js';
import type { WindowsPlan } from '../../plan-types.js';

const plan = planEvents(
  parsePolicies(
    {
      events: {
        api: {
          limits: [
            { limit: 5, window: '10s' },
            { limit: 8, window: '1m' },
          ],
        },
      },
    },
    'decision.test.yaml',
  ),
).get('api') as WindowsPlan | undefined;
if (!plan) throw new Error('no plan');
const limitAt = (index: number) => {
  const limit = plan.limits[index];
  if (!limit) throw new Error(`no limit ${index}`);
  return limit;
};
const tenSeconds = limitAt(0);
const minute = limitAt(1);

const NOW = 1_790_000_000;
const seconds = (counts: number[]): CountedBucket[] =>
  counts.map((count, i) => ({ start: NOW - counts.length + 1 + i, size: 1, count }));

/** The 10 s limit holds `recent` (oldest first, the last at NOW), the minute 3 more from long before. */
function counts(recent: number[]): LimitCounts[] {
  return [
    { plan: tenSeconds, buckets: seconds(recent) },
    { plan: minute, buckets: [{ start: NOW - 40, size: 1, count: 3 }, ...seconds(recent)] },
  ];
}

describe('decide', () => {
  it('allows when every limit has room for the cost, and a check reports its cost as used', () => {
    const decision = decide(counts([1, 0, 1]), { cost: 2, nowMs: NOW * 1000, kind: 'check', version: 'v1' });
    expect(decision.allowed).toBe(true);
    expect(decision.limits.map((l) => [l.name, l.remaining])).toEqual([
      ['api-10s', 1],
      ['api-1m', 1],
    ]);
    // A peek counts nothing.
    expect(
      decide(counts([1, 0, 1]), { cost: 2, nowMs: NOW * 1000, kind: 'peek', version: 'v1' }).limits[0]?.remaining,
    ).toBe(3);
  });

  it('denies when any limit is short, and says when enough of it leaves', () => {
    // The minute holds 3 + 4 = 7 of 8: a cost of 2 needs 1 to leave, the one from 40 s ago, at NOW + 20.
    const decision = decide(counts([2, 0, 2]), { cost: 2, nowMs: NOW * 1000 + 250, kind: 'check', version: 'v1' });
    expect(decision).toMatchObject({ allowed: false, retryAfter: 20 });
    expect(decision.limits.map((l) => l.remaining)).toEqual([1, 1]);
  });

  it('sums what each window holds, and what must leave for a cost to fit', () => {
    expect(windowTotals(counts([2, 0, 2]), NOW)).toEqual([4, 7]);
    expect(excessOf(counts([2, 0, 2]), 2, NOW)).toEqual([1, 1]);
  });

  it('decides by the event’s rule when there are no counts', () => {
    expect(fixedAnswers('v1').degraded('allow')).toEqual({
      allowed: true,
      limits: [],
      degraded: true,
      policyVersion: 'v1',
    });
    expect(fixedAnswers('v1').degraded('deny')).toEqual({
      allowed: false,
      limits: [],
      retryAfter: 1,
      degraded: true,
      policyVersion: 'v1',
    });
  });
});
