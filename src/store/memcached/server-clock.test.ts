import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OffsetEstimate, type ClockReading } from './server-clock.js';

/** A server whose clock is `offsetMs` ahead of the monotonic clock, read at a point within each round trip. */
function reading(offsetMs: number, sentAt: number, roundTripMs: number, whereInTrip: number): ClockReading {
  const processedAt = sentAt + roundTripMs * whereInTrip;
  return { sentAt, receivedAt: sentAt + roundTripMs, serverSecond: Math.floor((processedAt + offsetMs) / 1000) };
}

describe('OffsetEstimate', () => {
  const trip = fc.record({
    roundTripMs: fc.double({ min: 0.05, max: 5, noNaN: true }),
    whereInTrip: fc.double({ min: 0, max: 1, noNaN: true }),
  });

  it('always holds the true offset, and readings 4 ms apart for a second pin it within them and a round trip', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -1e11, max: 1e11, noNaN: true }),
        fc.double({ min: 0, max: 1e7, noNaN: true }),
        fc.array(trip, { minLength: 300, maxLength: 300 }),
        (offsetMs, start, trips) => {
          const estimate = new OffsetEstimate();
          let now = start;
          // Checked after every reading, and asserted once (an expect per reading was most of the test's time).
          const lost: { reading: number; low: number; high: number }[] = [];
          for (const [i, { roundTripMs, whereInTrip }] of trips.entries()) {
            estimate.add(reading(offsetMs, now, roundTripMs, whereInTrip));
            if (!(estimate.low <= offsetMs && estimate.high > offsetMs))
              lost.push({ reading: i, low: estimate.low, high: estimate.high });
            now += roundTripMs + 4;
          }
          expect(lost).toEqual([]);
          // A gap of 4 ms and round trips of up to 5 ms on either side of the turn.
          expect(estimate.uncertaintyMs).toBeLessThanOrEqual(7);
          expect(Math.abs(estimate.offsetMs - offsetMs)).toBeLessThanOrEqual(7);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('is within half a second plus the round trip after one reading', () => {
    const estimate = new OffsetEstimate();
    estimate.add(reading(1234.5, 10_000, 2, 0.5));
    expect(estimate.uncertaintyMs).toBeCloseTo(501, 5);
    expect(Math.abs(estimate.offsetMs - 1234.5)).toBeLessThanOrEqual(501);
  });

  it('starts again from a reading that contradicts it, as after a server restart with another clock', () => {
    const estimate = new OffsetEstimate();
    estimate.add(reading(0, 1000, 1, 0.5));
    estimate.add(reading(3_600_000, 1500, 1, 0.5));
    expect(estimate.low).toBeLessThanOrEqual(3_600_000);
    expect(estimate.high).toBeGreaterThan(3_600_000);
  });
});
