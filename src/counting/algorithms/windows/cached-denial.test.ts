import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../../../config/policies.js';
import type { Decision } from '../../decision.js';
import { planEvents } from '../../plan.js';
import type { WindowsPlan } from '../../plan-types.js';
import { rememberDenial, repeatDenial } from './cached-denial.js';

const plan = planEvents(
  parsePolicies(
    {
      events: {
        api: {
          limits: [
            { name: 'minute', limit: 10, window: '1m' },
            { name: 'day', limit: 100, window: '1d' },
          ],
        },
      },
    },
    'cached-denial.test.yaml',
  ),
).get('api') as WindowsPlan;

const T = 1_790_000_000_500;
const denied = (remaining: number): Decision => ({
  allowed: false,
  limits: [
    { name: 'minute', limit: 10, window: 60, remaining, resetSeconds: 30 },
    { name: 'day', limit: 100, window: 86_400, remaining: 90, resetSeconds: 3600 },
  ],
  retryAfter: 30,
  policyVersion: 'v1',
});

describe('a cached denial', () => {
  it('repeats what was decided, its resetSeconds and retryAfter counted down, from numbers and a shared form', () => {
    const cached = rememberDenial(plan, denied(0), 1, Math.floor(T / 1000) + 30, T, 1000);
    expect(repeatDenial(cached, 1, T + 600)).toEqual({
      allowed: false,
      limits: [
        { name: 'minute', limit: 10, window: 60, remaining: 0, resetSeconds: 30 },
        { name: 'day', limit: 100, window: 86_400, remaining: 90, resetSeconds: 3600 },
      ],
      retryAfter: 29,
      policyVersion: 'v1',
    });
    expect(repeatDenial(cached, 2, T + 600)).toBeUndefined();
    expect(repeatDenial(cached, 1, T + 1000)).toBeUndefined();
    // The same object while the countdown shows the same seconds.
    expect(repeatDenial(cached, 1, T + 700)).toBe(repeatDenial(cached, 1, T + 600));
    expect(Object.keys(repeatDenial(cached, 1, T + 700)?.limits[0] ?? {})).toEqual([
      'name',
      'limit',
      'window',
      'remaining',
      'resetSeconds',
    ]);
  });

  it('keeps each denial’s numbers apart, however many share the plan', () => {
    const [a, b] = [0, 3].map((remaining) =>
      rememberDenial(plan, denied(remaining), 1, Math.floor(T / 1000) + 30, T, 1000),
    );
    expect(repeatDenial(a, 1, T)?.limits[0]?.remaining).toBe(0);
    expect(repeatDenial(b, 1, T)?.limits[0]?.remaining).toBe(3);
    const other = { ...denied(0), policyVersion: 'v2' };
    expect(repeatDenial(rememberDenial(plan, other, 1, Math.floor(T / 1000) + 30, T, 1000), 1, T)?.policyVersion).toBe(
      'v2',
    );
    expect(repeatDenial(a, 1, T)?.policyVersion).toBe('v1');
  });
});
