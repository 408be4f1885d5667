import { describe, expect, it } from 'vitest';
import { featureName } from './feature-name.js';

describe('featureName', () => {
  it('keeps a key memgate takes as it is', () => {
    for (const key of ['127.0.0.1', '::ffff:10.0.0.1', 'é'.repeat(512), 'a@b.c']) expect(featureName(key)).toBe(key);
  });

  it('hashes a key memgate refuses, each to its own name', () => {
    const refused = ['', 'k'.repeat(1025), 'é'.repeat(513), '\ud800', '\udc00', '\ud800x'];
    const names = refused.map(featureName);
    for (const name of names) expect(name).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(new Set(names).size).toBe(refused.length);
    expect(featureName('k'.repeat(1025))).toBe(names[1]);
  });
});
