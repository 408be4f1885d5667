import { markdownTable } from 'markdown-table';
import { parse as parseVega, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { formatDuration } from '../../src/config/duration.js';
import type { ReplayResult } from './replay.js';
import type { SchemeResult } from './scheme-replay.js';

/** One traffic replayed against one limit. */
export interface LabRun {
  readonly traffic: string;
  readonly description: string;
  readonly limit: number;
  /** Seconds. */
  readonly window: number;
  readonly result: ReplayResult;
}

const percent = (part: number, whole: number) => (whole === 0 ? '0%' : `${((100 * part) / whole).toFixed(part === 0 ? 0 : 3)}%`);

/** Wrong decisions of a scheme, as a share of all requests. */
const wrongShare = (s: SchemeResult, requests: number) => (requests === 0 ? 0 : (s.falseAllows + s.falseDenies) / requests);

/** The table of one run: a row per scheme, the exact log first. */
export function runTable(run: LabRun): string {
  const { result } = run;
  const rows = result.schemes.map((s) => [
    s.scheme.name,
    percent(s.falseAllows + s.falseDenies, result.requests),
    `${s.falseAllows} (${percent(s.falseAllows, result.requests)})`,
    `${s.falseDenies} (${percent(s.falseDenies, result.requests)})`,
    `${s.worstOverAdmission.toFixed(2)}×`,
    `${s.keysPerCheck.mean} / ${s.keysPerCheck.max}`,
    String(s.itemsPerFeature),
    String(s.bytesPerFeature),
  ]);
  return markdownTable(
    [
      ['scheme', 'wrong', 'false allows', 'false denies', 'worst window', 'keys/check mean / max', 'items/feature', 'bytes/feature'],
      ['exact sliding log', '—', '—', '—', `${result.referenceWorstOverAdmission.toFixed(2)}×`, '—', '—', '—'],
      ...rows,
    ],
    { align: ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r'] },
  );
}

export function runHeading(run: LabRun): string {
  const { result } = run;
  return `${run.traffic}: ${run.description}. Limit ${run.limit} per ${formatDuration(run.window)}; ${result.requests.toLocaleString('en')} requests from ${result.features.toLocaleString('en')} clients; the exact log allowed ${percent(result.referenceAllowed, result.requests)}.`;
}

/** The whole report as Markdown, with the charts beside it. */
export function markdownReport(runs: readonly LabRun[], command: string, charts: readonly { file: string; title: string }[]): string {
  const sections = runs.map((run) => `### ${run.traffic}, ${formatDuration(run.window)} window\n\n${runHeading(run)}\n\n${runTable(run)}\n`);
  return [
    '# memgate accuracy report',
    '',
    `Produced by \`${command}\`. Each scheme is a memgate policy replayed through the limiter on its own store, side by side with an exact sliding log on the same requests. "Wrong" counts false allows (allowed here, denied by the exact log) and false denies; once a scheme decides differently its state differs too, so its later decisions are compared from there. "Worst window" is the most requests admitted in any true window of the limit's length, over the limit: above 1× means over-admission. Bytes are estimates (item header, key, value).`,
    '',
    ...charts.map((c) => `![${c.title}](${c.file})`),
    '',
    ...sections,
  ].join('\n');
}

const SERIES = ['exact (1 s)', 'whole edge', 'drop edge', 'weighted edge', 'fixed'];
/** One colour per series, the same in every chart. */
const color = {
  field: 'series',
  type: 'nominal' as const,
  title: null,
  scale: { domain: SERIES, range: ['#222222', '#1f77b4', '#ff7f0e', '#2ca02c', '#d62728'] },
  legend: { orient: 'top' as const },
};
/** Tick marks at the bucket sizes studied, on a log axis. */
const granularityAxis = (runs: readonly { result: ReplayResult }[]) => ({
  field: 'granularity',
  type: 'quantitative' as const,
  scale: { type: 'log' as const },
  axis: { values: [...new Set(runs.flatMap((run) => run.result.schemes.map((s) => s.scheme.granularity)))], title: 'bucket size (s)' },
});

/** A scheme's point on the granularity axis, with the edge rule (or `fixed`) as its series. */
function series(s: SchemeResult): string {
  return s.scheme.algorithm === 'fixed' ? 'fixed' : s.scheme.granularity === 1 ? 'exact (1 s)' : `${s.scheme.edge} edge`;
}

async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parseVega(compile(spec).spec), { renderer: 'none' });
  return view.toSVG();
}

/** Wrong decisions against granularity, one panel per traffic, for runs of one window. */
export function errorChart(runs: readonly LabRun[]): Promise<string> {
  const values = runs.flatMap((run) =>
    run.result.schemes.map((s) => ({ traffic: run.traffic, granularity: s.scheme.granularity, wrong: 100 * wrongShare(s, run.result.requests), series: series(s) })),
  );
  return renderSvg({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: `Wrong decisions against granularity (${formatDuration(runs[0]?.window ?? 60)} window)`,
    data: { values },
    facet: { field: 'traffic', type: 'nominal', title: null },
    columns: 3,
    spec: {
      width: 220,
      height: 150,
      mark: { type: 'line', point: true },
      encoding: {
        x: granularityAxis(runs),
        y: { field: 'wrong', type: 'quantitative', title: 'wrong decisions (% of requests)' },
        color,
      },
    },
    resolve: { scale: { y: 'independent' }, axis: { x: 'independent' } },
  });
}

/** Keys read per check and bytes held per client against granularity, for one window. */
export function costChart(run: LabRun): Promise<string> {
  const values = run.result.schemes.map((s) => ({ granularity: s.scheme.granularity, keys: s.keysPerCheck.mean, bytes: s.bytesPerFeature, series: series(s) }));
  const panel = (field: string, title: string) => ({
    width: 260,
    height: 180,
    mark: { type: 'point' as const, filled: true, size: 70 },
    encoding: {
      x: granularityAxis([run]),
      y: { field, type: 'quantitative' as const, scale: { type: 'log' as const }, title },
      color,
    },
  });
  return renderSvg({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: `Memcached cost against granularity (${formatDuration(run.window)} window)`,
    data: { values },
    hconcat: [panel('keys', 'keys read per check (mean)'), panel('bytes', 'bytes per active client')],
  });
}
