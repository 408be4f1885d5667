/** Seconds per unit suffix accepted in policy files. */
const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
type Unit = keyof typeof UNIT_SECONDS;

const DURATION_PATTERN = /^([0-9]+)([smhd])$/;

/**
 * Parses `30s`, `5m`, `1h`, `1d` or a plain number of seconds (number or digit string).
 * Returns whole seconds, or undefined when the value is not a positive whole duration.
 */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^[0-9]+$/.test(text)) return parseDuration(Number(text));
  const match = DURATION_PATTERN.exec(text);
  if (!match) return undefined;
  const amount = Number(match[1]);
  const seconds = amount * UNIT_SECONDS[match[2] as Unit];
  return Number.isSafeInteger(seconds) && seconds > 0 ? seconds : undefined;
}

/** Formats seconds with the largest unit that divides them exactly: 60 → `1m`, 90 → `90s`. */
export function formatDuration(seconds: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    const size = UNIT_SECONDS[unit];
    if (seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}
