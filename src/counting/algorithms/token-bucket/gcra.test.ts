// GCRA's arithmetic against the textbook's (ITU-T I.371's virtual scheduling, cost 1) and a
// bucket of tokens counted by hand (any cost): the same admissions, the same waits.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gcraStep } from './gcra.js';

describe('gcraStep', () => {
  it('admits what a bucket of tokens refilled at the rate admits, for any costs and arrival times', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 2_000_000 }),
        fc.array(fc.record({ gapUs: fc.integer({ min: 0, max: 3_000_000 }), cost: fc.integer({ min: 1, max: 45 }) }), {
          maxLength: 60,
        }),
        (burst, emissionUs, arrivals) => {
          let tat: number | undefined;
          let now = 1_700_000_000_000_000;
          // Tokens as a real number, refilled continuously and capped at the burst.
          let tokens = burst;
          let last = now;
          for (const { gapUs, cost } of arrivals) {
            now += gapUs;
            tokens = Math.min(burst, tokens + (now - last) / emissionUs);
            last = now;
            const step = gcraStep({ emissionUs, burst }, tat, now, cost, true);
            const fits = tokens >= cost - 1e-9;
            expect(step.allowed).toBe(fits);
            if (step.allowed) {
              tat = step.tatUs;
              tokens -= cost;
            } else {
              // The wait is when enough tokens have come back.
              expect(step.retryAfterUs).toBeCloseTo((cost - tokens) * emissionUs, 3);
            }
            expect(step.remaining).toBe(Math.floor(tokens + 1e-9));
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('leaves the value alone for a peek and for a refusal', () => {
    const bucket = { emissionUs: 100_000, burst: 2 };
    const peek = gcraStep(bucket, undefined, 5_000_000, 1, false);
    expect(peek).toMatchObject({ allowed: true, tatUs: 5_000_000, remaining: 2, fullInUs: 0 });
    const refused = gcraStep(bucket, 5_300_000, 5_000_000, 2, true);
    expect(refused).toMatchObject({ allowed: false, tatUs: 5_300_000, retryAfterUs: 300_000, remaining: 0 });
  });
});
