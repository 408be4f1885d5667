// What `npm run usage` prints: memgate's /usage and /usage/top answers as sparklines or a
// table. Pure functions of the answers, so the layout is tested without a server.
import { markdownTable } from 'markdown-table';
import { formatSpan } from '../config/retention.js';
import type { AnsweredPoint, SeriesAnswer, TopAnswer } from '../usage/usage-history.js';
import { EVENT_COUNTS, OUTCOMES, type Counts, type EventCount, type Outcome } from '../usage/usage-store.js';

/** Eight heights; a step with no decision is blank, so a gap never reads as a little traffic. */
export const SPARK_LEVELS = '▁▂▃▄▅▆▇█';

/** The first column of a sparkline row: the outcome's name, padded. */
export const LABEL_WIDTH = 10;

/** Kept free on the right of a sparkline for `  min 1,234  max 56,789`. */
export const RIGHT_WIDTH = 26;

/** Most points a sparkline row shows in `columns` of terminal, at least 10 and at most memgate's cap. */
export function sparkWidth(columns: number): number {
  return Math.min(10_000, Math.max(10, columns - LABEL_WIDTH - RIGHT_WIDTH));
}

/** A client's step whose count is unknown (it was below the heaviest): not a blank, which means 0. */
export const NOT_TRACKED = '·';

/**
 * One character per value, from 0 to `top` (by default the highest): blank for 0, at least ▁
 * for any count, NOT_TRACKED for a 0 that `unknown` marks.
 */
export function sparkline(
  values: readonly number[],
  {
    top = values.reduce((a, b) => Math.max(a, b), 0),
    unknown = [],
  }: { top?: number; unknown?: readonly boolean[] } = {},
): string {
  return values
    .map((value, index) => {
      if (value <= 0 && unknown[index]) return NOT_TRACKED;
      if (value <= 0 || top <= 0) return ' ';
      const level = Math.min(SPARK_LEVELS.length, Math.max(1, Math.ceil((value / top) * SPARK_LEVELS.length)));
      return SPARK_LEVELS[level - 1] ?? ' ';
    })
    .join('');
}

export type Point = AnsweredPoint;

/**
 * Whether a point's count of `outcome` is not fully known: a client's step where it went
 * unnamed in some part, so the count is a lower bound (unknown when it is 0).
 */
export function untracked(point: Point, outcome: EventCount): boolean {
  return (outcome === 'allowed' || outcome === 'denied') && point.tracked?.[outcome] === false;
}

/**
 * The outcomes shown for `sum`: shadow_denied only when some decision was, so an event
 * without shadow limits prints as it always did.
 */
export function shownOutcomes(sum: Required<Counts>): Outcome[] {
  return OUTCOMES.filter((outcome) => outcome !== 'shadow_denied' || sum.shadow_denied > 0);
}

/** What a row or column of shadow_denied is called: allowed, and would be denied in shadow. */
export const SHADOW_LABEL = 'shadow';

/** Says what the shadow row counts, under the sparklines. */
export const SHADOW_LEGEND = `${SHADOW_LABEL}: allowed, but a limit in shadow mode would have denied them (part of allowed)`;

/**
 * The settles' columns shown for `sum`: settled and settled_cost, only when some reservation
 * was settled in the range (a cost of 0 too), so an event without reservations prints as it
 * always did.
 */
export function shownSettles(sum: Required<Counts>): ('settled' | 'settled_cost')[] {
  return sum.settled > 0 ? ['settled', 'settled_cost'] : [];
}

/** What the sparkline row of settled_cost is called: a sum of costs, not a count of decisions. */
export const COST_LABEL = 'cost';

/** Says what the cost row holds, under the sparklines. */
export const COST_LEGEND = `${COST_LABEL}: the actual cost of the reservations settled, in the limits' units (not decisions)`;

/** What a sparkline row is called. */
function rowLabel(count: EventCount): string {
  return count === 'shadow_denied' ? SHADOW_LABEL : count === 'settled_cost' ? COST_LABEL : count;
}

/** A count as a table cell: `not tracked` when unknown, `≥ 4` when only a lower bound. */
function cell(point: Point, outcome: EventCount): string {
  if (!untracked(point, outcome)) return String(point[outcome]);
  return point[outcome] === 0 ? 'not tracked' : `≥ ${point[outcome]}`;
}

