// envoyproxy/ratelimit's statsd stats, under its own names, beside memgate's Prometheus metrics
// (MEMGATE_STATSD, or upstream's USE_STATSD with STATSD_HOST and STATSD_PORT): dashboards and
// alerts built on upstream's stats keep working after a switch. hot-shots sends them, counters
// summed over each flush (MEMGATE_STATSD_FLUSH_MS), over TCP as upstream does unless told UDP.
import { StatsD } from 'hot-shots';
import type { StatsdTarget } from './config/settings.js';
import type { DescriptorHits, EnvoyStatsSink } from './grpc/envoy-decisions.js';

/** What each descriptor's hits add to upstream's counters. */
export interface HitCounts {
  readonly total_hits: number;
  readonly over_limit: number;
  readonly near_limit: number;
  readonly within_limit: number;
  readonly shadow_mode: number;
  readonly over_limit_with_local_cache: number;
}

/**
 * upstream's arithmetic (base_limiter.go): hits past the limit are over_limit, hits past
 * floor(limit × nearRatio) and within the limit near_limit, and hits within the limit
 * within_limit; a call that crosses the limit splits its hits between near and over. A
 * descriptor in shadow that is over counts its hits as shadow_mode too. A denial answered from
 * memory counts every hit over_limit and over_limit_with_local_cache, as upstream's local cache.
 */
export function hitCounts(
  { limit, hits, before, over, shadow, fromMemory }: DescriptorHits,
  nearRatio: number,
): HitCounts {
  const counts = {
    total_hits: hits,
    over_limit: 0,
    near_limit: 0,
    within_limit: 0,
    shadow_mode: 0,
    over_limit_with_local_cache: 0,
  };
  if (fromMemory) {
    counts.over_limit = counts.over_limit_with_local_cache = hits;
    if (shadow) counts.shadow_mode = hits;
    return counts;
  }
  // float32 as upstream multiplies (Go's float32(limit) * ratio), then floored.
  const near = Math.floor(Math.fround(Math.fround(limit) * Math.fround(nearRatio)));
  const after = before + hits;
  if (after > limit) {
    // Hits past the limit: all of them when it was full before, else those beyond it (the
    // ones below it were near the limit). A descriptor in its own shadow_mode counts them as
    // shadow_mode too, as upstream's increaseShadowModeStats does.
    const past = before >= limit ? hits : after - limit;
    counts.over_limit = past;
    if (before < limit) counts.near_limit = limit - Math.max(near, before);
    if (shadow) counts.shadow_mode = past;
    return counts;
  }
  if (over) {
    // Refused though the count it reports has room for them (its counter shared with another
    // descriptor of the call, say): every hit over.
    counts.over_limit = hits;
    if (shadow) counts.shadow_mode = hits;
    return counts;
  }
  if (after > near) counts.near_limit = before >= near ? hits : after - near;
  counts.within_limit = hits;
  return counts;
}

export interface UpstreamStats extends EnvoyStatsSink {
  /** A load of the policy and Envoy files: at start, and each reload (config_load_success or _error). */
  configLoad(succeeded: boolean): void;
  /** A call answered INTERNAL (call.should_rate_limit.service_error). */
  serviceError(): void;
  /** Sends what is held, and closes the socket. */
  close(): Promise<void>;
}

export interface UpstreamStatsOptions {
  readonly target: StatsdTarget;
  readonly flushMs: number;
  /** NEAR_LIMIT_RATIO: where near_limit starts, as a fraction of the limit. */
  readonly nearRatio: number;
  /** A socket error (statsd down): told, never thrown; hot-shots reconnects. */
  readonly onError: (error: Error) => void;
}

const HIT_STATS = [
  'total_hits',
  'over_limit',
  'near_limit',
  'within_limit',
  'shadow_mode',
  'over_limit_with_local_cache',
] as const satisfies readonly (keyof HitCounts)[];

const IPV4 = /\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}/g;

/**
 * upstream's utils.SanitizeStatName, applied to each stat key and domain: `:` and `|` become `_`,
 * and so do the dots of every run shaped like an IPv4 address (`10.0.0.1` is `10_0_0_1`), so that
 * an address is one node of the name. hot-shots then makes `\n` and `\r` `_` too.
 */
export function sanitizeStatName(name: string): string {
  return name.replaceAll(/[:|]/g, '_').replaceAll(IPV4, (address) => address.replaceAll('.', '_'));
}

/** Distinct counters summed in one flush (5 per descriptor key): hot-shots' default is 5,000. */
const MAX_COUNTERS_PER_FLUSH = 100_000;
/** Bytes of lines held before a write, past the counters summed. */
const BUFFER_BYTES = 8192;

/** The longest a close waits for statsd to take the last counts. */
const CLOSE_WAIT_MS = 1000;

export function createUpstreamStats({ target, flushMs, nearRatio, onError }: UpstreamStatsOptions): UpstreamStats {
  const client = new StatsD({
    host: target.host,
    port: target.port,
    protocol: target.protocol,
    prefix: 'ratelimit.service.',
    // Summed per flush, as upstream's gostats sends them; past maxContexts counters a flush, lines
    // are still buffered, never one write per increment on the request path.
    aggregation: { flushInterval: flushMs, maxContexts: MAX_COUNTERS_PER_FLUSH },
    maxBufferSize: BUFFER_BYTES,
    bufferFlushInterval: flushMs,
    errorHandler: onError,
    tcpGracefulErrorHandling: true,
  });
  const rateLimit = (key: string, stat: string, value: number) => {
    if (value > 0) client.increment(`rate_limit.${key}.${stat}`, value);
  };
  return {
    descriptor(hits) {
      const counts = hitCounts(hits, nearRatio);
      const key = sanitizeStatName(hits.key);
      for (const stat of HIT_STATS) rateLimit(key, stat, counts[stat]);
    },
    domainNotFound(domain) {
      rateLimit(sanitizeStatName(domain), 'domain_not_found', 1);
    },
    globalShadow() {
      client.increment('global_shadow_mode');
    },
    configLoad(succeeded) {
      client.increment(succeeded ? 'config_load_success' : 'config_load_error');
    },
    serviceError() {
      client.increment('call.should_rate_limit.service_error');
    },
    // What is held is sent; a statsd gone meanwhile never acknowledges the close, so it is not waited for past CLOSE_WAIT_MS.
    close: () =>
      new Promise((resolve) => {
        const gaveUp = setTimeout(resolve, CLOSE_WAIT_MS);
        client.close(() => {
          clearTimeout(gaveUp);
          resolve();
        });
      }),
  };
}
