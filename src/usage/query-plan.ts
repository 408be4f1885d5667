import { DEFAULTS } from '../config/defaults.js';
import type { ErrorCode } from '../config/error-codes.js';
import { seconds, type Archive } from '../config/retention.js';
import { dayExists, timeExists } from '../config/iso-time.js';

/** A /usage question memgate cannot answer as asked: a 400 with this code. */
export class UsageQueryError extends Error {
  constructor(
    readonly code: Extract<
      ErrorCode,
      'invalid_time' | 'invalid_range' | 'unknown_event' | 'invalid_event' | 'usage_query_too_large'
    >,
    message: string,
  ) {
    super(message);
    this.name = 'UsageQueryError';
  }
}

/** A range as asked: times as written (epoch seconds, ISO 8601, `-1h`, `now`), undefined for the default. */
export interface RangeParams {
  readonly from?: string | undefined;
  readonly until?: string | undefined;
}

export interface SeriesParams extends RangeParams {
  readonly step?: string | undefined;
  readonly maxDataPoints?: string | undefined;
  /** Asking for one client: its points are kept per minute at the finest. */
  readonly perClient: boolean;
}

/** How a series is read: one archive, and points `step` apart from `from` while before `until`. */
export interface SeriesPlan {
  /** As asked, in epoch seconds. */
  readonly from: number;
  readonly until: number;
  /** The first point's start: `from` rounded down to a step. */
  readonly firstPoint: number;
  readonly step: number;
  readonly resolution: number;
  readonly points: number;
}

/** Steps a series picks from when none is asked, as people read them: 1 s to 30 days. */
const ROUND_STEPS = [
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400, 172_800, 604_800,
  1_209_600, 2_592_000,
];

/** Seconds since the epoch (up to 12 digits), ISO 8601, or `-1h`, `-30d`, `now`. */
export function parseTime(text: string, nowSeconds: number, name: string): number {
  const written = text.trim();
  if (written === 'now') return nowSeconds;
  if (/^[0-9]{1,12}$/.test(written)) return Number(written);
  const relative = /^(?:now)?-(.+)$/.exec(written);
  if (relative) {
    const span = seconds(relative[1]);
    if (span !== undefined) return nowSeconds - span;
  }
  // ISO 8601: a date, with a time and zone or not. Without a zone it is UTC, as a date alone
  // is (Date.parse would read the server's zone): one answer, wherever memgate runs.
  const [, year, month, day, time, zone] =
    /^([0-9]{4})-([0-9]{2})-([0-9]{2})([T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?$/.exec(
      written,
    ) ?? [];
  if (year !== undefined && (time !== undefined || zone === undefined)) {
    const ms = Date.parse(time !== undefined && zone === undefined ? `${written}Z` : written);
    // Date.parse reads February 30th as March 2nd: the day and the time must exist.
    const [hours = 0, minutes = 0, secs = 0] = (time?.slice(1).split(':') ?? []).map(Number);
    if (
      Number.isFinite(ms) &&
      dayExists(Number(year), Number(month), Number(day)) &&
      timeExists(hours, minutes, Math.floor(secs))
    ) {
      return Math.floor(ms / 1000);
    }
  }
  throw new UsageQueryError(
    'invalid_time',
    `${name} must be epoch seconds, ISO 8601 (2026-11-23T10:00:00Z), or relative such as -1h, -30d or now (got ${JSON.stringify(text)})`,
  );
}

/** The range asked, in epoch seconds: the last hour by default; `from` must be before `until`. */
export function parseRange({ from, until }: RangeParams, nowMs: number): { from: number; until: number } {
  const now = endOfSecond(nowMs);
  const end = until === undefined ? now : parseTime(until, now, 'until');
  const start = from === undefined ? end - DEFAULTS.usageDefaultRangeSeconds : parseTime(from, now, 'from');
  if (start >= end) throw new UsageQueryError('invalid_range', `from (${start}) must be before until (${end})`);
  return { from: start, until: end };
}

/** A positive whole number, or undefined when not given. */
export function positiveWhole(text: string | undefined, name: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^[0-9]{1,15}$/.test(text.trim()) || Number(text) < 1) {
    throw new UsageQueryError('invalid_range', `${name} must be a positive whole number (got ${JSON.stringify(text)})`);
  }
  return Number(text);
}

/**
 * The finest archive that still holds `from` (a client's curve: the finest in whole
 * minutes), whose resolution keeps the points at most `maxPoints`; the coarsest when none
 * reaches back that far.
 */
export function pickArchive(
  archives: readonly Archive[],
  from: number,
  nowMs: number,
  options: { perClient: boolean; span?: number; maxPoints?: number },
): Archive {
  const maxPoints = options.maxPoints ?? DEFAULTS.usageMaxPoints;
  const age = endOfSecond(nowMs) - from;
  const usable = archives.filter(({ resolution }) => !options.perClient || resolution % 60 === 0);
  return (
    usable.find(
      ({ resolution, keepSeconds }) =>
        keepSeconds >= age && (options.span === undefined || options.span / resolution <= maxPoints),
    ) ?? coarsest(usable)
  );
}

/** Which archive a series reads and at which step, or a UsageQueryError. */
export function planSeries(params: SeriesParams, archives: readonly Archive[], nowMs: number): SeriesPlan {
  const { from, until } = parseRange(params, nowMs);
  const askedStep = positiveWhole(params.step, 'step');
  if (askedStep !== undefined && askedStep > DEFAULTS.usageMaxStepSeconds) {
    throw new UsageQueryError(
      'invalid_range',
      `step must be at most ${DEFAULTS.usageMaxStepSeconds} s, a year (got ${askedStep})`,
    );
  }
  const maxDataPoints = positiveWhole(params.maxDataPoints, 'maxDataPoints') ?? DEFAULTS.usageDefaultMaxDataPoints;
  if (maxDataPoints > DEFAULTS.usageMaxPoints) {
    throw new UsageQueryError(
      'invalid_range',
      `maxDataPoints must be at most ${DEFAULTS.usageMaxPoints} (got ${maxDataPoints})`,
    );
  }
  const { resolution } = pickArchive(archives, from, nowMs, { perClient: params.perClient });
  const wanted = askedStep ?? Math.ceil((until - from) / maxDataPoints);
  const step =
    askedStep === undefined
      ? (ROUND_STEPS.find((round) => round >= wanted && round % resolution === 0) ?? roundUp(wanted, resolution))
      : roundUp(wanted, resolution);
  const firstPoint = from - (from % step);
  const points = Math.ceil((until - firstPoint) / step);
  if (points > DEFAULTS.usageMaxPoints) {
    throw new UsageQueryError(
      'invalid_range',
      `${points} points of ${step} s from ${from} to ${until}: at most ${DEFAULTS.usageMaxPoints} in one answer; ask for a larger step or a shorter range`,
    );
  }
  return { from, until, firstPoint, step, resolution, points };
}

/** `now` in epoch seconds: the end of the current second, so what it has counted is in a range ending now. */
export function endOfSecond(nowMs: number): number {
  return Math.floor(nowMs / 1000) + 1;
}

/** The last archive; parseRetention never gives none. */
export function coarsest(archives: readonly Archive[]): Archive {
  const last = archives.at(-1);
  if (!last) throw new Error('usage history has no archive');
  return last;
}

/** `value` rounded up to a multiple of `unit`. */
function roundUp(value: number, unit: number): number {
  return Math.ceil(value / unit) * unit;
}
