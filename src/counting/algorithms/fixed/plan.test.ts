import { describe, expect, it } from 'vitest';
import { fixedCover } from './plan.js';

const midnight = Date.UTC(2026, 10, 22) / 1000;

describe('fixedCover', () => {
  it('is the epoch-aligned window holding now', () => {
    expect(fixedCover(midnight + 3599, 3600)).toEqual([{ size: 3600, start: midnight, count: 1 }]);
    expect(fixedCover(midnight + 3600, 3600)).toEqual([{ size: 3600, start: midnight + 3600, count: 1 }]);
  });
});
