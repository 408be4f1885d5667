import { describe, expect, it } from 'vitest';
import { createLimiter } from '../../src/counting/limiter.js';
import { createEmbeddedStore } from '../../src/store/embedded-store.js';
import { replayScheme } from './scheme-replay.js';
import { bucketWorstWindow, schemePolicies, schemesFor, type Scheme } from './schemes.js';
import type { TimedRequest } from './traffic.js';

const buckets = schemesFor(60).filter((s) => s.bucket);
const bucketNamed = (name: string): Scheme => {
  const found = buckets.find((s) => s.name === name);
  if (!found) throw new Error(`no scheme ${name}`);
  return found;
};
const SAME_RATE = 'token bucket L/W, burst L';
const HALF_RATE = 'token bucket L/2W, burst L/2+1';

/** memgate's own plan of a scheme's token bucket: T as memgate rounds it, and the burst. */
function plannedBucket(scheme: Scheme, limit: number, window: number) {
  const limiter = createLimiter({ policies: schemePolicies(scheme, limit, window), store: createEmbeddedStore() });
  const plan = limiter.plans.get('e');
  if (plan?.algorithm !== 'token-bucket') throw new Error(`${scheme.name} is not planned as a token bucket`);
  const { emissionUs, burst } = plan.limits[0] as NonNullable<(typeof plan.limits)[0]>;
  return { emissionUs, burst };
}

describe('the token buckets the lab compares', () => {
  it('are two, each with its bound in terms of L', () => {
    expect(buckets.map((s) => [s.name, s.bound])).toEqual([
      [SAME_RATE, '2L − 1'],
      [HALF_RATE, 'L'],
    ]);
    expect(schemesFor(86_400).filter((s) => s.bucket)).toHaveLength(2);
  });

  it('are the policies memgate runs: 10/60s with burst 10, 10/120s with burst 6', () => {
    expect(schemePolicies(bucketNamed(SAME_RATE), 10, 60)).toEqual({
      events: { e: { algorithm: 'token-bucket', limits: [{ rate: '10/60s', burst: 10 }] } },
    });
    expect(schemePolicies(bucketNamed(HALF_RATE), 10, 60)).toEqual({
      events: { e: { algorithm: 'token-bucket', limits: [{ rate: '10/120s', burst: 6 }] } },
    });
    expect(plannedBucket(bucketNamed(HALF_RATE), 10, 60)).toEqual({ emissionUs: 12_000_000, burst: 6 });
  });

  it.each([7, 60, 3600, 86_400])('admit at most 2L − 1 and L in any %i s window, for every limit L', (window) => {
    for (let limit = 1; limit <= 60; limit++) {
      for (const [name, most] of [
        [SAME_RATE, 2 * limit - 1],
        [HALF_RATE, limit],
      ] as const) {
        const scheme = bucketNamed(name);
        const { burst, emissionUs } = plannedBucket(scheme, limit, window);
        expect(bucketWorstWindow(burst, emissionUs, window), `${name}, L = ${limit}`).toBe(most);
      }
    }
  });

  it.each([SAME_RATE, HALF_RATE])(
    '%s reaches its bound: a full burst, then a request each time a token is back',
    async (name) => {
      const [limit, window] = [10, 60];
      const scheme = bucketNamed(name);
      const { burst, emissionUs } = plannedBucket(scheme, limit, window);
      const startMs = Date.UTC(2026, 10, 22);
      const requests: TimedRequest[] = [
        ...Array.from({ length: burst }, () => ({ ms: startMs, feature: 'f' })),
        ...Array.from({ length: 30 }, (_, k) => ({ ms: startMs + ((k + 1) * emissionUs) / 1000, feature: 'f' })),
      ];
      const result = await replayScheme(requests, new Uint8Array(requests.length).fill(1), scheme, { limit, window });
      expect(result.allowed).toBe(requests.length);
      expect(result.worstOverAdmission).toBe(bucketWorstWindow(burst, emissionUs, window) / limit);
      expect(result.worstBound).toBe(result.worstOverAdmission);
      expect(result).toMatchObject({ keysPerCheck: { mean: 1, max: 1 }, itemsPerFeature: 1 });
    },
  );
});
