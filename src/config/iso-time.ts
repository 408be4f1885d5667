/**
 * ISO 8601 times as policy files and queries write them. Date.parse reads a day that does
 * not exist (February 31st) as one that does (March 3rd): every field is checked first.
 */

/** Whether year-month-day names a day of the Gregorian calendar (month 1 to 12). */
export function dayExists(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  // Day 0 of the next month is the last of this one.
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Whether hours, minutes and seconds name a time of a day: 00:00:00 to 23:59:59. */
export function timeExists(hours: number, minutes: number, seconds = 0): boolean {
  return hours <= 23 && minutes <= 59 && seconds <= 59;
}

const ZONED_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

/**
 * Milliseconds since the epoch of a time with its zone (`2026-12-31T23:59:59Z`,
 * `2026-12-31T18:00:00-05:00`), or undefined when it is not one or names a day, a time or
 * a zone that does not exist.
 */
export function parseZonedTime(text: string): number | undefined {
  const fields = ZONED_TIME.exec(text);
  if (!fields) return undefined;
  const [, year, month, day, hours, minutes, seconds = '0', zoneHours = '0', zoneMinutes = '0'] = fields;
  const exists =
    dayExists(Number(year), Number(month), Number(day)) &&
    timeExists(Number(hours), Number(minutes), Number(seconds)) &&
    timeExists(Number(zoneHours), Number(zoneMinutes));
  const ms = exists ? Date.parse(text) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}
