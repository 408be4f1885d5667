import { describe, expect, it } from 'vitest';
import { tokenBucket } from './reference.js';
import { replay } from './replay.js';
import { replayScheme, type SchemeResult } from './scheme-replay.js';
import { bucketFor, schemesFor } from './schemes.js';
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
  // Replayed when its first test runs, not as the file is collected: seven replays started
  // together took 7 s, one after another 2 s.
  let replayed: ReturnType<typeof replay> | undefined;
  const result = () => (replayed ??= replay(requests, { ...sizing, schemes }));

  it('with 1 s buckets makes no wrong decision against the exact sliding log', async () => {
    const oneSecond = (await result()).schemes.find((s) => s.scheme.granularity === 1);
    expect(oneSecond).toMatchObject({ falseAllows: 0, falseDenies: 0 });
  });

  it('never over-admits with a whole edge, whatever the granularity', async () => {
    for (const s of (await result()).schemes.filter(
      (s) => s.scheme.algorithm === 'sliding' && s.scheme.edge === 'whole',
    )) {
      expect(s.worstOverAdmission, s.scheme.name).toBeLessThanOrEqual(1);
    }
  });

  it('keeps the reference itself within the limit', async () => {
    expect((await result()).referenceWorstOverAdmission).toBeLessThanOrEqual(1);
  });
});

/** The same shapes at millisecond timestamps: a token bucket's clock is memgate's, to the microsecond. */
const subsecond = SHAPES.map((shape) => {
  const sizing = shape.name === 'diurnal' ? DAY : MINUTE;
  return {
    name: `${shape.name} (ms)`,
    sizing,
    requests: shape.generate({ seed: 42, requests: 4000, ...sizing, resolutionMs: 1 }),
  };
});

describe.each([...cases, ...subsecond])('replaying $name through token buckets', ({ sizing, requests }) => {
  const schemes = schemesFor(sizing.window).filter((s) => s.bucket);
  // Each bucket scheme replayed once, against an exact token bucket's decisions, when the
  // first test asks: both tests judge that one replay (what a scheme admits does not depend
  // on the decisions it is compared with), where each replayed all of them on its own.
  let replayed: Promise<{ results: SchemeResult[]; denied: number }> | undefined;
  const result = () =>
    (replayed ??= (async () => {
      const results: SchemeResult[] = [];
      let denied = 0;
      for (const scheme of schemes) {
        if (!scheme.bucket) continue;
        const { count, periodSeconds, burst } = bucketFor(scheme.bucket, sizing.limit, sizing.window);
        const exact = tokenBucket({ count, periodSeconds }, burst);
        const truth = Uint8Array.from(requests, ({ feature, ms }) => (exact.check(feature, ms) ? 1 : 0));
        denied += truth.filter((allowed) => allowed === 0).length;
        results.push(await replayScheme(requests, truth, scheme, sizing));
      }
      return { results, denied };
    })());

  it('never admits more in any window than the bucket can: b + ⌈W/T⌉ − 1', async () => {
    const { results } = await result();
    expect(results).toHaveLength(schemes.length);
    for (const s of results) {
      expect(s.worstBound, s.scheme.name).toBeDefined();
      expect(s.worstOverAdmission, s.scheme.name).toBeLessThanOrEqual(s.worstBound ?? 0);
    }
  });

  it('decides every request as an exact token bucket does', async () => {
    const { results, denied } = await result();
    for (const s of results) expect(s, s.scheme.name).toMatchObject({ falseAllows: 0, falseDenies: 0 });
    // Not only requests any bucket would admit.
    expect(denied).toBeGreaterThan(0);
  });
});

describe('replaying on worker threads', () => {
  it('gives exactly the results of one thread', async () => {
    // Enough for every scheme to deny some (200 are, for this seed; asserted below): what is
    // compared is the threads' plumbing, and most of this test's time is the threads starting.
    const requests = SHAPES.find((s) => s.name === 'zipf')?.generate({ seed: 3, requests: 300, ...MINUTE }) ?? [];
    const options = { ...MINUTE, schemes: schemesFor(60) };
    const [alone, pooled] = await Promise.all([
      replay(requests, options),
      replay(requests, { ...options, workers: 2 }),
    ]);
    expect(alone.schemes.filter((s) => s.allowed === requests.length)).toEqual([]);
    // Everything but the time each took inside the limiter, which is measured, not decided.
    const decided = (result: typeof alone) => ({
      ...result,
      schemes: result.schemes.map(({ limiterMs, ...scheme }) => {
        expect(limiterMs).toBeGreaterThan(0);
        return scheme;
      }),
    });
    expect(decided(pooled)).toEqual(decided(alone));
  });
});
