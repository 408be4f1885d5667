import { describe, expect, it } from 'vitest';
import { fixedWindows, slidingLog, type ReferenceLimiter } from './reference.js';

const decisions = (limiter: ReferenceLimiter, seconds: number[], feature = 'f') =>
  seconds.map((s) => limiter.check(feature, s * 1000));

describe('the reference limiters', () => {
  // seeds/003: limit 2 per minute, requests at 00:40, 00:50, 01:10, 01:20, 01:40.
  const times = [40, 50, 70, 80, 100];

  it('sliding log: the rolling-window example', () => {
    expect(decisions(slidingLog([{ limit: 2, window: 60 }]), times)).toEqual([true, true, false, false, true]);
  });

  it('fixed windows: the fixed-window example', () => {
    expect(decisions(fixedWindows([{ limit: 2, window: 60 }]), times)).toEqual([true, true, true, true, false]);
  });

  it('uses the window (t − W, t] to the millisecond', () => {
    const log = slidingLog([{ limit: 1, window: 60 }]);
    expect(log.check('f', 1_000)).toBe(true);
    expect(log.check('f', 60_999)).toBe(false); // 59.999 s later: still inside
    expect(log.check('f', 61_000)).toBe(true); // exactly 60 s later: outside
  });

  it('does not count denied requests, and counts costs', () => {
    const log = slidingLog([{ limit: 3, window: 10 }]);
    expect(log.check('f', 0, 2)).toBe(true);
    expect(log.check('f', 1000, 2)).toBe(false);
    expect(log.check('f', 2000, 1)).toBe(true);
    expect(log.check('f', 9_999, 1)).toBe(false); // (−1, 9999] still holds the requests at 0 and 2000
    expect(log.check('f', 10_000, 1)).toBe(true); // (0, 10000] no longer holds the one at 0
  });

  it('admits only when every limit has room, and keeps features apart', () => {
    const log = slidingLog([
      { limit: 2, window: 1 },
      { limit: 3, window: 60 },
    ]);
    expect(decisions(log, [0, 0, 0, 2, 4, 6])).toEqual([true, true, false, true, false, false]);
    expect(log.check('other', 6000)).toBe(true);
  });

  it('keeps memory to the window on a long trace', () => {
    const log = slidingLog([{ limit: 5, window: 1 }]);
    let admitted = 0;
    for (let ms = 0; ms < 2_000_000; ms += 100) if (log.check('f', ms)) admitted++;
    expect(admitted).toBe(2000 * 5); // 2000 s at 10 requests/s, 5 admitted each second
  });
});
