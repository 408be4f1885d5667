import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../../../config/policies.js';
import { FeatureWindow } from './feature-window.js';
import { planEvents } from '../../plan.js';
import type { WindowsPlan } from '../../plan-types.js';
import { layoutOf } from './window-layout.js';

const planOf = (policy: object) => {
  const plan = planEvents(parsePolicies({ events: { api: policy } }, 'test.yaml')).get('api') as
    WindowsPlan | undefined;
  if (!plan) throw new Error('no plan');
  return plan;
};
const L = (limit: number, window: string, extra: object = {}) => ({ limit, window, ...extra });
const PLANS = {
  '1 min': planOf({ limits: [L(10, '1m')] }),
  '1 day': planOf({ limits: [L(10, '1d')] }),
  login: planOf({ limits: [L(10, '1m'), L(100, '1d')] }),
  'five limits': planOf({ limits: [L(1, '1m'), L(2, '2m'), L(5, '5m'), L(10, '10m'), L(60, '1h')] }),
  'a lease': planOf({ limits: [L(10, '1m')], lease: { maxUnits: 5, life: '30s' } }),
  fixed: planOf({ algorithm: 'fixed', limits: [L(10, '1h')] }),
  'a calendar month': planOf({ algorithm: 'fixed', limits: [L(10, '1mo', { anchor: 15, timezone: 'Europe/Berlin' })] }),
  '7 days in 1 h buckets': planOf({ limits: [L(10, '7d', { granularity: '1h' })] }),
};
const S = 1_790_000_000;
const BASE = 'p:{api:=x}:';

/** A window at `second` built on `previous`, filled with each bucket's own start (mod 997) as its count. */
function filled(
  plan: WindowsPlan,
  second: number,
  previous?: FeatureWindow | ReturnType<FeatureWindow['settledCounts']>,
) {
  const window = new FeatureWindow(plan, BASE, second, 2, previous);
  const { reads } = window;
  window.fill(
    reads,
    reads.keys.map((key, i) => (i === 0 ? 0 : Number(key.slice(key.lastIndexOf(':') + 1)) % 997)),
    window.currentKeys.map(() => 1),
    0,
  );
  return window;
}

describe('WindowLayout', () => {
  it('is worked out once per plan and second, for every feature', () => {
    const plan = PLANS.login;
    expect(layoutOf(plan, S, 2)).toBe(layoutOf(plan, S, 2));
    expect(new FeatureWindow(plan, 'p:{api:=a}:', S, 2).layout).toBe(
      new FeatureWindow(plan, 'p:{api:=b}:', S, 2).layout,
    );
    expect(layoutOf(plan, S + 1, 2)).not.toBe(layoutOf(plan, S, 2));
  });

  it('carries to a later second what a bucket by bucket look-up would, from a window or from the numbers it left', () => {
    for (const [name, plan] of Object.entries(PLANS)) {
      for (const second of [S, S + 37, S + 3599, S + 86_399]) {
        const first = filled(plan, second);
        const settled = first.settledCounts();
        for (const later of [second, second + 1, second + 3, second + 61, second + 3600, second + 90_000]) {
          const fromWindow = new FeatureWindow(plan, BASE, later, 2, first);
          const fromCounts = new FeatureWindow(plan, BASE, later, 2, settled);
          const report = `${name} at ${second} then ${later}`;
          expect(fromCounts.reads.keys, report).toEqual(fromWindow.reads.keys);
          // What each settled bucket of the later window knows, looked up bucket by bucket.
          const { layout } = fromWindow;
          const expected = layout.settled.map((slot) =>
            first.knownSettled(layout.levels[slot] as number, layout.starts[slot] as number),
          );
          const known = (window: FeatureWindow) =>
            window.layout.settled.map((slot) =>
              window.reads.keys.includes(BASE + (window.layout.suffixes[slot] as string))
                ? undefined
                : window.limits
                    .flatMap((limit) => limit.buckets)
                    .find((b) => b.start === layout.starts[slot] && b.size === layout.sizes[slot])?.count,
            );
          expect(known(fromWindow), report).toEqual(expected);
          expect(known(fromCounts), report).toEqual(expected);
          for (const [i, slot] of layout.settled.entries())
            expect(settled?.knownSettled(layout.levels[slot] as number, layout.starts[slot] as number), report).toBe(
              expected[i],
            );
        }
      }
    }
  });
});
