import { describe, expect, it } from 'vitest';
import { stepName } from './chart.js';
import { Timeline } from './timeline.js';

const T0 = Date.UTC(2026, 0, 1) / 1000;

describe('a timeline of denials', () => {
  it('counts per minute while the log spans no more minutes than its points', () => {
    const timeline = new Timeline(5);
    for (const [second, side] of [
      [T0, 0],
      [T0 + 59, 1],
      [T0 + 61, 1],
      [T0 + 299, 0],
    ] as const) {
      timeline.reach(second);
      timeline.count('api', side, second);
    }
    expect(timeline.step).toBe(60);
    expect(timeline.points('api')).toEqual([
      { t: T0, current: 1, new: 1 },
      { t: T0 + 60, current: 0, new: 1 },
      { t: T0 + 120, current: 0, new: 0 },
      { t: T0 + 180, current: 0, new: 0 },
      { t: T0 + 240, current: 1, new: 0 },
    ]);
    // Every series has the whole axis, one that counted nothing too.
    expect(timeline.points('quiet')).toHaveLength(5);
  });

  it('grows its step as the log goes on, keeping every count', () => {
    const timeline = new Timeline(5);
    // One denial a minute for 6 minutes: 6 minutes do not fit 5 points, so 5-minute steps.
    for (let minute = 0; minute < 6; minute++) {
      timeline.reach(T0 + minute * 60);
      timeline.count('api', 1, T0 + minute * 60);
    }
    expect(timeline.step).toBe(300);
    expect(timeline.points('api')).toEqual([
      { t: T0, current: 0, new: 5 },
      { t: T0 + 300, current: 0, new: 1 },
    ]);
  });

  it('keeps within its points whatever span the log covers: a year of minutes in 500', () => {
    const timeline = new Timeline(500);
    let denials = 0;
    for (let second = T0; second < T0 + 366 * 86_400; second += 600) {
      timeline.reach(second);
      timeline.count('api', 0, second);
      denials++;
    }
    const points = timeline.points('api');
    expect(points.length).toBeLessThanOrEqual(500);
    expect(points.length).toBeGreaterThan(250);
    expect(timeline.step).toBe(86_400);
    expect(points.reduce((sum, point) => sum + point.current, 0)).toBe(denials);
  });

  it('names its step for the chart', () => {
    expect([60, 300, 1800, 3600, 10_800, 86_400, 172_800].map(stepName)).toEqual([
      'minute',
      '5 minutes',
      '30 minutes',
      'hour',
      '3 hours',
      'day',
      '2 days',
    ]);
  });
});
