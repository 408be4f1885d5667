import { formatDuration } from '../../src/config/duration.js';
import type { Algorithm, Edge } from '../../src/config/policies.js';

/**
 * A token bucket sized against a sliding window of `limit` L per `window` W: L tokens every
 * `ratePeriodWindows` windows, and a burst relative to L.
 */
export interface BucketSizing {
  /** The bucket's rate is L tokens every this many windows: 1 is the window's own long-run rate. */
  readonly ratePeriodWindows: number;
  /** The burst: `limit` is L, `half` is ⌊L/2⌋ + 1. */
  readonly burst: 'limit' | 'half';
}

/** One way of counting: plain data, so it can travel to a worker thread. */
export interface Scheme {
  readonly name: string;
  readonly algorithm: Algorithm;
  readonly edge: Edge;
  /**
   * Seconds; equals the window for fixed windows and the two-counter estimate, and for token
   * buckets, which have no buckets of time (one value per client, like a fixed window's one key).
   */
  readonly granularity: number;
  /** A token bucket's rate and burst, relative to the window's limit (`algorithm: token-bucket`). */
  readonly bucket?: BucketSizing;
  /** A token bucket's rate and burst on three lines, for a chart's axis where a bucket size would go. */
  readonly short?: string;
  /** The most a token bucket admits in any window, in terms of the limit L: `2L − 1`, `L`. */
  readonly bound?: string;
}

/** A token bucket's rate and burst for a window of `limit` per `window` seconds. */
export function bucketFor(
  sizing: BucketSizing,
  limit: number,
  window: number,
): { readonly count: number; readonly periodSeconds: number; readonly burst: number } {
  const burst = sizing.burst === 'limit' ? limit : Math.floor(limit / 2) + 1;
  return { count: limit, periodSeconds: window * sizing.ratePeriodWindows, burst };
}

/**
 * The most a token bucket of rate r and burst b admits in any window (t − W, t]: b + ⌈W/T⌉ − 1,
 * T being the time one token takes to come back (1/r, as memgate rounds it: `emissionUs`). See
 * docs/accuracy.md for why; it is reached by b requests at once and then one every T.
 */
export function bucketWorstWindow(burst: number, emissionUs: number, window: number): number {
  return burst + Math.ceil((window * 1_000_000) / emissionUs) - 1;
}

/** The memgate policy that runs a scheme: one event, `e`, with the scheme's one limit. */
export function schemePolicies(scheme: Scheme, limit: number, window: number): object {
  if (scheme.bucket) {
    const { count, periodSeconds, burst } = bucketFor(scheme.bucket, limit, window);
    return { events: { e: { algorithm: 'token-bucket', limits: [{ rate: `${count}/${periodSeconds}s`, burst }] } } };
  }
  return scheme.algorithm === 'fixed'
    ? { events: { e: { algorithm: 'fixed', limits: [{ limit, window }] } } }
    : { events: { e: { edge: scheme.edge, limits: [{ limit, window, granularity: scheme.granularity }] } } };
}

function sliding(granularity: number, edge: Edge, name?: string): Scheme {
  return {
    name: name ?? `${formatDuration(granularity)} buckets${granularity === 1 ? '' : `, ${edge} edge`}`,
    algorithm: 'sliding',
    edge,
    granularity,
  };
}

function fixed(window: number): Scheme {
  return { name: 'fixed window', algorithm: 'fixed', edge: 'whole', granularity: window };
}

function tokenBucket(window: number, bucket: BucketSizing, rate: string, burst: string, bound: string): Scheme {
  return {
    name: `token bucket ${rate}, burst ${burst}`,
    algorithm: 'token-bucket',
    edge: 'whole',
    granularity: window,
    bucket,
    short: `${rate}\nburst\n${burst}`,
    bound,
  };
}

const EDGES: readonly Edge[] = ['whole', 'drop', 'weighted'];

/**
 * Token buckets beside a sliding window of L per W, named in L and W so that one name fits
 * every limit: the window's long-run rate with its limit as the burst (up to 2L − 1 in a
 * window), and one that never admits more than L in any window, at half the rate with half
 * the burst (L/2 rounded down, plus 1).
 */
function tokenBuckets(window: number): Scheme[] {
  // b + ⌈W/T⌉ − 1 with T = W/L: L + L − 1. With T = 2W/L: ⌊L/2⌋ + 1 + ⌈L/2⌉ − 1 = L.
  return [
    tokenBucket(window, { ratePeriodWindows: 1, burst: 'limit' }, 'L/W', 'L', '2L − 1'),
    tokenBucket(window, { ratePeriodWindows: 2, burst: 'half' }, 'L/2W', 'L/2+1', 'L'),
  ];
}

/**
 * The schemes compared for a window: 1 s buckets (exact; every edge rule is the same
 * there), coarser granularities under each edge rule, a fixed window, Cloudflare's
 * two-counter estimate (one bucket per window, weighted edge), and token buckets.
 */
export function schemesFor(window: number): Scheme[] {
  const granularities = window >= 86_400 ? [60, 3600] : [5, 10, 15, 30].filter((g) => window % g === 0 && g < window);
  return [
    sliding(1, 'whole'),
    ...granularities.flatMap((g) => EDGES.map((edge) => sliding(g, edge))),
    fixed(window),
    sliding(window, 'weighted', 'two-counter (Cloudflare)'),
    ...tokenBuckets(window),
  ];
}
