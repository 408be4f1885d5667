// What a calendar window of a policy is (issue 27): a day, an ISO week or a month of a time
// zone. Only the words and their checks live here, since config is a leaf; the periods
// themselves are counted out in counting/calendar.ts.

export type CalendarUnit = 'day' | 'week' | 'month';

export interface CalendarWindow {
  readonly unit: CalendarUnit;
  /**
   * Where a period starts: for a month, the day of the month (1 to 28, so every month has it);
   * for a week, the ISO weekday (1 Monday to 7 Sunday); 1 for a day, which has no anchor.
   */
  readonly anchor: number;
  /** An IANA time zone, e.g. `Europe/Berlin`; `UTC` for UTC. */
  readonly timeZone: string;
}

/** The words `window` takes for a calendar period, and what each is. */
export const CALENDAR_WINDOWS: Readonly<Record<string, CalendarUnit>> = { '1d': 'day', '1w': 'week', '1mo': 'month' };

/**
 * A calendar unit's nominal length in seconds: what decisions and RateLimit-Policy report as
 * its `window` (a month as 31 days, its longest). resetSeconds and retryAfter are exact to the
 * period's real end; a day of daylight saving's change is 23 or 25 hours.
 */
export const CALENDAR_NOMINAL_SECONDS: Readonly<Record<CalendarUnit, number>> = {
  day: 86_400,
  week: 7 * 86_400,
  month: 31 * 86_400,
};

/** ISO weekdays by name, for a week's anchor. */
export const WEEKDAY_NUMBERS: Readonly<Record<string, number>> = {
  monday: 1,
  tuesday: 2,
  wednesday: 3,
  thursday: 4,
  friday: 5,
  saturday: 6,
  sunday: 7,
};

/** Whether `timeZone` is a zone Intl knows (an IANA name, or UTC). */
export function isTimeZone(timeZone: string): boolean {
  return canonicalTimeZone(timeZone) !== undefined;
}

/** A zone's name as Intl spells it (`europe/berlin` is `Europe/Berlin`, `Etc/UTC` is `UTC`), or undefined for a zone it does not know. */
export function canonicalTimeZone(timeZone: string): string | undefined {
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
    return resolved === 'Etc/UTC' || resolved === 'Etc/GMT' ? 'UTC' : resolved;
  } catch {
    return undefined;
  }
}

/** How a calendar window is written back: `1mo` anchored on the 15th in Europe/Berlin. */
export function describeCalendarWindow({ unit, anchor, timeZone }: CalendarWindow): string {
  const word = Object.keys(CALENDAR_WINDOWS).find((key) => CALENDAR_WINDOWS[key] === unit) ?? unit;
  const weekday = Object.keys(WEEKDAY_NUMBERS).find((name) => WEEKDAY_NUMBERS[name] === anchor);
  const from = unit === 'month' ? ` from day ${anchor}` : unit === 'week' ? ` from ${weekday}` : '';
  return `${word}${from} in ${timeZone}`;
}

/**
 * The calendar window of `unit` with a policy's `anchor` and `timezone` (either may be absent):
 * null when one is faulty (each fault told to `report`), undefined for a day in UTC, which is
 * the epoch-aligned day memgate always counted, under the keys it always had.
 */
export function calendarWindowOf(
  unit: CalendarUnit,
  fields: { readonly anchor?: unknown; readonly timezone?: unknown },
  report: (field: 'anchor' | 'timezone', text: string) => void,
): CalendarWindow | undefined | null {
  let timeZone: string | undefined = 'UTC';
  if (fields.timezone !== undefined) {
    // Kept as written: Intl's own spelling of a zone changes between ICU versions (Asia/Kolkata
    // reads Asia/Calcutta), and the name is part of the counters' keys.
    const written = typeof fields.timezone === 'string' ? fields.timezone.trim() : '';
    const canonical = canonicalTimeZone(written);
    if (canonical === undefined) {
      report('timezone', `must be an IANA time zone such as Europe/Berlin, America/New_York or UTC (got ${JSON.stringify(fields.timezone)})`);
      timeZone = undefined;
    } else timeZone = canonical === 'UTC' ? 'UTC' : written;
  }
  const anchor = fields.anchor === undefined ? 1 : anchorOf(unit, fields.anchor, (text) => { report('anchor', text); });
  if (anchor === undefined || timeZone === undefined) return null;
  return unit === 'day' && timeZone === 'UTC' ? undefined : { unit, anchor, timeZone };
}

function anchorOf(unit: CalendarUnit, raw: unknown, report: (text: string) => void): number | undefined {
  if (unit === 'day') {
    report('a day has no anchor: it starts at local midnight; anchors are for weeks (a weekday) and months (a day of the month)');
    return undefined;
  }
  if (unit === 'week') {
    const weekday = typeof raw === 'string' ? WEEKDAY_NUMBERS[raw.trim().toLowerCase()] : raw;
    if (typeof weekday === 'number' && Number.isInteger(weekday) && weekday >= 1 && weekday <= 7) return weekday;
    report(`a week's anchor is its first weekday: monday to sunday, or 1 (Monday) to 7 (got ${JSON.stringify(raw)})`);
    return undefined;
  }
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 1 && raw <= 28) return raw;
  report(`a month's anchor is the day of the month it starts on, 1 to 28, so every month has it (got ${JSON.stringify(raw)})`);
  return undefined;
}
