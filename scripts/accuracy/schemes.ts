import { formatDuration } from '../../src/config/duration.js';
import type { Algorithm, Edge } from '../../src/config/policies.js';

/** One way of counting: plain data, so it can travel to a worker thread. */
export interface Scheme {
  readonly name: string;
  readonly algorithm: Algorithm;
  readonly edge: Edge;
  /** Seconds; equals the window for fixed windows and the two-counter estimate. */
  readonly granularity: number;
}

/** The memgate policy that runs a scheme: one event, `e`, with the scheme's one limit. */
export function schemePolicies(scheme: Scheme, limit: number, window: number): object {
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
