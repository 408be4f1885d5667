// What the accuracy lab shows, replayed: the boundary attack on a fixed window, and the NASA
// trace. Apart from replay.test.ts so that the unit project's two workers share the replays.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { sharedFile } from '../../test/helpers/shared-files.js';
import { parseClf } from './clf.js';
import { replay } from './replay.js';
import { schemesFor } from './schemes.js';
import { SHAPES } from './traffic.js';

const MINUTE = { limit: 10, window: 60 };

describe('what the lab shows', () => {
  it('a fixed window admits twice the limit under the boundary attack', async () => {
    const requests = SHAPES.find((s) => s.name === 'boundary')?.generate({ seed: 1, requests: 400, ...MINUTE }) ?? [];
    const { schemes } = await replay(requests, { ...MINUTE, schemes: schemesFor(60) });
    expect(schemes.find((s) => s.scheme.algorithm === 'fixed')?.worstOverAdmission).toBe(2);
  });

  it('the NASA slice: 1 s buckets exact, whole edges within the limit', async (test) => {
    const { requests } = parseClf(await readFile(sharedFile(test, 'traces/nasa-http-aug95-first-72min.log'), 'utf8'));
    const result = await replay(requests, { limit: 5, window: 60, schemes: schemesFor(60) });
    expect(result.schemes[0]).toMatchObject({ falseAllows: 0, falseDenies: 0 });
    for (const s of result.schemes.filter((s) => s.scheme.algorithm === 'sliding' && s.scheme.edge === 'whole')) {
      expect(s.worstOverAdmission).toBeLessThanOrEqual(1);
    }
  });
});
