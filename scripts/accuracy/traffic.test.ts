import { describe, expect, it } from 'vitest';
import { randomSource, SHAPES, zipfSampler, type TimedRequest } from './traffic.js';

const shape = (name: string) => {
  const found = SHAPES.find((s) => s.name === name);
  if (!found) throw new Error(`no shape ${name}`);
  return found;
};
const options = { seed: 7, requests: 20_000, limit: 100, window: 60 };
const spanSeconds = (requests: readonly TimedRequest[]) => ((requests.at(-1)?.ms ?? 0) - (requests[0]?.ms ?? 0)) / 1000;

describe('traffic shapes', () => {
  it.each(SHAPES.map((s) => s.name))('%s is deterministic per seed and in time order', (name) => {
    const a = shape(name).generate(options);
    expect(a).toHaveLength(options.requests);
    // Compared as text, and ordered by one look over the array: an expect per request, or a
    // deep equality of 20,000 objects, took a second or more of this file's few.
    expect(JSON.stringify(shape(name).generate(options))).toBe(JSON.stringify(a));
    // At whole seconds the boundary attack is the same for every seed; its jitter is sub-second.
    expect(shape(name).generate({ ...options, seed: 8, resolutionMs: 1 })).not.toEqual(
      shape(name).generate({ ...options, resolutionMs: 1 }),
    );
    const outOfOrder = a.findIndex((request, i) => i > 0 && request.ms < (a[i - 1] as TimedRequest).ms);
    expect(outOfOrder, `request ${outOfOrder} is earlier than the one before`).toBe(-1);
  });

  it.each([
    ['steady-0.5x', 50],
    ['steady-1x', 100],
    ['steady-2x', 200],
    ['bursts', 100],
  ])('%s sends about %i requests per window', (name, perWindow) => {
    const requests = shape(name).generate(options);
    const rate = requests.length / (spanSeconds(requests) / 60);
    expect(rate).toBeGreaterThan(perWindow * 0.95);
    expect(rate).toBeLessThan(perWindow * 1.05);
  });

  it('gives whole-second timestamps by default and sub-second ones on request', () => {
    expect(
      shape('steady-1x')
        .generate(options)
        .every((r) => r.ms % 1000 === 0),
    ).toBe(true);
    expect(
      shape('steady-1x')
        .generate({ ...options, resolutionMs: 1 })
        .some((r) => r.ms % 1000 !== 0),
    ).toBe(true);
  });

  it('boundary puts the limit just before and just after a window boundary', () => {
    const requests = shape('boundary').generate({ ...options, resolutionMs: 1 });
    const first = requests.slice(0, 200);
    const boundary = Math.ceil(((first[0]?.ms ?? 0) + 1) / 60_000) * 60_000;
    expect(first.filter((r) => r.ms >= boundary - 1000 && r.ms < boundary)).toHaveLength(100);
    expect(first.filter((r) => r.ms >= boundary && r.ms < boundary + 1000)).toHaveLength(100);
  });

  it('zipf spreads clients so that the busiest sends about twice the limit', () => {
    const requests = shape('zipf').generate({ ...options, requests: 200_000 });
    const counts = new Map<string, number>();
    for (const { feature } of requests) counts.set(feature, (counts.get(feature) ?? 0) + 1);
    const busiest = counts.get('user-1') ?? 0;
    expect(busiest / (spanSeconds(requests) / 60)).toBeGreaterThan(180);
    expect(busiest / (spanSeconds(requests) / 60)).toBeLessThan(220);
    expect(counts.size).toBeGreaterThan(1000);
  });

  it('diurnal is busier at noon than at midnight', () => {
    const requests = shape('diurnal').generate({ ...options, limit: 2000, window: 86_400 });
    const hourOf = (ms: number) => new Date(ms).getUTCHours();
    const noon = requests.filter((r) => hourOf(r.ms) >= 11 && hourOf(r.ms) < 13).length;
    const midnight = requests.filter((r) => hourOf(r.ms) >= 23 || hourOf(r.ms) < 1).length;
    expect(noon).toBeGreaterThan(5 * midnight);
  });
});

describe('zipfSampler', () => {
  it('draws rank k about 1/k^s of the time', () => {
    const draw = zipfSampler(100, 1, randomSource(1));
    const counts = new Array<number>(101).fill(0);
    for (let i = 0; i < 100_000; i++) {
      const rank = draw();
      counts[rank] = (counts[rank] ?? 0) + 1;
    }
    expect((counts[1] ?? 0) / (counts[2] ?? 1)).toBeCloseTo(2, 0);
    expect((counts[1] ?? 0) / (counts[10] ?? 1)).toBeGreaterThan(7);
  });
});