/**
 * The points summed into at most `width` columns of `per` points each (the last may hold
 * fewer): a step asked finer than the terminal is wide still fits on one line.
 */
export function fold(points: readonly Point[], width: number): { points: Point[]; per: number } {
  const per = Math.max(1, Math.ceil(points.length / Math.max(1, width)));
  if (per === 1) return { points: [...points], per };
  const folded: Point[] = [];
  for (let start = 0; start < points.length; start += per) {
    const group = points.slice(start, start + per);
    const sum = totals(group);
    // A column is known only if all of it is: otherwise its count is a lower bound.
    const tracked = (outcome: 'allowed' | 'denied') => !group.some((point) => untracked(point, outcome));
    const client = group.some((point) => point.tracked !== undefined);
    folded.push({
      t: group[0]?.t ?? 0,
      ...sum,
      ...(client ? { tracked: { allowed: tracked('allowed'), denied: tracked('denied') } } : {}),
    });
  }
  return { points: folded, per };
}

export function totals(points: readonly Counts[]): Required<Counts> {
  const sum: Required<Counts> = { allowed: 0, denied: 0, degraded: 0, shadow_denied: 0, settled: 0, settled_cost: 0 };
  // `?? 0`: a memgate from before settles (or shadow limits) answers points without them.
  for (const point of points) for (const count of EVENT_COUNTS) sum[count] += point[count] ?? 0;
  return sum;
}

const count = (n: number) => n.toLocaleString('en');

/** A time in UTC, as precise as `step` needs and no more: the span decides whether the date shows. */
export function formatTime(t: number, { step, span }: { step: number; span: number }): string {
  const iso = new Date(t * 1000).toISOString();
  const date = iso.slice(0, 10);
  const time = step < 60 ? iso.slice(11, 19) : iso.slice(11, 16);
  if (step >= 86_400) return date;
  if (span <= 86_400) return time;
  return span <= 366 * 86_400 ? `${date.slice(5)} ${time}` : `${date} ${time}`;
}

/**
 * `api, client 203.0.113.7: 2026-11-23 09:00:01 to 10:00:01 UTC, 60 points of 1min; allowed 8, denied 3, degraded 0`,
 * `allowed 8 (2 shadow_denied)` where a shadow limit would have denied some of them, and
 * `; settled 3, settled_cost 5,120` where reservations were settled.
 */
export function headerLine(answer: SeriesAnswer): string {
  const sum = totals(answer.points);
  const from = new Date(answer.from * 1000).toISOString().replace('T', ' ').slice(0, 19);
  const until = new Date(answer.until * 1000).toISOString().replace('T', ' ').slice(0, 19);
  const sameDay = from.slice(0, 10) === until.slice(0, 10);
  return `${answer.event}${answer.feature === null ? '' : `, client ${answer.feature}`}: ${from} to ${sameDay ? until.slice(11) : until} UTC, ${count(answer.points.length)} points of ${formatSpan(answer.step)}; ${totalsText(sum)}`;
}

/**
 * `allowed 8, denied 3, degraded 0`; shadow_denied in the allowed's brackets, as a part of
 * them; the settles after a semicolon, as they count costs, not decisions.
 */
function totalsText(sum: Required<Counts>): string {
  const shadow = sum.shadow_denied > 0 ? ` (${count(sum.shadow_denied)} shadow_denied)` : '';
  const settles = shownSettles(sum)
    .map((settled) => `${settled} ${count(sum[settled])}`)
    .join(', ');
  return `allowed ${count(sum.allowed)}${shadow}, denied ${count(sum.denied)}, degraded ${count(sum.degraded)}${settles === '' ? '' : `; ${settles}`}`;
}

/**
 * A line of time labels under a sparkline of `times.length` columns: the first point's
 * time at the left, the last's ending at the right, the middle one centred when it fits.
 */
export function timeAxis(times: readonly number[], format: (t: number) => string): string {
  const width = times.length;
  const first = times[0];
  const last = times.at(-1);
  if (first === undefined || last === undefined) return '';
  const line = Array.from({ length: width }, () => ' ');
  const put = (text: string, at: number) => {
    for (let i = 0; i < text.length; i++) line[at + i] = text.charAt(i);
  };
  const left = format(first);
  const right = format(last);
  if (width < left.length) return left;
  put(left, 0);
  if (width >= left.length + right.length + 2 && last !== first) put(right, width - right.length);
  const middleAt = Math.floor((width - 1) / 2);
  const middleTime = times[middleAt];
  if (middleTime !== undefined) {
    const middle = format(middleTime);
    const start = middleAt - Math.floor(middle.length / 2);
    // Two blanks either side, or it crowds its neighbours.
    if (start >= left.length + 2 && start + middle.length + 2 <= width - right.length) put(middle, start);
  }
  return line.join('').trimEnd();
}

