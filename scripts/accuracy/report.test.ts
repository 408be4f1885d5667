import { describe, expect, it } from 'vitest';
import { bucketLabel, charts, markdownReport, multiple, replayRates, runTable, type LabRun } from './report.js';
import type { SchemeResult } from './scheme-replay.js';
import { schemesFor } from './schemes.js';

/** A run of every scheme of a window, with made-up but distinct results. */
function run(traffic: string, window: number, limit: number): LabRun {
  const schemes: SchemeResult[] = schemesFor(window).map((scheme, i) => ({
    scheme,
    allowed: 900,
    falseAllows: i,
    falseDenies: 2 * i,
    worstOverAdmission: 1 + i / 20,
    ...(scheme.bucket ? { worstBound: scheme.bucket.burst === 'limit' ? (2 * limit - 1) / limit : 1 } : {}),
    keysPerCheck: { mean: 30 / (i + 1), max: 60 },
    itemsPerFeature: 68 - i,
    bytesPerFeature: 6000 - 100 * i,
    limiterMs: 100,
  }));
  return {
    traffic,
    description: 'test traffic',
    limit,
    window,
    result: { requests: 1000, features: 3, referenceAllowed: 900, referenceWorstOverAdmission: 1, schemes },
  };
}

/** The text of every <text> element of an SVG, and each line of those on several (<tspan>). */
const texts = (svg: string) => [...svg.matchAll(/<(text|tspan)[^>]*>([^<]+)<\/\1>/g)].map((m) => m[2]);

const FAMILIES = [
  'exact (1 s buckets)',
  'whole edge',
  'drop edge',
  'weighted edge',
  'fixed window',
  'two-counter',
  'token bucket',
];

describe('the accuracy charts', () => {
  const runs = [run('steady-1x', 60, 10), run('zipf', 60, 10), run('diurnal', 86_400, 1000)];
  // Drawn once (vega takes a while), and only when the tests run.
  let drawing: ReturnType<typeof charts> | undefined;
  const drawnCharts = () => (drawing ??= charts(runs));

  it('draws, per window, wrong decisions, the worst window and the cost, and links each from the report', async () => {
    const drawn = await drawnCharts();
    expect(drawn.map((c) => c.file)).toEqual([
      'error-1m.svg',
      'worst-1m.svg',
      'cost-1m.svg',
      'error-1d.svg',
      'worst-1d.svg',
      'cost-1d.svg',
    ]);
    for (const chart of drawn) expect(chart.svg).toMatch(/^<svg/);
    const report = markdownReport(runs, 'npm run accuracy', drawn);
    for (const chart of drawn) expect(report).toContain(`![${chart.title}](${chart.file})`);
  });

  it('names every family of schemes in the legends, two-counter and fixed window apart, each in its own colour', async () => {
    const drawn = await drawnCharts();
    for (const chart of drawn.filter((c) => !c.file.startsWith('worst'))) {
      const labels = texts(chart.svg);
      for (const family of FAMILIES) expect(labels, `${chart.file}: ${family}`).toContain(family);
    }
    // The legend's symbols: one fill per family, none repeated.
    const error = drawn.find((c) => c.file === 'error-1m.svg')?.svg ?? '';
    const legend = error.slice(error.indexOf('role-legend'));
    const fills = [...legend.matchAll(/fill="(#[0-9a-fA-F]{6})"/g)].map((m) => m[1]?.toLowerCase());
    expect(new Set(fills).size).toBeGreaterThanOrEqual(FAMILIES.length);
  });

  it('labels bucket sizes of a day window in minutes and hours, not seconds', async () => {
    const error = (await drawnCharts()).find((c) => c.file === 'error-1d.svg')?.svg ?? '';
    const labels = texts(error);
    expect(labels).toEqual(expect.arrayContaining(['1 s', '1 min', '1 h', '1 d']));
    expect(labels.filter((label) => /^(60|3,?600|86,?400)$/.test(label ?? ''))).toEqual([]);
    expect([1, 5, 60, 90, 3600, 86_400].map(bucketLabel)).toEqual(['1 s', '5 s', '1 min', '90 s', '1 h', '1 d']);
  });

  it('shows each scheme’s worst window over the limit, for every traffic', async () => {
    const worst = (await drawnCharts()).find((c) => c.file === 'worst-1m.svg')?.svg ?? '';
    const labels = texts(worst);
    for (const scheme of schemesFor(60).filter((s) => !s.bucket)) expect(labels).toContain(scheme.name);
    // A token bucket's row says the most it can admit, in terms of the limit.
    expect(labels).toEqual(
      expect.arrayContaining([
        'token bucket L/W, burst L (at most 2L − 1)',
        'token bucket L/2W, burst L/2+1 (at most L)',
        expect.stringContaining('2L − 1 is 1.90× at L = 10'),
      ]),
    );
    expect(labels).toEqual(expect.arrayContaining(['steady-1x', 'zipf']));
    // Scheme i worst at 1 + i/20, in both traffics.
    expect(labels.filter((label) => label === '1.70×')).toHaveLength(2);
    expect(labels).toContain('1.00×');
  });

  it('places token buckets after the bucket sizes, by rate and burst, and their cost in one place', async () => {
    const drawn = await drawnCharts();
    const labels = (file: string) => texts(drawn.find((c) => c.file === file)?.svg ?? '');
    const error = labels('error-1m.svg');
    const order = ['1 s', '5 s', '30 s', '1 min', 'L/W', 'L/2W'].map((label) => error.indexOf(label));
    expect(
      order.every((at, i) => at >= 0 && (i === 0 || at > (order[i - 1] ?? 0))),
      order.join(),
    ).toBe(true);
    expect(error).toEqual(expect.arrayContaining(['burst', 'L', 'L/2+1']));
    expect(labels('cost-1d.svg')).toEqual(expect.arrayContaining(['1 d', 'token', 'bucket']));
  });
});

describe('the accuracy tables', () => {
  it('give a token bucket’s bound beside its worst window, and none for other schemes', () => {
    const table = runTable(run('steady-1x', 60, 10));
    expect(table).toMatch(/\| token bucket L\/W, burst L +\|.*\| +1\.\d\d× \| 1\.90× \(2L − 1\) \|/);
    expect(table).toMatch(/\| token bucket L\/2W, burst L\/2\+1 +\|.*\| +1\.00× \(L\) \|/);
    expect(table).toMatch(/\| fixed window +\|.*× \| +— \|/);
  });

  it('write a multiple to two decimals unless that would round it', () => {
    expect([1.9, 1, 1.999, 13 / 7].map(multiple)).toEqual(['1.90', '1.00', '1.999', '1.857']);
  });
});

describe('replayRates', () => {
  it('gives the replay per thread beside the limiter alone on the same checks', () => {
    const runs = [run('steady', 60, 10)];
    const schemes = runs[0]?.result.schemes.length ?? 0;
    // Each scheme: 1,000 checks in 100 ms inside the limiter, 10,000 a second; the replay took
    // as long as the limiter's time over two threads, so it runs at 100% of it.
    const seconds = (schemes * 0.1) / 2;
    expect(replayRates(runs, seconds, 2)).toBe(
      'replay: 10,000 checks/s per thread; the embedded limiter alone on the same checks: 10,000 checks/s (the replay runs at 100% of it)',
    );
    expect(replayRates(runs, seconds * 4, 2)).toContain('(the replay runs at 25% of it)');
  });
});
