import { describe, expect, it } from 'vitest';
import { parseRetention, type Archive } from '../config/retention.js';
import { parseTime, planSeries, UsageQueryError } from './query-plan.js';

const ARCHIVES = parseRetention('1s:6h,1m:30d,1h:2y') as readonly Archive[];
/** 2026-11-23T10:00:30.250Z: `now` is the end of its second. */
const NOW_MS = Date.UTC(2026, 10, 23, 10, 0, 30, 250);
const NOW = Math.floor(NOW_MS / 1000) + 1;

describe('parseTime', () => {
  it.each([
    ['now', NOW],
    ['1795428000', 1795428000],
    ['-1h', NOW - 3600],
    ['now-5min', NOW - 300],
    ['-5m', NOW - 300],
    ['-30d', NOW - 30 * 86_400],
    ['-2y', NOW - 2 * 31_536_000],
    ['-1w', NOW - 604_800],
    ['2026-11-23', Date.UTC(2026, 10, 23) / 1000],
    ['2026-11-23T10:00:00Z', Date.UTC(2026, 10, 23, 10) / 1000],
    ['2026-11-23T11:00:00+01:00', Date.UTC(2026, 10, 23, 10) / 1000],
    ['2026-11-23T10:00:00.999Z', Date.UTC(2026, 10, 23, 10) / 1000],
    ['2026-11-23T10:00:00', Date.UTC(2026, 10, 23, 10) / 1000],
    ['2026-11-23 10:00', Date.UTC(2026, 10, 23, 10) / 1000],
  ])('reads %s', (text, seconds) => {
    expect(parseTime(text, NOW, 'from')).toBe(seconds);
  });

  it.each([
    '',
    'yesterday',
    '-1',
    '1h',
    '-1.5h',
    '2026-13-01',
    '2026-02-30T00:00:00Z',
    '2026-02-31',
    '2026-01-01T24:00:00Z',
    '2026-01-01T23:59:60Z',
    '17954280000000',
    '-0s',
    'now+1h',
  ])('refuses %j with invalid_time', (text) => {
    expect(() => parseTime(text, NOW, 'from')).toThrow(UsageQueryError);
  });
});

describe('planSeries', () => {
  const plan = (params: Record<string, string>, perClient = false) =>
    planSeries({ ...params, perClient }, ARCHIVES, NOW_MS);

  it('gives the last hour a minute apart by default, from the 1 s archive', () => {
    expect(plan({})).toMatchObject({ from: NOW - 3600, until: NOW, step: 60, resolution: 1, points: 61 });
  });

  it('reads the finest archive still reaching back to from, and a client from minutes at the finest', () => {
    expect(plan({ from: '-6h' }).resolution).toBe(1);
    expect(plan({ from: '-7h' }).resolution).toBe(60);
    expect(plan({ from: '-31d' }).resolution).toBe(3600);
    expect(plan({ from: '-5min' }, true).resolution).toBe(60);
  });

  it('rounds a step up to the archive, and picks round steps for maxDataPoints', () => {
    expect(plan({ from: '-7h', step: '90' }).step).toBe(120);
    expect(plan({ from: '-1y', maxDataPoints: '400' }).step).toBe(86_400);
    expect(plan({ from: '-5min', maxDataPoints: '1000' }).step).toBe(1);
  });

  it('aligns the first point to the step and counts the points', () => {
    const { firstPoint, points, step } = plan({ from: '1795420000', until: '1795420600', step: '300' });
    expect(firstPoint % step).toBe(0);
    expect(points).toBe(3);
  });

  it('refuses a step over a year', () => {
    expect(() => plan({ step: '999999999999999' })).toThrow(/at most 31536000 s/);
  });

  it('refuses more than 10,000 points', () => {
    expect(() => plan({ from: '-1y', step: '3000' })).not.toThrow();
    expect(() => plan({ from: '-7d', step: '60' })).toThrow(/at most 10000/);
  });
});
