import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../../../config/policies.js';
import { FeatureWindow } from './feature-window.js';
import { planEvents } from '../../plan.js';
import type { WindowsPlan } from '../../plan-types.js';

const planOf = (limits: object[]) => {
  const plan = planEvents(parsePolicies({ events: { api: { limits } } }, 'test.yaml')).get('api') as
    WindowsPlan | undefined;
  if (!plan) throw new Error('no plan');
  return plan;
};

// Under a halfMinute, so it counts in seconds only (a 60 s window also uses the current minute's bucket).
const halfMinute = planOf([{ limit: 100, window: '30s' }]);
const S = 1_790_000_000;
const MARKER = 'p:{api:=x}:reset';

/** Fills every bucket read with `value` (no reset marker) and every current bucket with `current` (cost 0). */
function fillAll(window: FeatureWindow, value: number, current = 0) {
  const reads = window.reads;
  return window.fill(
    reads,
    reads.keys.map((_, i) => (i === 0 ? 0 : value)),
    window.currentKeys.map(() => current),
    0,
  );
}

describe('FeatureWindow', () => {
  it('reads a new feature’s whole window once, then only its live buckets', () => {
    const window = new FeatureWindow(halfMinute, 'p:{api:=x}:', S, 2);
    // 29 past seconds plus 2 seconds ahead; the current second comes from the increment.
    expect(window.reads.keys).toHaveLength(1 + 31);
    expect(window.reads.keys[0]).toBe(MARKER);
    expect(window.currentKeys).toEqual([`p:{api:=x}:1:${S}`]);
    fillAll(window, 1);
    expect(window.reads.keys).toEqual([
      MARKER,
      ...[S - 2, S - 1, S + 1, S + 2].map((start) => `p:{api:=x}:1:${start}`),
    ]);
  });

  it('carries settled counts into the next second, reading only the bucket that just settled', () => {
    const first = new FeatureWindow(halfMinute, 'p:{api:=x}:', S, 2);
    const [limit] = fillAll(first, 1, 5);
    expect(limit?.buckets.reduce((sum, b) => sum + b.count, 0)).toBe(29 + 5 + 2);

    const next = new FeatureWindow(halfMinute, 'p:{api:=x}:', S + 1, 2, first);
    // Settled now: everything up to S − 2, of which S − 2 was live before and is unknown.
    expect(next.reads.keys).toEqual([
      MARKER,
      ...[S - 1, S, S + 2, S + 3, S - 2].map((start) => `p:{api:=x}:1:${start}`),
    ]);
    const [counts] = next.fill(next.reads, [0, 10, 10, 0, 0, 7], [3], 0);
    const byStart = new Map(counts?.buckets.map((b) => [b.start, b.count]));
    expect(byStart.get(S - 28)).toBe(1); // carried over, not read
    expect(byStart.get(S - 2)).toBe(7);
    expect(byStart.get(S + 1)).toBe(3); // the current second, from the increment
    expect(byStart.has(S - 29)).toBe(false); // left the window
  });

  it('reads nothing once settled for a store no other instance shares (no skew)', () => {
    const window = new FeatureWindow(halfMinute, 'p:{api:=x}:', S, 0);
    expect(window.reads.keys).toHaveLength(1 + 29);
    fillAll(window, 1);
    expect(window.reads.keys).toEqual([MARKER]);
    expect(new FeatureWindow(halfMinute, 'p:{api:=x}:', S + 1, 0, window).reads.keys).toEqual([
      MARKER,
      `p:{api:=x}:1:${S}`,
    ]);
  });

  it('reads a day window’s previous hour only while it may still change, and the next only near its start', () => {
    const day = planOf([{ limit: 100, window: '1d' }]);
    const hour = Math.floor(S / 3600) * 3600;
    const early = new FeatureWindow(day, 'p:{api:=x}:', hour + 1, 2);
    fillAll(early, 0);
    expect(early.reads.keys).toEqual([MARKER, `p:{api:=x}:3600:${hour - 3600}`]);
    const late = new FeatureWindow(day, 'p:{api:=x}:', hour + 3599, 2);
    fillAll(late, 0);
    expect(late.reads.keys).toEqual([MARKER, `p:{api:=x}:3600:${hour + 3600}`]);
    const middle = new FeatureWindow(day, 'p:{api:=x}:', hour + 1800, 2);
    fillAll(middle, 0);
    expect(middle.reads.keys).toEqual([MARKER]);
  });

  it('takes a 60 s window’s recent seconds from the current minute, whose increment answers for them', () => {
    const minute = planOf([{ limit: 100, window: '60s' }]);
    const late = new FeatureWindow(minute, 'p:{api:=x}:', S - (S % 60) + 59, 2);
    // Only the next minute, which a clock ahead has already begun.
    expect(late.reads.keys).toEqual([MARKER, `p:{api:=x}:60:${S - (S % 60) + 60}`]);
    const early = new FeatureWindow(minute, 'p:{api:=x}:', S - (S % 60) + 1, 2);
    expect(early.reads.keys).toHaveLength(1 + 58);
    fillAll(early, 0);
    expect(early.reads.keys).toEqual([MARKER, `p:{api:=x}:1:${S - (S % 60) - 1}`]);
  });

  it('counts nothing that ended by the reset second a check reads, and carries that forward', () => {
    const window = new FeatureWindow(halfMinute, 'p:{api:=x}:', S, 2);
    fillAll(window, 1);
    const reads = window.reads;
    const [limit] = window.fill(
      reads,
      reads.keys.map((_, i) => (i === 0 ? S - 10 : 1)),
      [0],
      0,
    );
    // The bucket holding the reset second still counts: a reset deletes it in the store.
    const counted = limit?.buckets.filter((b) => b.count > 0).map((b) => b.start - S);
    expect(counted).toEqual([-10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 1, 2]);
    const next = new FeatureWindow(halfMinute, 'p:{api:=x}:', S + 1, 2, window);
    const [after] = next.fill(
      next.reads,
      next.reads.keys.map((_, i) => (i === 0 ? S - 10 : 1)),
      [0],
      0,
    );
    expect(after?.buckets.some((b) => b.start <= S - 11 && b.count > 0)).toBe(false);
  });

  it('reads a bucket two limits share once and fills both', () => {
    const shared = planOf([
      { limit: 10, window: '10s' },
      { limit: 100, window: '30s' },
    ]);
    const window = new FeatureWindow(shared, 'p:{api:=x}:', S, 2);
    expect(new Set(window.reads.keys).size).toBe(window.reads.keys.length);
    expect(window.reads.keys).toHaveLength(1 + 31);
    const counts = fillAll(window, 1);
    expect(counts.map((limit) => limit.buckets.reduce((sum, b) => sum + b.count, 0))).toEqual([9 + 2, 29 + 2]);
  });

  it('carries the same from its settled counts once let go as from itself, for windows read at both ends', () => {
    const day = planOf([
      { limit: 1000, window: '1m' },
      { limit: 10_000, window: '1d' },
    ]);
    const hour = Math.floor(S / 3600) * 3600;
    for (const second of [hour + 1, hour + 61, hour + 1799, hour + 3599]) {
      const first = new FeatureWindow(day, 'p:{api:=x}:', second, 2);
      const reads = first.reads;
      // Each bucket counts its own start's last digit, so a count carried to the wrong bucket shows.
      first.fill(
        reads,
        reads.keys.map((key, i) => (i === 0 ? second - 7200 : Number(key.slice(-1)))),
        first.currentKeys.map(() => 3),
        0,
      );
      const settled = first.settledCounts();
      expect(settled?.resetAt).toBe(second - 7200);
      for (const later of [second + 1, second + 90]) {
        const fromWindow = new FeatureWindow(day, 'p:{api:=x}:', later, 2, first);
        const fromCounts = new FeatureWindow(day, 'p:{api:=x}:', later, 2, settled);
        expect(fromCounts.reads.keys).toEqual(fromWindow.reads.keys);
        const answer = fromWindow.reads.keys.map((_, i) => (i === 0 ? second - 7200 : 5));
        const counts = (window: FeatureWindow) =>
          window
            .fill(window.reads, answer, [4], 0)
            .map((limit) => limit.buckets.map(({ start, size, count }) => [start, size, count]));
        expect(counts(fromCounts)).toEqual(counts(fromWindow));
      }
    }
  });

  it('leaves nothing to carry before its counts are known', () => {
    expect(new FeatureWindow(halfMinute, 'p:{api:=x}:', S, 2).settledCounts()).toBeUndefined();
  });
});
