import { describe, expect, it } from 'vitest';
import { bucketLabel, charts, markdownReport, type LabRun } from './report.js';
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
    keysPerCheck: { mean: 30 / (i + 1), max: 60 },
    itemsPerFeature: 68 - i,
    bytesPerFeature: 6000 - 100 * i,
  }));
  return {
    traffic,
    description: 'test traffic',
    limit,
    window,
    result: { requests: 1000, features: 3, referenceAllowed: 900, referenceWorstOverAdmission: 1, schemes },
  };
}

/** The text of every <text> element of an SVG. */
const texts = (svg: string) => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);

const FAMILIES = ['exact (1 s buckets)', 'whole edge', 'drop edge', 'weighted edge', 'fixed window', 'two-counter'];

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
    for (const scheme of schemesFor(60)) expect(labels).toContain(scheme.name);
    expect(labels).toEqual(expect.arrayContaining(['steady-1x', 'zipf']));
    // Scheme i worst at 1 + i/20, in both traffics.
    expect(labels.filter((label) => label === '1.70×')).toHaveLength(2);
    expect(labels).toContain('1.00×');
  });
});
