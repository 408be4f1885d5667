import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { admittedWithin, bucketCarry } from './bucket-carry.js';
import type { TokenBucketPlan } from '../../plan-types.js';

const SECOND = 1_000_000;

/** GCRA as the token bucket runs it: admitted when the TAT is at most (burst − 1) intervals ahead. */
function admit(tatUs: number, atUs: number, emissionUs: number, burst: number): number | undefined {
  const tat = Math.max(tatUs, atUs);
  return tat - atUs <= (burst - 1) * emissionUs ? tat + emissionUs : undefined;
}

describe('admittedWithin', () => {
  const carry = { emissionUs: SECOND, burst: 10, until: Infinity };

  it('is 0 for a bucket last moved before the window', () => {
    expect(admittedWithin(carry, 100 * SECOND, 200, 60)).toBe(0);
    expect(admittedWithin(carry, 0, 200, 60)).toBe(0);
  });

  it('caps at burst + rate × window, an unreadable bucket included', () => {
    expect(admittedWithin(carry, Number.POSITIVE_INFINITY, 200, 60)).toBe(10 + 60 + 1);
  });

  it('is never less than what a bucket admitted within the window (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 100_000, max: 3 * SECOND }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 2 * SECOND }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 120 }),
        (emissionUs, burst, gaps, window) => {
          let tat = 0;
          let at = 1000 * SECOND;
          const admitted: number[] = [];
          for (const gap of gaps) {
            at += gap;
            const next = admit(tat, at, emissionUs, burst);
            if (next !== undefined) {
              tat = next;
              admitted.push(at);
            }
          }
          const second = Math.floor(at / SECOND);
          // What a window of `window` seconds ending at `second` holds: its whole seconds.
          const inWindow = admitted.filter((t) => Math.floor(t / SECOND) > second - window).length;
          expect(admittedWithin({ emissionUs, burst, until: Infinity }, tat, second, window)).toBeGreaterThanOrEqual(
            inWindow,
          );
        },
      ),
    );
  });
});

describe('bucketCarry', () => {
  it('takes the fastest rate and the largest burst of the event and its tiers, and is exact after them', () => {
    const plan = (emissionUs: number, burst: number) =>
      ({ algorithm: 'token-bucket', limits: [{ emissionUs, burst }] }) as unknown as TokenBucketPlan;
    const previous = {
      ...plan(SECOND, 5),
      clients: { limits: [...plan(SECOND / 10, 2).limits, ...plan(2 * SECOND, 20).limits] },
    };
    const { fromBucket, carry } = bucketCarry(previous as unknown as TokenBucketPlan, 60, 1000, 120);
    expect(fromBucket).toMatchObject({ emissionUs: SECOND / 10, burst: 20 });
    expect(carry).toMatchObject({ how: 'conservative', since: 1000, exactAt: fromBucket.until });
    expect(fromBucket.until).toBe(1000 + 120 + 2 + 60 + 2);
  });
});
