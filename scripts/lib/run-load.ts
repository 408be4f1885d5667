import autocannon from 'autocannon';
import { randomSource, zipfSampler } from '../accuracy/traffic.js';

/** How long a request may wait for its answer before it counts as a `timeout` (autocannon's default). */
const REQUEST_TIMEOUT_SECONDS = 10;

export interface LoadOptions {
  /** The memgate (or bench server) to load; requests go to its /check. */
  readonly url: URL;
  readonly event: string;
  readonly connections: number;
  /** Seconds to run, unless `requests` is given. */
  readonly duration?: number;
  readonly requests?: number;
  readonly cost?: number;
  /**
   * What each request is: `GET /check` (the default), or, for one client only, the same check
   * as a JSON body (`POST /check`) or a lease of `cost` units (`POST /lease`).
   */
  readonly request?: 'GET /check' | 'POST /check' | 'POST /lease';
  /** Whose request comes next. */
  readonly nextFeature: FeatureSpread;
  /** Called about once a second with how many requests have been answered or have failed so far. */
  readonly onTick?: (done: number) => void;
}

/** What every load run measures, over HTTP or gRPC. */
export interface LoadFigures {
  readonly seconds: number;
  /** Requests answered. */
  readonly requests: number;
  readonly throughput: number;
  /** Milliseconds: whole ones over HTTP, as autocannon records them; to 0.01 ms over gRPC. */
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  /** Answered allowed (200, OK). */
  readonly allowed: number;
  /** Answered denied (429, OVER_LIMIT). */
  readonly denied: number;
  /** Requests that failed, and answers that are neither allowed nor denied. */
  readonly errors: number;
}

export interface LoadSummary extends LoadFigures {
  /** Answers by HTTP status. */
  readonly statuses: Readonly<Record<string, number>>;
  /** Requests that got no answer, by kind: a system error code (ECONNREFUSED, ECONNRESET, …) or `timeout`. */
  readonly failures: Readonly<Record<string, number>>;
}

/** What each kind of failure in LoadSummary.failures means, for people. */
export const FAILURE_KINDS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed while sending',
  ETIMEDOUT: 'connecting timed out',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EADDRNOTAVAIL: 'no local address or port free',
  timeout: `no answer within ${REQUEST_TIMEOUT_SECONDS} s`,
};

/**
 * A feature spread by name: `hot` (one client), `zipf:N` (N clients, Zipf 1.1 popularity)
 * or `uniform:N` (N clients, equally often), seeded.
 */
export function featureSpread(spread: string, seed: number): FeatureSpread {
  if (spread === 'hot') return oneFeature('hot-client');
  const match = /^(zipf|uniform):([0-9]+)$/.exec(spread);
  const clients = Number(match?.[2] ?? 0);
  if (!match || clients < 1) throw new Error(`--features is hot, zipf:N or uniform:N (got ${JSON.stringify(spread)})`);
  const random = randomSource(seed);
  if (match[1] === 'zipf') {
    const rank = zipfSampler(clients, 1.1, random);
    return () => `client-${rank()}`;
  }
  return () => `client-${1 + Math.floor(random() * clients)}`;
}

/** Whose request comes next; `constant` when it is always the same client. */
export type FeatureSpread = (() => string) & { readonly constant?: string };

/** Every request from one client, `feature`. */
export function oneFeature(feature: string): FeatureSpread {
  return Object.assign(() => feature, { constant: feature });
}

/** Drives GET /check (or POST /check, POST /lease) with autocannon and sums up throughput, latency and decisions. */
export async function runLoad(options: LoadOptions): Promise<LoadSummary> {
  const { url, event, connections, nextFeature } = options;
  const cost = options.cost ?? 1;
  const request = options.request ?? 'GET /check';
  if (request !== 'GET /check' && nextFeature.constant === undefined)
    throw new Error(`${request} is sent for one client only`);
  const prefix = `${url.pathname.replace(/\/$/, '')}/check?event=${encodeURIComponent(event)}&feature=`;
  const suffix = cost === 1 ? '' : `&cost=${cost}`;
  const failures: Record<string, number> = {};
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: url.origin,
        connections,
        timeout: REQUEST_TIMEOUT_SECONDS,
        ...(options.requests === undefined ? { duration: options.duration ?? 10 } : { amount: options.requests }),
        // A constant path lets autocannon build the request once instead of once per request.
        requests: [
          request !== 'GET /check'
            ? {
                method: 'POST',
                path: `${url.pathname.replace(/\/$/, '')}/${request === 'POST /lease' ? 'lease' : 'check'}`,
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify(
                  request === 'POST /lease'
                    ? { event, feature: nextFeature.constant, units: cost }
                    : { event, feature: nextFeature.constant, ...(cost === 1 ? {} : { cost }) },
                ),
              }
            : nextFeature.constant === undefined
              ? {
                  method: 'GET',
                  setupRequest: (request) => ({
                    ...request,
                    path: `${prefix}${encodeURIComponent(nextFeature())}${suffix}`,
                  }),
                }
              : { method: 'GET', path: `${prefix}${encodeURIComponent(nextFeature.constant)}${suffix}` },
        ],
      },
      (error, finished) => {
        if (error) reject(error instanceof Error ? error : new Error(String(error)));
        else resolve(finished);
      },
    );
    let failed = 0;
    instance.on('reqError', (error: NodeJS.ErrnoException) => {
      // autocannon reports its own timeouts as an error without a code.
      const kind = error.code ?? (error.message === 'request timed out' ? 'timeout' : error.message);
      failures[kind] = (failures[kind] ?? 0) + 1;
      failed++;
    });
    if (options.onTick) {
      const onTick = options.onTick;
      let answered = 0;
      // Each second autocannon tells how many answers that second brought (its types omit the argument).
      (instance as NodeJS.EventEmitter).on('tick', ({ counter }: { counter: number }) => {
        answered += counter;
        onTick(answered + failed);
      });
    }
  });
  const statuses = result.statusCodeStats as Record<string, { count: number } | undefined>;
  const otherStatuses = Object.entries(statuses)
    .filter(([code]) => code !== '200' && code !== '429')
    .reduce((sum, [, stat]) => sum + (stat?.count ?? 0), 0);
  const answered = result['2xx'] + result.non2xx;
  return {
    seconds: result.duration,
    requests: answered,
    throughput: Math.round(answered / result.duration),
    latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    allowed: statuses['200']?.count ?? 0,
    denied: statuses['429']?.count ?? 0,
    // autocannon's errors include its timeouts.
    errors: result.errors + otherStatuses,
    statuses: Object.fromEntries(Object.entries(statuses).map(([status, stat]) => [status, stat?.count ?? 0])),
    failures,
  };
}