/**
 * The header line, a sparkline row per outcome with its min and max per column, and a
 * time axis: what fits a terminal `columns` wide.
 */
export function renderSpark(answer: SeriesAnswer, columns: number): string {
  const { points, per } = fold(answer.points, sparkWidth(columns));
  const step = answer.step * per;
  const format = (t: number) => formatTime(t, { step, span: answer.until - answer.from });
  const sum = totals(points);
  const outcomes = shownOutcomes(sum);
  // The costs settled get a row of their own, scaled to themselves as every row is.
  const costs = shownSettles(sum).length > 0;
  const shown: EventCount[] = [...outcomes, ...(costs ? (['settled_cost'] as const) : [])];
  const rows = shown.map((shownCount) => {
    const values = points.map((point) => point[shownCount]);
    const unknown = points.map((point) => untracked(point, shownCount) && point[shownCount] === 0);
    const min = values.reduce((a, b) => Math.min(a, b), Infinity);
    const max = values.reduce((a, b) => Math.max(a, b), 0);
    return `${rowLabel(shownCount).padEnd(LABEL_WIDTH)}${sparkline(values, { unknown })}  min ${count(Number.isFinite(min) ? min : 0)}  max ${count(max)}`;
  });
  const folded = per === 1 ? '' : ` (${count(per)} points a column: min and max per ${formatSpan(step)})`;
  const someUnknown = points.some((point) =>
    OUTCOMES.some((outcome) => untracked(point, outcome) && point[outcome] === 0),
  );
  return [
    `${headerLine(answer)}${folded}`,
    ...rows,
    `${' '.repeat(LABEL_WIDTH)}${timeAxis(
      points.map((point) => point.t),
      format,
    )}`,
    ...(someUnknown
      ? [`${' '.repeat(LABEL_WIDTH)}${NOT_TRACKED} not tracked: below the heaviest clients of that step`]
      : []),
    ...(outcomes.includes('shadow_denied') ? [`${' '.repeat(LABEL_WIDTH)}${SHADOW_LEGEND}`] : []),
    ...(costs ? [`${' '.repeat(LABEL_WIDTH)}${COST_LEGEND}`] : []),
  ].join('\n');
}

/** The header line, then one row per point and a total row. */
export function renderTable(answer: SeriesAnswer): string {
  const sum = totals(answer.points);
  const outcomes: EventCount[] = [...shownOutcomes(sum), ...shownSettles(sum)];
  const time = (t: number) => new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19);
  const table = markdownTable(
    [
      ['time (UTC)', ...outcomes],
      ...answer.points.map((point) => [time(point.t), ...outcomes.map((outcome) => cell(point, outcome))]),
      ['total', ...outcomes.map((outcome) => String(sum[outcome]))],
    ],
    { align: ['l', ...outcomes.map(() => 'r')] },
  );
  return `${headerLine(answer)}\n\n${table}`;
}

/** The heaviest clients of the range, allowed and denied side by side, most first. */
export function renderTop(top: TopAnswer): string {
  const from = new Date(top.from * 1000).toISOString().replace('T', ' ').slice(0, 19);
  const until = new Date(top.until * 1000).toISOString().replace('T', ' ').slice(0, 19);
  const heading = `heaviest clients of ${top.event}, ${from} to ${until} UTC`;
  const rows = Math.max(top.allowed.length, top.denied.length);
  if (rows === 0) return `${heading}: none`;
  const cell = (list: TopAnswer['allowed'], i: number) => {
    const client = list[i];
    return client ? [client.feature, String(client.count)] : ['', ''];
  };
  const table = markdownTable(
    [
      ['#', 'allowed', 'count', 'denied', 'count'],
      ...Array.from({ length: rows }, (_, i) => [String(i + 1), ...cell(top.allowed, i), ...cell(top.denied, i)]),
    ],
    { align: ['r', 'l', 'r', 'l', 'r'] },
  );
  return `${heading}\n\n${table}`;
}
