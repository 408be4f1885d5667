// Envoy's rate limit service as memgate serves it: the gRPC server (server.ts) deciding with
// envoy-decisions.ts, healthy while memgate is ready, as /readyz says.
import type { IncomingHttpHeaders } from 'node:http2';
import { SpanKind, type Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { leavesClientsUncounted, type CounterStore } from '../store/counter-store.js';
import { ATTRIBUTES, failed, parentOf } from '../tracing/spans.js';
import { createEnvoyDecider, type EnvoyLimiter, type LimitHeaderNames, type SettleRefusal } from './envoy-decisions.js';
import { GRPC_STATUS } from './framing.js';
import { InvalidRateLimitRequestError, type RateLimitRequest, type RateLimitResponse } from './messages.js';
import { RATE_LIMIT_SERVICE, startGrpcServer, type GrpcServer, type GrpcServerOptions } from './server.js';
import type { UpstreamStats } from '../upstream-stats.js';

export interface RateLimitServiceOptions {
  readonly port: number;
  readonly host: string;
  /** Whose snapshot in force decides each call: its policies and its Envoy configuration, swapped together on a reload. */
  readonly limiter: EnvoyLimiter;
  /** For the health service: the counter servers must answer, as for /readyz. */
  readonly store: Pick<CounterStore, 'health'>;
  /** True once the service drains: health answers NOT_SERVING, so Envoy moves to other instances. */
  readonly draining: () => boolean;
  readonly onShadowOverLimit: (event: string) => void;
  /** Every descriptor in shadow (MEMGATE_ENVOY_SHADOW_MODE, upstream's SHADOW_MODE). */
  readonly shadowAll?: boolean;
  /** Every descriptor in quota mode (MEMGATE_ENVOY_QUOTA_MODE, upstream's QUOTA_MODE). */
  readonly quotaAll?: boolean;
  /** upstream's limit headers in place of memgate's (MEMGATE_ENVOY_LIMIT_HEADERS). */
  readonly limitHeaders?: LimitHeaderNames | undefined;
  /** The call described in the answer's dynamic_metadata (MEMGATE_ENVOY_DYNAMIC_METADATA). */
  readonly describeInMetadata?: boolean;
  /** Told of each reservation a call named and memgate did not settle (for a metric); they are logged too. */
  readonly onSettleRefused?: (refusal: SettleRefusal) => void;
  readonly logger: Logger;
  /** TLS on the listener (MEMGATE_GRPC_TLS_*); in clear when unset. */
  readonly tls?: GrpcServerOptions['tls'];
  /** upstream's statsd stats (MEMGATE_STATSD); none when unset. */
  readonly stats?: UpstreamStats | undefined;
  /** A span per call (tracing/tracing.ts); none when unset. */
  readonly tracer?: Tracer | undefined;
}

/** Least time between two log lines of settles refused for one event and reason. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;
/** Most events and reasons whose last line is remembered; past it, memory starts over. */
const REFUSAL_LOG_KEYS = 1000;

/**
 * Logs refused settles at warn, at most one line per event and reason a minute, counting the
 * ones it left out: a stream of forged or late ones cannot flood the log.
 */
export function settleRefusalLog(logger: Pick<Logger, 'warn'>, now: () => number = Date.now) {
  const last = new Map<string, { atMs: number; left: number }>();
  return (refusal: SettleRefusal): void => {
    const key = `${refusal.event ?? ''}\u0000${refusal.code}`;
    const seen = last.get(key);
    const nowMs = now();
    if (seen && nowMs - seen.atMs < REFUSAL_LOG_INTERVAL_MS) {
      seen.left++;
      return;
    }
    if (!seen && last.size >= REFUSAL_LOG_KEYS) last.clear();
    last.set(key, { atMs: nowMs, left: 0 });
    logger.warn(
      { ...refusal, ...(seen && seen.left > 0 ? { leftOut: seen.left } : {}) },
      refusal.code === 'take_back_failed'
        ? `the reservation of a refused Envoy call could not be taken back: it stays counted until its windows pass (see docs/envoy.md, "Costs known after the response")`
        : `a reservation named by an Envoy call was not settled (${refusal.code}); the call was answered all the same (see docs/envoy.md, "Costs known after the response")`,
    );
  };
}

export async function startRateLimitService(options: RateLimitServiceOptions): Promise<GrpcServer> {
  const { logger } = options;
  const overridden = new Set<string>();
  const skipped = new Set<string>();
  const logRefusal = settleRefusalLog(logger);
  const decide = createEnvoyDecider({
    limiter: options.limiter,
    onShadowOverLimit: options.onShadowOverLimit,
    ...(options.shadowAll ? { shadowAll: true } : {}),
    ...(options.quotaAll ? { quotaAll: true } : {}),
    ...(options.limitHeaders ? { limitHeaders: options.limitHeaders } : {}),
    ...(options.describeInMetadata ? { describeInMetadata: true } : {}),
    ...(options.stats ? { stats: options.stats } : {}),
    onLimitOverride: (domain) => {
      // Once per domain: every request of a route with the override carries it.
      if (overridden.has(domain)) return;
      overridden.add(domain);
      logger.info(
        { domain },
        `Envoy sends per-request limit overrides for domain "${domain}": each is applied in place of its descriptor's configured limit (see docs/envoy.md)`,
      );
    },
    onSettleRefused: (refusal) => {
      options.onSettleRefused?.(refusal);
      logRefusal(refusal);
    },
    onReservationsSkipped: (domain) => {
      // Once per domain, as for overrides: the route's every call does the same.
      if (skipped.has(domain)) return;
      skipped.add(domain);
      logger.warn(
        { domain },
        `Envoy calls of domain "${domain}" hold several descriptors whose limits take reservations: memgate reserves for one per call, so these count their hits_addend without a reservation (see docs/envoy.md)`,
      );
    },
  });
  return startGrpcServer({
    port: options.port,
    host: options.host,
    log: logger,
    tls: options.tls,
    ...(options.stats ? { onInternalError: () => options.stats?.serviceError() } : {}),
    decide: options.tracer ? tracedDecider(options.tracer, decide) : decide,
    serving: async () => !options.draining() && !(await options.store.health()).some(leavesClientsUncounted),
  });
}

/** gRPC's span name for the method, as OpenTelemetry names RPC spans. */
const SHOULD_RATE_LIMIT_SPAN = `${RATE_LIMIT_SERVICE}/ShouldRateLimit`;

/**
 * `decide` with each call a server span, its limiter's store calls as children. The span's
 * parent is the traceparent of the call's headers (its metadata), when it brings one.
 */
export function tracedDecider(
  tracer: Tracer,
  decide: (request: RateLimitRequest) => Promise<RateLimitResponse>,
): (request: RateLimitRequest, headers?: IncomingHttpHeaders) => Promise<RateLimitResponse> {
  return (request, headers) =>
    tracer.startActiveSpan(
      SHOULD_RATE_LIMIT_SPAN,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'rpc.system': 'grpc',
          'rpc.service': RATE_LIMIT_SERVICE,
          'rpc.method': 'ShouldRateLimit',
          [ATTRIBUTES.domain]: request.domain,
          [ATTRIBUTES.descriptors]: request.descriptors.length,
        },
      },
      parentOf(headers),
      async (span) => {
        try {
          const response = await decide(request);
          span.setAttributes({
            'rpc.grpc.status_code': GRPC_STATUS.OK,
            [ATTRIBUTES.decision]: response.overallCode === 'OK' ? 'allowed' : 'denied',
            [ATTRIBUTES.limits]: response.statuses.map((status) => status.currentLimit?.name ?? ''),
            [ATTRIBUTES.degraded]: response.degraded === true,
            ...(response.policyVersion === undefined ? {} : { [ATTRIBUTES.policyVersion]: response.policyVersion }),
          });
          return response;
        } catch (error) {
          // A malformed request is the caller's (INVALID_ARGUMENT); anything else is memgate's (INTERNAL).
          if (error instanceof InvalidRateLimitRequestError)
            span.setAttribute('rpc.grpc.status_code', GRPC_STATUS.INVALID_ARGUMENT);
          else {
            span.setAttribute('rpc.grpc.status_code', GRPC_STATUS.INTERNAL);
            failed(span, error);
          }
          throw error;
        } finally {
          span.end();
        }
      },
    );
}
