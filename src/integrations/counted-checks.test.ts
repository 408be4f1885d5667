import { describe, expect, it } from 'vitest';
import { CountedChecks } from './counted-checks.js';

const check = (at: number, counted = true) => ({ at, cost: 1, counted });

describe('CountedChecks', () => {
  it('gives back the newest check of a key first, each once', () => {
    const checks = new CountedChecks({ maxKeys: 10, perKey: 4 });
    checks.record('a', check(1));
    checks.record('b', check(2));
    checks.record('a', check(3, false));
    expect(checks.takeNewest('a')).toEqual(check(3, false));
    expect(checks.takeNewest('a')).toEqual(check(1));
    expect(checks.takeNewest('a')).toBeUndefined();
    expect(checks.keys).toBe(1);
  });

  it('keeps at most perKey checks per key and maxKeys keys, forgetting the oldest', () => {
    const checks = new CountedChecks({ maxKeys: 2, perKey: 2 });
    for (const at of [1, 2, 3]) checks.record('a', check(at));
    expect([checks.takeNewest('a')?.at, checks.takeNewest('a')?.at, checks.takeNewest('a')]).toEqual([3, 2, undefined]);
    checks.record('a', check(1));
    checks.record('b', check(2));
    checks.record('c', check(3));
    expect(checks.keys).toBe(2);
    expect(checks.takeNewest('a')).toBeUndefined();
    checks.forget('b');
    expect(checks.takeNewest('b')).toBeUndefined();
    expect(checks.takeNewest('c')?.at).toBe(3);
  });
});
