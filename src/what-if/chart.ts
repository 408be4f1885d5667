// `memgate what-if --chart`: denials over time under the policies in use and the new ones, one
// panel per event, as a standalone SVG (opens in any browser; no script, no fonts to fetch).
// Each line has two vertices per point of the report's timeline, which has at most
// DEFAULTS.whatIfChartPoints whatever span the log covers.
import type { EventChange, WhatIfReport } from './compare.js';

const WIDTH = 760;
const PANEL = 170;
const MARGIN = { left: 56, right: 16, top: 34, bottom: 30 };
const COLOURS = { current: '#6b7280', new: '#d9480f' };

const escape = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** `minute`, `5 minutes`, `hour`, `2 days`: a step of the timeline as the title says it. */
export function stepName(seconds: number): string {
  const [unit, size] =
    seconds % 86_400 === 0 ? ['day', 86_400] : seconds % 3600 === 0 ? ['hour', 3600] : ['minute', 60];
  const count = seconds / size;
  return count === 1 ? unit : `${count} ${unit}s`;
}

/** The chart of a report: a panel per event with denials (in use, new) per step of the log. */
export function whatIfChart(report: WhatIfReport): string {
  const events = report.events;
  const height = Math.max(1, events.length) * PANEL + 56;
  const panels = events.map((event, index) => panel(event, index, report.stepSeconds));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    `<text x="${MARGIN.left}" y="20" font-size="14" font-weight="600">Denied requests per ${stepName(report.stepSeconds)}: ${escape(report.current.source)} (in use) and ${escape(report.new.source)} (new)</text>`,
    `<g transform="translate(0 ${height - 14})"><line x1="${MARGIN.left}" x2="${MARGIN.left + 18}" y1="-4" y2="-4" stroke="${COLOURS.current}" stroke-width="2"/><text x="${MARGIN.left + 24}">in use</text>`,
    `<line x1="${MARGIN.left + 90}" x2="${MARGIN.left + 108}" y1="-4" y2="-4" stroke="${COLOURS.new}" stroke-width="2"/><text x="${MARGIN.left + 114}">new</text></g>`,
    ...panels,
    events.length === 0 ? `<text x="${MARGIN.left}" y="60">No request of the log counts against an event.</text>` : '',
    '</svg>',
  ].join('\n');
}

function panel(event: EventChange, index: number, step: number): string {
  const top = 30 + index * PANEL;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = PANEL - MARGIN.top - MARGIN.bottom;
  const points = event.deniedOverTime;
  const from = points[0]?.t ?? 0;
  const until = (points.at(-1)?.t ?? from) + step;
  const most = Math.max(1, ...points.flatMap((point) => [point.current, point.new]));
  const x = (t: number) => MARGIN.left + ((t - from) / (until - from)) * plotWidth;
  const y = (count: number) => top + MARGIN.top + plotHeight - (count / most) * plotHeight;
  /** A step line over every step of the log (0 where a step denied nothing: the timeline lists those too). */
  const line = (side: 'current' | 'new') => {
    const vertices = points.flatMap((point) => {
      const level = y(point[side]).toFixed(1);
      return [`${x(point.t).toFixed(1)},${level}`, `${x(point.t + step).toFixed(1)},${level}`];
    });
    return `<polyline fill="none" stroke="${COLOURS[side]}" stroke-width="${side === 'new' ? 2 : 1.5}" points="${vertices.join(' ')}"/>`;
  };
  const label = `${event.event}: denied ${event.denied.current.toLocaleString('en')} in use, ${event.denied.new.toLocaleString('en')} new, of ${event.requests.new.toLocaleString('en')} requests`;
  const ticks = [0, Math.round(most / 2), most].filter((v, i, all) => all.indexOf(v) === i);
  const middle = from + Math.round((until - from) / 2 / step) * step;
  const timeTicks = [from, middle, until];
  // Within a day the time of day says it all; past a day the date comes first, alone in steps of days.
  const when = (t: number) => {
    const [date = '', time = ''] = new Date(t * 1000).toISOString().split('T');
    if (until - from <= 86_400) return `${time.slice(0, 5)} UTC`;
    return step % 86_400 === 0 ? date : `${date} ${time.slice(0, 5)} UTC`;
  };
  return [
    `<g>`,
    `<text x="${MARGIN.left}" y="${top + 20}" font-weight="600">${escape(label)}</text>`,
    ...ticks.map(
      (v) =>
        `<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e5e7eb"/><text x="${MARGIN.left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#374151">${v}</text>`,
    ),
    ...timeTicks.map(
      (t, i) =>
        `<text x="${x(t).toFixed(1)}" y="${top + PANEL - 12}" text-anchor="${i === 0 ? 'start' : i === timeTicks.length - 1 ? 'end' : 'middle'}" fill="#374151">${when(t)}</text>`,
    ),
    line('current'),
    line('new'),
    `</g>`,
  ].join('\n');
}
