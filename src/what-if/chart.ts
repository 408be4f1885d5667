// `memgate what-if --chart`: denials per minute under the policies in use and the new ones, one
// panel per event, as a standalone SVG (opens in any browser; no script, no fonts to fetch).
import type { EventChange, WhatIfReport } from './compare.js';

const WIDTH = 760;
const PANEL = 170;
const MARGIN = { left: 56, right: 16, top: 34, bottom: 30 };
const COLOURS = { current: '#6b7280', new: '#d9480f' };

const escape = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** The chart of a report: a panel per event with denials (in use, new) per minute of the log. */
export function whatIfChart(report: WhatIfReport): string {
  const from = Math.floor((report.trace.from ?? 0) / 60) * 60;
  const until = Math.floor((report.trace.until ?? from) / 60) * 60 + 60;
  const events = report.events;
  const height = Math.max(1, events.length) * PANEL + 56;
  const panels = events.map((event, index) => panel(event, index, from, until));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    `<text x="${MARGIN.left}" y="20" font-size="14" font-weight="600">Denied requests per minute: ${escape(report.current.source)} (in use) and ${escape(report.new.source)} (new)</text>`,
    `<g transform="translate(0 ${height - 14})"><line x1="${MARGIN.left}" x2="${MARGIN.left + 18}" y1="-4" y2="-4" stroke="${COLOURS.current}" stroke-width="2"/><text x="${MARGIN.left + 24}">in use</text>`,
    `<line x1="${MARGIN.left + 90}" x2="${MARGIN.left + 108}" y1="-4" y2="-4" stroke="${COLOURS.new}" stroke-width="2"/><text x="${MARGIN.left + 114}">new</text></g>`,
    ...panels,
    events.length === 0 ? `<text x="${MARGIN.left}" y="60">No request of the log counts against an event.</text>` : '',
    '</svg>',
  ].join('\n');
}

function panel(event: EventChange, index: number, from: number, until: number): string {
  const top = 30 + index * PANEL;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = PANEL - MARGIN.top - MARGIN.bottom;
  const minutes = Math.max(1, (until - from) / 60);
  const byMinute = new Map(event.perMinute.map((point) => [point.t, point]));
  const most = Math.max(1, ...event.perMinute.flatMap((point) => [point.current, point.new]));
  const x = (t: number) => MARGIN.left + ((t - from) / 60 / minutes) * plotWidth;
  const y = (count: number) => top + MARGIN.top + plotHeight - (count / most) * plotHeight;
  /** A step line over every minute of the log, 0 where a minute denied nothing. */
  const line = (side: 'current' | 'new') => {
    const points: string[] = [];
    for (let t = from; t < until; t += 60) {
      const count = byMinute.get(t)?.[side] ?? 0;
      points.push(`${x(t).toFixed(1)},${y(count).toFixed(1)}`, `${x(t + 60).toFixed(1)},${y(count).toFixed(1)}`);
    }
    return `<polyline fill="none" stroke="${COLOURS[side]}" stroke-width="${side === 'new' ? 2 : 1.5}" points="${points.join(' ')}"/>`;
  };
  const label = `${event.event}: denied ${event.denied.current.toLocaleString('en')} in use, ${event.denied.new.toLocaleString('en')} new, of ${event.requests.new.toLocaleString('en')} requests`;
  const ticks = [0, Math.round(most / 2), most].filter((v, i, all) => all.indexOf(v) === i);
  const timeTicks = [from, from + Math.round(minutes / 2) * 60, until];
  const hhmm = (t: number) => new Date(t * 1000).toISOString().slice(11, 16);
  return [
    `<g>`,
    `<text x="${MARGIN.left}" y="${top + 20}" font-weight="600">${escape(label)}</text>`,
    ...ticks.map(
      (v) =>
        `<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e5e7eb"/><text x="${MARGIN.left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#374151">${v}</text>`,
    ),
    ...timeTicks.map(
      (t, i) =>
        `<text x="${x(t).toFixed(1)}" y="${top + PANEL - 12}" text-anchor="${i === 0 ? 'start' : i === timeTicks.length - 1 ? 'end' : 'middle'}" fill="#374151">${hhmm(t)} UTC</text>`,
    ),
    line('current'),
    line('new'),
    `</g>`,
  ].join('\n');
}
