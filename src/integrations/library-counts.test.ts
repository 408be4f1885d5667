import { describe, expect, it } from 'vitest';
import type { Decision, LimitStatus } from '../shared/decision.js';
import { libraryCounts, mismatchWarning, onceEach, tightestLimit } from './library-counts.js';

const minute = (remaining: number, resetSeconds = 60): LimitStatus => ({
  name: 'login-1m',
  limit: 5,
  window: 60,
  remaining,
  resetSeconds,
});
const day = (remaining: number): LimitStatus => ({
  name: 'login-1d',
  limit: 100,
  window: 86_400,
  remaining,
  resetSeconds: 86_400,
});
const NOW = 1_700_000_000_000;

describe('libraryCounts', () => {
  it('is over the limit exactly when memgate denied, resetting after its retryAfter', () => {
    const denied: Decision = { allowed: false, limits: [minute(0, 40)], retryAfter: 12 };
    expect(libraryCounts(denied, 5, NOW)).toEqual({ hits: 6, resetAtMs: NOW + 12_000 });
    // Whatever limit the library says, a denial is over it.
    expect(libraryCounts(denied, 50, NOW).hits).toBe(51);
  });

  it("makes the library's remaining memgate's, for the limit closest to exhaustion", () => {
    const allowed: Decision = { allowed: true, limits: [minute(3, 58), day(1)] };
    // The day has 1 left, the minute 3: the day is closest, and frees up in a day.
    expect(libraryCounts(allowed, 5, NOW)).toEqual({ hits: 4, resetAtMs: NOW + 86_400_000 });
    const fresh: Decision = { allowed: true, limits: [minute(4), day(99)] };
    expect(libraryCounts(fresh, 5, NOW)).toEqual({ hits: 1, resetAtMs: NOW + 60_000 });
  });

  it('stays within 1..limit when the library says another limit, and allows a degraded allow as 1 hit', () => {
    expect(libraryCounts({ allowed: true, limits: [minute(4)] }, 2, NOW).hits).toBe(1);
    expect(libraryCounts({ allowed: true, limits: [minute(0)] }, 2, NOW).hits).toBe(2);
    expect(libraryCounts({ allowed: true, limits: [], degraded: true }, 5, NOW)).toEqual({
      hits: 1,
      resetAtMs: NOW + 1000,
    });
    expect(libraryCounts({ allowed: false, limits: [], retryAfter: 1, degraded: true }, 5, NOW).hits).toBe(6);
  });
});

describe('mismatchWarning', () => {
  const settings = { library: 'lib', limitName: 'limit', windowName: 'windowMs' };
  const decision: Decision = { allowed: true, limits: [day(99), minute(4)] };

  it('compares with the tightest limit, the smallest count', () => {
    expect(tightestLimit(decision.limits)?.name).toBe('login-1m');
    expect(mismatchWarning('login', decision, { ...settings, limit: 5, windowMs: 60_000 })).toBeUndefined();
    expect(mismatchWarning('login', decision, { ...settings, limit: undefined, windowMs: undefined })).toBeUndefined();
    const warning = mismatchWarning('login', decision, { ...settings, limit: 10, windowMs: 60_000 });
    expect(warning).toContain('limit 10');
    expect(warning).not.toContain('windowMs 60000');
    expect(warning).toContain('set limit: 5, windowMs: 60000');
    expect(mismatchWarning('login', decision, { ...settings, limit: 5, windowMs: 1000 })).toContain('windowMs 1000');
  });

  it('is written once per message', () => {
    const written: string[] = [];
    const warn = onceEach((m) => written.push(m));
    for (const m of ['a', undefined, 'a', 'b']) warn(m);
    expect(written).toEqual(['a', 'b']);
  });
});
