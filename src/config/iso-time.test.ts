import { describe, expect, it } from 'vitest';
import { dayExists, parseZonedTime } from './iso-time.js';

describe('parseZonedTime', () => {
  it('reads times with their zone', () => {
    expect(parseZonedTime('2026-12-31T23:59:59Z')).toBe(Date.UTC(2026, 11, 31, 23, 59, 59));
    expect(parseZonedTime('2026-12-31T18:00:00-05:00')).toBe(Date.UTC(2026, 11, 31, 23));
    expect(parseZonedTime('2028-02-29T00:00Z')).toBe(Date.UTC(2028, 1, 29));
    expect(parseZonedTime('2026-06-01T12:00:00.250+02:00')).toBe(Date.UTC(2026, 5, 1, 10, 0, 0, 250));
  });

  it.each([
    '2026-02-31T23:59:59Z', // Date.parse: March 3rd
    '2026-02-29T00:00:00Z', // not a leap year
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-10T00:00:00Z',
    '2026-01-00T00:00:00Z',
    '2026-01-01T24:00:00Z', // Date.parse: the next day
    '2026-01-01T23:60:00Z',
    '2026-01-01T23:59:60Z',
    '2026-01-01T12:00:00+24:00',
    '2026-01-01T12:00:00+05:60',
    '2026-01-01T12:00:00', // no zone
    '2026-01-01',
    'tomorrow',
  ])('refuses %s', (text) => {
    expect(parseZonedTime(text)).toBeUndefined();
  });

  it('knows the length of every month, leap years included', () => {
    expect([28, 29, 30, 31].map((day) => dayExists(2026, 2, day))).toEqual([true, false, false, false]);
    expect([29, 30].map((day) => dayExists(2000, 2, day))).toEqual([true, false]);
    expect(dayExists(1900, 2, 29)).toBe(false);
    expect(dayExists(2026, 12, 31)).toBe(true);
  });
});
