import { describe, expect, it } from 'vitest';
import { replay } from './replay.js';
import { schemesFor } from './schemes.js';
import { SHAPES } from './traffic.js';

const MINUTE = { limit: 10, window: 60 };
const DAY = { limit: 200, window: 86_400 };

/** Every generated shape, at whole seconds, against the window it is meant for. */
const cases = SHAPES.map((shape) => {
  const sizing = shape.name === 'diurnal' ? DAY : MINUTE;
  return { name: shape.name, sizing, requests: shape.generate({ seed: 42, requests: 4000, ...sizing }) };
});

describe.each(cases)('replaying $name', ({ sizing, requests }) => {
  // Only the schemes these tests judge, the exact one and each whole edge: a third of them.
  const schemes = schemesFor(sizing.window).filter((s) => s.algorithm === 'sliding' && s.edge === 'whole');
  const result = replay(requests, { ...sizing, schemes });

  it('with 1 s buckets makes no wrong decision against the exact sliding log', async () => {
    const oneSecond = (await result).schemes.find((s) => s.scheme.granularity === 1);
    expect(oneSecond).toMatchObject({ falseAllows: 0, falseDenies: 0 });
  });

  it('never over-admits with a whole edge, whatever the granularity', async () => {
    for (const s of (await result).schemes.filter(
      (s) => s.scheme.algorithm === 'sliding' && s.scheme.edge === 'whole',
    )) {
      expect(s.worstOverAdmission, s.scheme.name).toBeLessThanOrEqual(1);
    }
  });

  it('keeps the reference itself within the limit', async () => {
    expect((await result).referenceWorstOverAdmission).toBeLessThanOrEqual(1);
  });
});

describe('replaying on worker threads', () => {
  it('gives exactly the results of one thread', async () => {
    // Enough for every scheme to deny some: what is compared is the threads' plumbing.
    const requests = SHAPES.find((s) => s.name === 'zipf')?.generate({ seed: 3, requests: 1000, ...MINUTE }) ?? [];
    const options = { ...MINUTE, schemes: schemesFor(60) };
    const [alone, pooled] = await Promise.all([
      replay(requests, options),
      replay(requests, { ...options, workers: 2 }),
    ]);
    expect(alone.schemes.filter((s) => s.allowed === requests.length)).toEqual([]);
    expect(pooled).toEqual(alone);
  });
});
