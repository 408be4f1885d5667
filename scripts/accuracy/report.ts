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

const percent = (part: number, whole: number) =>
  whole === 0 ? '0%' : `${((100 * part) / whole).toFixed(part === 0 ? 0 : 3)}%`;

/** A multiple of the limit to two decimals, or three where two would round it (1.999, not 2.00). */
export function multiple(x: number): string {
  const two = x.toFixed(2);
  return Math.abs(Number(two) - x) < 1e-9 ? two : x.toFixed(3);
}

/** Wrong decisions of a scheme, as a share of all requests. */
const wrongShare = (s: SchemeResult, requests: number) =>
  requests === 0 ? 0 : (s.falseAllows + s.falseDenies) / requests;

/** The table of one run: a row per scheme, the exact log first. */
export function runTable(run: LabRun): string {
  const { result } = run;
  const rows = result.schemes.map((s) => [
    s.scheme.name,
    percent(s.falseAllows + s.falseDenies, result.requests),
    `${s.falseAllows} (${percent(s.falseAllows, result.requests)})`,
    `${s.falseDenies} (${percent(s.falseDenies, result.requests)})`,
    `${s.worstOverAdmission.toFixed(2)}×`,
    s.worstBound === undefined ? '—' : `${multiple(s.worstBound)}× (${s.scheme.bound ?? '?'})`,
    `${s.keysPerCheck.mean} / ${s.keysPerCheck.max}`,
    String(s.itemsPerFeature),
    String(s.bytesPerFeature),
  ]);
  return markdownTable(
    [
      [
        'scheme',
        'wrong',
        'false allows',
        'false denies',
        'worst window',
        'bound',
        'keys/check mean / max',
        'items/feature',
        'bytes/feature',
      ],
      ['exact sliding log', '—', '—', '—', `${result.referenceWorstOverAdmission.toFixed(2)}×`, '—', '—', '—', '—'],
      ...rows,
    ],
    { align: ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'] },
  );
}

export function runHeading(run: LabRun): string {
  const { result } = run;
  return `${run.traffic}: ${run.description}. Limit ${run.limit} per ${formatDuration(run.window)}; ${result.requests.toLocaleString('en')} requests from ${result.features.toLocaleString('en')} clients; the exact log allowed ${percent(result.referenceAllowed, result.requests)}.`;
}

/** The whole report as Markdown, with the charts beside it. */
export function markdownReport(
  runs: readonly LabRun[],
  command: string,
  charts: readonly { file: string; title: string }[],
): string {
  const sections = runs.map(
    (run) => `### ${run.traffic}, ${formatDuration(run.window)} window\n\n${runHeading(run)}\n\n${runTable(run)}\n`,
  );
  return [
    '# memgate accuracy report',
    '',
    `Produced by \`${command}\`. Each scheme is a memgate policy replayed through the limiter on its own store, side by side with an exact sliding log on the same requests. "Wrong" counts false allows (allowed here, denied by the exact log) and false denies; once a scheme decides differently its state differs too, so its later decisions are compared from there. "Worst window" is the most requests admitted in any true window of the limit's length, over the limit: above 1× means over-admission. "Bound" is the most a token bucket can admit in any such window, b + ⌈W/T⌉ − 1 for a burst b and a token every T, over the limit L (a token bucket's rate is L/W or L/2W, W the window: see docs/accuracy.md). Bytes are estimates (item header, key, value).`,
    '',
    ...charts.map((c) => `![${c.title}](${c.file})`),
    '',
    ...sections,
  ].join('\n');
}

/** A chart of the report: its file name, its caption, its SVG. */
export interface Chart {
  readonly file: string;
  readonly title: string;
  readonly svg: string;
}

/** Every chart of the runs: per window, wrong decisions, the worst window and the cost. */
export async function charts(runs: readonly LabRun[]): Promise<Chart[]> {
  const drawn: Chart[] = [];
  for (const window of [...new Set(runs.map((run) => run.window))]) {
    const ofWindow = runs.filter((run) => run.window === window);
    const first = ofWindow[0];
    if (!first) continue;
    const name = formatDuration(window);
    drawn.push(
      {
        file: `error-${name}.svg`,
        title: `wrong decisions against bucket size, ${name} window`,
        svg: await errorChart(ofWindow),
      },
      {
        file: `worst-${name}.svg`,
        title: `worst window admitted over the limit, per scheme, ${name} window`,
        svg: await worstWindowChart(ofWindow),
      },
      {
        file: `cost-${name}.svg`,
        title: `keys per check and bytes per client against bucket size, ${name} window`,
        svg: await costChart(first),
      },
    );
  }
  return drawn;
}

/**
 * The families of schemes, each with a colour of the Okabe–Ito palette (told apart with
 * every common colour-vision deficiency) and a shape of its own, the same in every chart.
 */
const SERIES = [
  { name: 'exact (1 s buckets)', color: '#000000', shape: 'circle' },
  { name: 'whole edge', color: '#0072B2', shape: 'square' },
  { name: 'drop edge', color: '#E69F00', shape: 'triangle-up' },
  { name: 'weighted edge', color: '#009E73', shape: 'diamond' },
  { name: 'fixed window', color: '#D55E00', shape: 'cross' },
  { name: 'two-counter', color: '#CC79A7', shape: 'triangle-down' },
  // A five-pointed star, as an SVG path: no built-in shape is left that reads apart from the
  // others at this size. It reaches 1.3× past the unit square vega sizes shapes in, since a
  // star fills little of its square: so it looks about as big as the others.
  {
    name: 'token bucket',
    color: '#56B4E9',
    shape: 'M0,-1.3L0.31,-0.43L1.23,-0.4L0.49,0.16L0.77,1.05L0,0.52L-0.77,1.05L-0.49,0.16L-1.23,-0.4L-0.31,-0.43Z',
  },
] as const;

/** Which family a scheme of a `window`-second limit belongs to. */
function series(s: SchemeResult, window: number): string {
  const { algorithm, granularity, edge } = s.scheme;
  if (algorithm === 'token-bucket') return 'token bucket';
  if (algorithm === 'fixed') return 'fixed window';
  if (granularity === 1) return 'exact (1 s buckets)';
  // One bucket as long as the window, the previous one weighted: Cloudflare's estimate.
  if (granularity === window) return 'two-counter';
  return `${edge} edge`;
}

/** Every family in every legend, whether the chart holds it or not, so legends read alike. */
const color = {
  field: 'series',
  type: 'nominal' as const,
  title: null,
  scale: { domain: SERIES.map((s) => s.name), range: SERIES.map((s) => s.color) },
  legend: { orient: 'top' as const, columns: SERIES.length },
};
const shape = { ...color, scale: { domain: SERIES.map((s) => s.name), range: SERIES.map((s) => s.shape) } };

/** `1 s`, `30 s`, `1 min`, `1 h`, `1 d`: bucket sizes as people say them. */
export function bucketLabel(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['min', 60],
  ] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}`;
  }
  return `${seconds} s`;
}

/** Where a scheme sits on a chart's bucket-size axis: its bucket size, or a token bucket's rate and burst. */
const axisPlace = (s: SchemeResult) => s.scheme.short ?? bucketLabel(s.scheme.granularity);

/** Token buckets in one place, where every one costs the same: one value per client. */
const costPlace = (s: SchemeResult) => (s.scheme.bucket ? 'token\nbucket' : bucketLabel(s.scheme.granularity));

/** The axis's places: bucket sizes, smallest first, then token buckets in scheme order. */
function axisPlaces(runs: readonly { result: ReplayResult }[], place: (s: SchemeResult) => string): string[] {
  const schemes = runs.flatMap((run) => run.result.schemes);
  const sizes = [...new Set(schemes.filter((s) => !s.scheme.bucket).map((s) => s.scheme.granularity))].sort(
    (a, b) => a - b,
  );
  return [...new Set([...sizes.map(bucketLabel), ...schemes.filter((s) => s.scheme.bucket).map(place)])];
}

/**
 * Bucket sizes as evenly spaced categories, smallest first, labelled in s, min, h or d;
 * token buckets after them, their labels on several lines.
 */
const bucketAxis = (
  runs: readonly { result: ReplayResult }[],
  place: (s: SchemeResult) => string,
  title: string | string[] = 'bucket size',
) => ({
  field: 'bucket',
  type: 'ordinal' as const,
  sort: axisPlaces(runs, place),
  title,
  axis: { labelAngle: 0, labelExpr: "split(datum.label, '\\n')" },
});

async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parseVega(compile(spec).spec), { renderer: 'none' });
  return view.toSVG();
}

/** Wrong decisions against bucket size, one panel per traffic, for runs of one window. */
export function errorChart(runs: readonly LabRun[]): Promise<string> {
  const values = runs.flatMap((run) =>
    run.result.schemes.map((s) => ({
      traffic: run.traffic,
      bucket: axisPlace(s),
      wrong: 100 * wrongShare(s, run.result.requests),
      series: series(s, run.window),
    })),
  );
  const x = bucketAxis(runs, axisPlace, ['bucket size,', 'or token bucket rate and burst']);
  // A title no longer than the plot is tall: vega reserves room for a longer one above and below.
  const y = { field: 'wrong', type: 'quantitative' as const, title: 'wrong, % of requests', axis: { format: '.3~r' } };
  return renderSvg({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: `Wrong decisions against bucket size (${formatDuration(runs[0]?.window ?? 60)} window)`,
    data: { values },
    facet: { field: 'traffic', type: 'nominal', title: null },
    columns: 3,
    spec: {
      width: 240,
      height: 180,
      layer: [
        // Token buckets unjoined: they are two ways of sizing a bucket, not a scale of bucket sizes.
        {
          mark: { type: 'line' },
          transform: [{ filter: "datum.series !== 'token bucket'" }],
          encoding: { x, y, color },
        },
        { mark: { type: 'point', filled: true, size: 50, opacity: 1 }, encoding: { x, y, color, shape } },
      ],
    },
    resolve: { scale: { y: 'independent' }, axis: { x: 'independent' } },
  });
}

/**
 * The most each scheme admitted in any true window, over the limit, per traffic: above 1×
 * is over-admission. A grid, a row per scheme and a column per traffic, each cell labelled.
 */
export function worstWindowChart(runs: readonly LabRun[]): Promise<string> {
  // A token bucket's row says the most it can admit, in terms of the limit L, whatever L is.
  const row = ({ scheme }: SchemeResult) => (scheme.bound ? `${scheme.name} (at most ${scheme.bound})` : scheme.name);
  const schemes = runs[0]?.result.schemes.map(row) ?? [];
  const limits = [...new Set(runs.map((run) => run.limit))];
  const limit = limits.length === 1 ? limits[0] : undefined;
  const example = limit === undefined ? '' : ` (2L − 1 is ${multiple((2 * limit - 1) / limit)}× at L = ${limit})`;
  const values = runs.flatMap((run) =>
    run.result.schemes.map((s) => ({
      traffic: run.traffic,
      scheme: row(s),
      worst: s.worstOverAdmission,
      label: `${s.worstOverAdmission.toFixed(2)}×`,
    })),
  );
  const x = {
    field: 'traffic',
    type: 'nominal' as const,
    title: null,
    sort: runs.map((run) => run.traffic),
    axis: { orient: 'top' as const, labelAngle: -30, labelLimit: 400 },
  };
  const y = { field: 'scheme', type: 'nominal' as const, title: null, sort: schemes, axis: { labelLimit: 400 } };
  return renderSvg({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `Worst window admitted, as a multiple of the limit (${formatDuration(runs[0]?.window ?? 60)} window)`,
      subtitle: [
        'above 1× the scheme let more than the limit through in some window',
        `a token bucket's row ends with the most it can admit in a window, for a limit of L${example}`,
      ],
      anchor: 'start',
    },
    data: { values },
    width: { step: 78 },
    height: { step: 20 },
    layer: [
      {
        mark: { type: 'rect', stroke: 'white' },
        encoding: {
          x,
          y,
          // One hue growing darker with the excess: read by lightness, whatever one's colour vision.
          color: {
            field: 'worst',
            type: 'quantitative',
            title: 'worst window / limit',
            scale: { domain: [1, 2], range: ['#f7f7f7', '#b2182b'], clamp: true },
            legend: { orient: 'right', format: '.1f' },
          },
        },
      },
      {
        mark: { type: 'text', fontSize: 11 },
        encoding: {
          x,
          y,
          text: { field: 'label' },
          color: { condition: { test: 'datum.worst >= 1.6', value: 'white' }, value: 'black' },
        },
      },
    ],
  });
}

