import { formatDuration } from '../../src/config/duration.js';
import type { Algorithm, Edge } from '../../src/config/policies.js';

/** One way of counting, as the memgate policy that runs it. */
export interface Scheme {
  readonly name: string;
  readonly algorithm: Algorithm;
  readonly edge: Edge;
  /** Seconds; equals the window for fixed windows and the two-counter estimate. */
  readonly granularity: number;
  /** A policy document with one event, `e`, holding the scheme's one limit. */
  policies(limit: number, window: number): object;
}

function sliding(granularity: number, edge: Edge, name?: string): Scheme {
  return {
    name: name ?? `${formatDuration(granularity)} buckets${granularity === 1 ? '' : `, ${edge} edge`}`,
    algorithm: 'sliding',
    edge,
    granularity,
    policies: (limit, window) => ({ events: { e: { edge, limits: [{ limit, window, granularity }] } } }),
  };
}

function fixed(window: number): Scheme {
  return {
    name: 'fixed window',
    algorithm: 'fixed',
    edge: 'whole',
    granularity: window,
    policies: (limit) => ({ events: { e: { algorithm: 'fixed', limits: [{ limit, window }] } } }),
  };
}

const EDGES: readonly Edge[] = ['whole', 'drop', 'weighted'];

/**
 * The schemes compared for a window: 1 s buckets (exact; every edge rule is the same
 * there), coarser granularities under each edge rule, a fixed window, and Cloudflare's
 * two-counter estimate (one bucket per window, weighted edge).
 */
export function schemesFor(window: number): Scheme[] {
  const granularities = window >= 86_400 ? [60, 3600] : [5, 10, 15, 30].filter((g) => window % g === 0 && g < window);
  return [
    sliding(1, 'whole'),
    ...granularities.flatMap((g) => EDGES.map((edge) => sliding(g, edge))),
    fixed(window),
    sliding(window, 'weighted', 'two-counter (Cloudflare)'),
  ];
}
