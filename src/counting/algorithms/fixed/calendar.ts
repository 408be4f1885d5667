// Calendar periods (issue 27, part 1): a day, an ISO week or a month of a time zone, from local
// midnight to local midnight, whatever daylight saving does in between (a day of 23 or 25 hours
// is one day). The foundation of `window: 1d | 1w | 1mo` with `anchor` and `timezone`; pure time
// arithmetic over Intl (Node's full ICU time-zone data), nothing counted here.

import type { CalendarWindow } from '../../../config/calendar-window.js';

export type { CalendarUnit, CalendarWindow } from '../../../config/calendar-window.js';
export { isTimeZone } from '../../../config/calendar-window.js';

/** One period: [startMs, endMs). */
export interface CalendarPeriod {
  readonly startMs: number;
  readonly endMs: number;
}

/** A local date, as numbers: month 1 to 12. */
interface LocalDate {
  readonly year: number;
  readonly month: number;
  readonly day: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      weekday: 'short',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

const WEEKDAYS: Readonly<Record<string, number>> = { Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6, Sun: 7 };

/** What the formatter writes for an instant in Node's ICU: `Sun, 3/29/2026`. */
const FORMATTED = /^([A-Z][a-z]{2}), (\d{1,2})\/(\d{1,2})\/(\d{4})$/;

/**
 * The local date and ISO weekday of the instant `ms` in `timeZone`. Read from the formatted
 * text, a quarter of the time formatToParts takes (a period is found in a hundred or more
 * look-ups); from the parts when the text is not of that form (another ICU, a year before 1000).
 */
export function localDateOf(ms: number, timeZone: string): LocalDate & { readonly weekday: number } {
  const formatter = formatterOf(timeZone);
  const match = FORMATTED.exec(formatter.format(ms));
  const weekday = match ? WEEKDAYS[match[1] ?? ''] : undefined;
  if (match && weekday !== undefined) {
    return { year: Number(match[4]), month: Number(match[2]), day: Number(match[3]), weekday };
  }
  return localDateFromParts(ms, timeZone);
}

/** The local date and ISO weekday of `ms` in `timeZone`, from the formatter's parts. */
export function localDateFromParts(ms: number, timeZone: string): LocalDate & { readonly weekday: number } {
  let year = 0;
  let month = 0;
  let day = 0;
  let weekday = 0;
  for (const part of formatterOf(timeZone).formatToParts(ms)) {
    if (part.type === 'year') year = Number(part.value);
    else if (part.type === 'month') month = Number(part.value);
    else if (part.type === 'day') day = Number(part.value);
    else if (part.type === 'weekday') weekday = WEEKDAYS[part.value] ?? 0;
  }
  return { year, month, day, weekday };
}

/** A local date as one comparable number: 20261125. */
const ordinal = ({ year, month, day }: LocalDate) => year * 10_000 + month * 100 + day;

/** The date `days` after (or before) `date`, by the civil calendar. */
function addDays(date: LocalDate, days: number): LocalDate {
  const moved = new Date(Date.UTC(date.year, date.month - 1, date.day + days));
  return { year: moved.getUTCFullYear(), month: moved.getUTCMonth() + 1, day: moved.getUTCDate() };
}

const MINUTE = 60_000;
const STEP = 15 * MINUTE;
/** Offsets from UTC lie within −12 h and +14 h: a local date starts within this of its UTC midnight. */
const REACH = 15 * 60 * MINUTE;

/**
 * The first instant whose local date in `timeZone` is `date` (or later): local midnight, or
 * the end of a daylight-saving gap that swallowed it. Found by 15-minute steps from well before,
 * then by minutes: offsets change on whole minutes, and a local date may briefly go back an
 * hour at a transition back (Brazil's ended at midnight), so the first crossing is taken.
 */
export function startOfLocalDay(date: LocalDate, timeZone: string): number {
  const target = ordinal(date);
  const utcMidnight = Date.UTC(date.year, date.month - 1, date.day);
  let before = utcMidnight - REACH;
  let at = before + STEP;
  while (ordinal(localDateOf(at, timeZone)) < target) {
    before = at;
    at += STEP;
  }
  // The crossing lies in (before, at]: the first minute that reaches the date.
  while (at - before > MINUTE) {
    const middle = before + Math.floor((at - before) / 2 / MINUTE) * MINUTE;
    if (ordinal(localDateOf(middle, timeZone)) >= target) at = middle;
    else before = middle;
  }
  return at;
}

/** The local date a period of `window` holding local date `date` starts on. */
function periodStartDate(date: LocalDate & { weekday: number }, window: CalendarWindow): LocalDate {
  if (window.unit === 'day') return date;
  if (window.unit === 'week') return addDays(date, -((date.weekday - window.anchor + 7) % 7));
  if (date.day >= window.anchor) return { year: date.year, month: date.month, day: window.anchor };
  const previous = new Date(Date.UTC(date.year, date.month - 2, window.anchor));
  return { year: previous.getUTCFullYear(), month: previous.getUTCMonth() + 1, day: window.anchor };
}

/** The local date the period starting on `start` ends on (the next one's first day). */
function nextStartDate(start: LocalDate, window: CalendarWindow): LocalDate {
  if (window.unit === 'day') return addDays(start, 1);
  if (window.unit === 'week') return addDays(start, 7);
  const next = new Date(Date.UTC(start.year, start.month, window.anchor));
  return { year: next.getUTCFullYear(), month: next.getUTCMonth() + 1, day: window.anchor };
}

/** The period of `window` holding the instant `ms`: from local midnight of its first day to that of the next period's. */
export function calendarPeriod(ms: number, window: CalendarWindow): CalendarPeriod {
  const local = localDateOf(ms, window.timeZone);
  let start = periodStartDate(local, window);
  let startMs = startOfLocalDay(start, window.timeZone);
  // Within a transition back over midnight, the local date can read the day before the one
  // already begun: the period is the one that began last.
  if (startMs > ms) {
    start = periodStartDate({ ...addDays(local, -1), weekday: ((local.weekday + 5) % 7) + 1 }, window);
    startMs = startOfLocalDay(start, window.timeZone);
  }
  let next = nextStartDate(start, window);
  let endMs = startOfLocalDay(next, window.timeZone);
  // Or the local date reads a day whose next has already begun: clocks went back over
  // midnight a minute after it (St John's did at 00:01 until 2011), so the hour after the
  // next day's midnight reads the day before again. The period is still the one that began last.
  if (endMs <= ms) {
    start = next;
    startMs = endMs;
    next = nextStartDate(start, window);
    endMs = startOfLocalDay(next, window.timeZone);
  }
  return { startMs, endMs };
}

/**
 * What a calendar window's periods may last, at most: a day of 26 hours, a week or month with
 * one (Antarctica/Troll moves its clocks by 2 hours; most zones by 1).
 */
const LONGEST_SECONDS: Readonly<Record<CalendarWindow['unit'], number>> = {
  day: 26 * 3600,
  week: 7 * 86_400 + 2 * 3600,
  month: 31 * 86_400 + 2 * 3600,
};

/**
 * A calendar window as a bucket level: its periods in whole seconds, with the last two found
 * remembered, since a check asks for the current period and, near its end, for the next one
 * (for an instance whose clock runs ahead). `tag` names the level in counter keys: two windows
 * that share a tag share their buckets.
 */
export class CalendarLevel {
  readonly tag: string;
  readonly longestSeconds: number;
  private recent: { start: number; size: number }[] = [];

  constructor(readonly window: CalendarWindow) {
    const prefix = window.unit === 'day' ? 'd' : window.unit === 'week' ? `w${window.anchor}` : `mo${window.anchor}`;
    this.tag = `${prefix}@${window.timeZone}`;
    this.longestSeconds = LONGEST_SECONDS[window.unit];
  }

  /** The period holding second `second`: its start (epoch seconds) and length in seconds. */
  periodAt(second: number): { start: number; size: number } {
    for (const period of this.recent) if (period.start <= second && second < period.start + period.size) return period;
    const { startMs, endMs } = calendarPeriod(second * 1000, this.window);
    const start = Math.floor(startMs / 1000);
    const period = { start, size: Math.floor(endMs / 1000) - start };
    this.recent = [period, ...this.recent.slice(0, 1)];
    return period;
  }
}

const levels = new Map<string, CalendarLevel>();

/** The one level of a calendar window, so every plan of it shares the periods found. */
export function calendarLevel(window: CalendarWindow): CalendarLevel {
  const level = new CalendarLevel(window);
  const known = levels.get(level.tag);
  if (known) return known;
  levels.set(level.tag, level);
  return level;
}
