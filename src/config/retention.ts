/**
 * Usage history's archives, written as Graphite's storage-schemas.conf writes retentions:
 * `1s:6h,1m:30d,1h:2y` keeps a point a second for six hours, a minute for thirty days and
 * an hour for two years.
 */

/** One resolution and how long its points are kept, both in seconds. */
export interface Archive {
  readonly resolution: number;
  readonly keepSeconds: number;
}

/** Graphite's units (storage-schemas.conf, and its relative times), in seconds. */
export const UNIT_SECONDS: Readonly<Record<string, number>> = {
  s: 1,
  sec: 1,
  m: 60,
  min: 60,
  h: 3600,
  d: 86_400,
  w: 604_800,
  y: 31_536_000,
};

const PART = /^([0-9]+)([a-z]+)$/;

/**
 * The archives, finest first, or a message saying what is wrong: each resolution must be a
 * multiple of the one before (a coarser point sums whole finer ones) and keep its points
 * longer, and the coarsest must be whole minutes.
 */
export function parseRetention(text: string): readonly Archive[] | string {
  const archives: Archive[] = [];
  for (const part of text.split(',').map((piece) => piece.trim())) {
    const [resolution, keep, extra] = part.split(':').map((piece) => seconds(piece.trim()));
    if (resolution === undefined || keep === undefined || extra !== undefined) {
      return `${JSON.stringify(part)} is not resolution:keep, such as 1m:30d (units s, min or m, h, d, w, y)`;
    }
    if (keep < resolution) return `${JSON.stringify(part)} keeps less than one point`;
    const finer = archives.at(-1);
    if (finer && (resolution <= finer.resolution || resolution % finer.resolution !== 0)) {
      return `${JSON.stringify(part)}: each resolution must be a multiple of the one before it`;
    }
    if (finer && keep <= finer.keepSeconds) return `${JSON.stringify(part)}: each archive must keep its points longer than the one before it`;
    archives.push({ resolution, keepSeconds: keep });
  }
  const coarsest = archives.at(-1);
  if (!coarsest) return 'no archive given';
  if (coarsest.resolution % 60 !== 0) return 'the coarsest resolution must be whole minutes: clients are kept per minute';
  return archives;
}

/** `6h` → 21600; undefined when not a positive whole amount of a known unit. */
export function seconds(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const [, amount, unitName] = PART.exec(text) ?? [];
  const unit = unitName === undefined ? undefined : UNIT_SECONDS[unitName];
  if (unit === undefined) return undefined;
  const value = Number(amount) * unit;
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** 21600 → `6h`: the largest of s, min, h, d, y that divides it. */
export function formatSpan(seconds: number): string {
  for (const [unit, size] of [
    ['y', 31_536_000],
    ['d', 86_400],
    ['h', 3600],
    ['min', 60],
  ] as const) {
    if (seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}
