// Calendar periods in real time zones, through daylight saving: known boundaries, and
// properties over generated instants (each period holds its instant, periods tile time, each
// starts at the first minute of its local date).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  calendarPeriod,
  isTimeZone,
  localDateFromParts,
  localDateOf,
  startOfLocalDay,
  type CalendarWindow,
} from './calendar.js';

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('calendar periods', () => {
  it('resets a month anchored on the 15th at 00:00 in Berlin, through the change to summer time', () => {
    const window: CalendarWindow = { unit: 'month', anchor: 15, timeZone: 'Europe/Berlin' };
    const period = calendarPeriod(Date.UTC(2026, 2, 29, 12), window);
    // 00:00 CET on 15 March is 23:00Z the day before; 00:00 CEST on 15 April is 22:00Z.
    expect([iso(period.startMs), iso(period.endMs)]).toEqual(['2026-03-14T23:00:00.000Z', '2026-04-14T22:00:00.000Z']);
    // Before the 15th, the period began on the 15th of the month before.
    expect(iso(calendarPeriod(Date.UTC(2026, 2, 14, 22), window).startMs)).toBe('2026-02-14T23:00:00.000Z');
  });

  it('makes a day of 23 hours and a day of 25 hours one day each', () => {
    const day: CalendarWindow = { unit: 'day', anchor: 1, timeZone: 'Europe/Berlin' };
    const spring = calendarPeriod(Date.UTC(2026, 2, 29, 10), day);
    const autumn = calendarPeriod(Date.UTC(2026, 9, 25, 10), day);
    expect([(spring.endMs - spring.startMs) / HOUR, (autumn.endMs - autumn.startMs) / HOUR]).toEqual([23, 25]);
  });

  it('starts an ISO week on its anchor weekday, and a day skipped by its zone on the next', () => {
    const week = calendarPeriod(Date.UTC(2026, 10, 26, 12), { unit: 'week', anchor: 1, timeZone: 'America/New_York' });
    expect([iso(week.startMs), iso(week.endMs)]).toEqual(['2026-11-23T05:00:00.000Z', '2026-11-30T05:00:00.000Z']);
    // Samoa skipped 30 December 2011: that day's period is empty-handed, the 31st starts at once.
    const samoa = { unit: 'day', anchor: 1, timeZone: 'Pacific/Apia' } as const;
    expect(startOfLocalDay({ year: 2011, month: 12, day: 30 }, 'Pacific/Apia')).toBe(
      startOfLocalDay({ year: 2011, month: 12, day: 31 }, 'Pacific/Apia'),
    );
    const afterSkip = calendarPeriod(Date.UTC(2011, 11, 30, 12), samoa);
    expect(localDateOf(afterSkip.startMs, 'Pacific/Apia')).toMatchObject({ year: 2011, month: 12, day: 31 });
  });

  it('knows a time zone from a name that is not one', () => {
    expect([isTimeZone('Europe/Berlin'), isTimeZone('UTC'), isTimeZone('Mars/Base'), isTimeZone('')]).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });

  it('reads the same local date from the formatted text as from the parts, in every zone', () => {
    const zones = Intl.supportedValuesOf('timeZone');
    expect(zones.length).toBeGreaterThan(300);
    const differ: unknown[] = [];
    for (const [z, timeZone] of zones.entries()) {
      // Around the year and through it: midnights, transitions, both sides of 2000 and 2040.
      for (let i = 0; i < 24; i++) {
        const ms = Date.UTC(
          1990 + ((z + i * 7) % 60),
          (z + i) % 12,
          1 + ((z * 3 + i * 5) % 28),
          (z + i * 11) % 24,
          (i * 17) % 60,
        );
        if (JSON.stringify(localDateOf(ms, timeZone)) !== JSON.stringify(localDateFromParts(ms, timeZone)))
          differ.push({
            timeZone,
            at: iso(ms),
            text: localDateOf(ms, timeZone),
            parts: localDateFromParts(ms, timeZone),
          });
      }
    }
    // A year before 1000 is not what the text is read for; the parts give it.
    expect(localDateOf(Date.UTC(999, 0, 1, 12), 'UTC')).toEqual({ year: 999, month: 1, day: 1, weekday: 2 });
    expect(differ).toEqual([]);
  });

  const ZONES = [
    'UTC',
    'Europe/Berlin',
    'America/New_York',
    'America/Sao_Paulo',
    'Australia/Lord_Howe',
    'Asia/Kolkata',
    'Pacific/Chatham',
    'America/St_Johns',
  ];

  it('gives the day that began last where clocks went back over midnight a minute after it (St John’s, 2002)', () => {
    // 00:01 NDT on 27 October became 23:01 NST on the 26th: for an hour the local date read the 26th again.
    const window = { unit: 'day' as const, anchor: 1, timeZone: 'America/St_Johns' };
    const midnight = Date.UTC(2002, 9, 27, 2, 30);
    const period = calendarPeriod(Date.UTC(2002, 9, 27, 2, 31), window);
    expect(period.startMs).toBe(midnight);
    expect(period.endMs).toBeGreaterThan(Date.UTC(2002, 9, 27, 2, 31));
    expect(calendarPeriod(midnight - 1, window).endMs).toBe(midnight);
  });

  it('holds its instant, tiles time and starts on the first minute of its local date (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2040, 0, 1) }),
        fc.constantFrom(...ZONES),
        fc.oneof(
          fc.constant({ unit: 'day' as const, anchor: 1 }),
          fc.integer({ min: 1, max: 7 }).map((anchor) => ({ unit: 'week' as const, anchor })),
          fc.integer({ min: 1, max: 28 }).map((anchor) => ({ unit: 'month' as const, anchor })),
        ),
        (ms, timeZone, shape) => {
          const window = { ...shape, timeZone };
          const period = calendarPeriod(ms, window);
          expect(period.startMs).toBeLessThanOrEqual(ms);
          expect(period.endMs).toBeGreaterThan(ms);
          expect(calendarPeriod(period.startMs, window)).toEqual(period);
          expect(calendarPeriod(period.endMs, window).startMs).toBe(period.endMs);
          expect(calendarPeriod(period.startMs - 1, window).endMs).toBe(period.startMs);
          const first = localDateOf(period.startMs, timeZone);
          const before = localDateOf(period.startMs - 60_000, timeZone);
          expect(before.year * 10_000 + before.month * 100 + before.day).toBeLessThan(
            first.year * 10_000 + first.month * 100 + first.day,
          );
          if (shape.unit === 'week') expect(first.weekday).toBe(shape.anchor);
          if (shape.unit === 'month') expect(first.day).toBe(shape.anchor);
          const hours = (period.endMs - period.startMs) / HOUR;
          const days = shape.unit === 'day' ? 1 : shape.unit === 'week' ? 7 : undefined;
          if (days !== undefined) expect(Math.abs(hours - days * 24)).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 1500 },
    );
  });
});
