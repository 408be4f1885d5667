import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TalliedHistogram } from './tallied-histogram.js';

const BUCKETS = [0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

/** The same observations through prom-client's Histogram and a TalliedHistogram: each registry's text. */
async function both(observations: readonly (readonly [number, string])[], labelName?: string) {
  const theirs = new Registry();
  const ours = new Registry();
  const options = { name: 'h_seconds', help: 'a help text', buckets: BUCKETS };
  const reference = new Histogram({
    ...options,
    labelNames: labelName === undefined ? [] : [labelName],
    registers: [theirs],
  });
  const tallied = new TalliedHistogram({
    ...options,
    ...(labelName === undefined ? {} : { labelName }),
    registers: [ours],
  });
  for (const [value, label] of observations) {
    if (labelName === undefined) reference.observe(value);
    else reference.observe({ [labelName]: label }, value);
    tallied.observe(value, labelName === undefined ? '' : label);
  }
  return { theirs: await theirs.metrics(), ours: await ours.metrics(), tallied, ourRegistry: ours };
}

const observation = fc.tuple(
  fc.oneof(fc.constantFrom(...BUCKETS, 0, 2, 1e-9), fc.double({ min: 0, max: 3, noNaN: true })),
  fc.constantFrom('incrementAndRead', 'decrement', 'get'),
);

describe('TalliedHistogram', () => {
  it("exposes what prom-client's Histogram exposes for the same observations, with a label (fast-check)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
        const { theirs, ours } = await both(observations, 'operation');
        expect(ours).toBe(theirs);
      }),
    );
  });

  it('and without one', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
        const { theirs, ours } = await both(observations);
        expect(ours).toBe(theirs);
      }),
    );
  });

  it('counts a value on a bound in that bound (le), and past the last in +Inf only', async () => {
    const { ours } = await both(
      [
        [0.001, 'get'],
        [5, 'get'],
      ],
      'operation',
    );
    expect(ours).toContain('h_seconds_bucket{le="0.0005",operation="get"} 0');
    expect(ours).toContain('h_seconds_bucket{le="0.001",operation="get"} 1');
    expect(ours).toContain('h_seconds_bucket{le="1",operation="get"} 1');
    expect(ours).toContain('h_seconds_bucket{le="+Inf",operation="get"} 2');
    expect(ours).toContain('h_seconds_count{operation="get"} 2');
  });

  it('starts again from nothing when the registry resets its metrics', async () => {
    const { tallied, ourRegistry } = await both([[0.3, 'get']], 'operation');
    ourRegistry.resetMetrics();
    expect(await ourRegistry.metrics()).not.toContain('h_seconds_count');
    tallied.observe(0.3, 'get');
    expect(await ourRegistry.metrics()).toContain('h_seconds_count{operation="get"} 1');
  });
});
