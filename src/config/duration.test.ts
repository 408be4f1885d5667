import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from './duration.js';

describe('parseDuration', () => {
  it.each([
    ['30s', 30],
    ['5m', 300],
    ['1h', 3600],
    ['1d', 86_400],
    [' 2m ', 120],
    ['90', 90],
    [45, 45],
  ])('reads %j as %i seconds', (input, seconds) => {
    expect(parseDuration(input)).toBe(seconds);
  });

  it.each([0, -5, 1.5, '0s', '1.5m', '1w', 'm', '', '5 m', '-1s', null, undefined, {}, Number.MAX_VALUE, '9999999999999999d'])(
    'refuses %j',
    (input) => {
      expect(parseDuration(input)).toBeUndefined();
    },
  );
});

describe('formatDuration', () => {
  it.each([
    [60, '1m'],
    [90, '90s'],
    [3600, '1h'],
    [7200, '2h'],
    [86_400, '1d'],
    [5400, '90m'],
  ])('writes %i seconds as %s', (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });

  it('round-trips through parseDuration', () => {
    for (const seconds of [1, 59, 61, 120, 3599, 3660, 86_399, 172_800]) {
      expect(parseDuration(formatDuration(seconds))).toBe(seconds);
    }
  });
});