/** Keys read per check and bytes held per client against bucket size, for one window. */
export function costChart(run: LabRun): Promise<string> {
  const values = run.result.schemes.map((s) => ({
    bucket: costPlace(s),
    keys: s.keysPerCheck.mean,
    bytes: s.bytesPerFeature,
    series: series(s, run.window),
  }));
  const x = bucketAxis([run], costPlace);
  // Each family side by side within its bucket size, so equal costs do not hide each other.
  const xOffset = { field: 'series', type: 'nominal' as const, sort: SERIES.map((s) => s.name) };
  const panel = (field: string, title: string) => ({
    width: 280,
    height: 210,
    mark: { type: 'point' as const, filled: true, size: 70, opacity: 1 },
    encoding: {
      x,
      xOffset,
      y: { field, type: 'quantitative' as const, scale: { type: 'log' as const }, title },
      color,
      shape,
    },
  });
  return renderSvg({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: `Memcached cost against bucket size (${formatDuration(run.window)} window)`,
    data: { values },
    hconcat: [panel('keys', 'keys read per check, mean'), panel('bytes', 'bytes per active client')],
  });
}

/**
 * The replay's checks a second per thread, beside the limiter's alone on the same checks (their
 * count over the time spent inside limiter.check): how much the lab adds to what it measures.
 */
export function replayRates(runs: readonly LabRun[], seconds: number, workers: number): string {
  let checks = 0;
  let limiterMs = 0;
  for (const run of runs) {
    for (const scheme of run.result.schemes) {
      checks += run.result.requests;
      limiterMs += scheme.limiterMs;
    }
  }
  // Threads the schemes kept busy: never more than there were schemes to run at once.
  const threads = Math.max(1, Math.min(workers, Math.max(...runs.map((run) => run.result.schemes.length))));
  const replay = checks / seconds / threads;
  const alone = limiterMs > 0 ? checks / (limiterMs / 1000) : 0;
  const perSecond = (rate: number) => Math.round(rate).toLocaleString('en');
  return `replay: ${perSecond(replay)} checks/s per thread; the embedded limiter alone on the same checks: ${perSecond(alone)} checks/s (the replay runs at ${((100 * replay) / Math.max(1, alone)).toFixed(0)}% of it)`;
}
