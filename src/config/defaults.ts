/**
 * Every default of memgate in one table: the service's settings (README, `--help`) and
 * the library's options take their values from here, so the two never disagree. It imports
 * only the client's share of them (src/shared/, which imports nothing of memgate).
 */
import { CLIENT_DEFAULTS } from '../shared/defaults.js';

/**
 * Ajv options for every validator memgate compiles. Ajv's code optimizer (`code.optimize`)
 * leaves the process slower at everything afterwards: with one schema compiled by it,
 * every HTTP request of a bare fastify route cost 9 µs more CPU (35 → 44 µs, measured
 * side by side with autocannon), whether or not the validator ever ran; without it the
 * validators are as fast and the requests cost nothing more. Cause unknown (no V8
 * protector is invalidated); the figures are in docs/performance.md.
 */
export const AJV_CODE_OPTIONS = { optimize: false } as const;

/** What a key prefix (MEMGATE_KEY_PREFIX, createLimiter's keyPrefix) may be: it is part of every Memcached key. */
export const KEY_PREFIX_PATTERN = /^[A-Za-z0-9_.-]{1,32}$/;

export const DEFAULTS = {
  // What memgate/client and the framework entries default to as well (src/shared/defaults.ts).
  ...CLIENT_DEFAULTS,
  /** PORT. */
  port: 8080,
  /**
   * Plans one limiter keeps for limits made while serving (Envoy's per-request `limit`), the
   * least recently used dropped first: each is a few hundred bytes, and requests choose them.
   */
  runtimePlans: 1000,
  /** HOST. */
  host: '0.0.0.0',
  /** MEMGATE_KEY_PREFIX: the first part of every counter key. */
  keyPrefix: 'mg',
  /** LOG_LEVEL. */
  logLevel: 'info',

  /** MEMCACHED_TIMEOUT_MS: how long a server may stay silent while a call waits on it. */
  memcachedTimeoutMs: 250,
  /** MEMCACHED_MAX_IN_FLIGHT: checks that may wait on Memcached at once; more are shed. */
  memcachedMaxInFlight: 1000,
  /** MEMCACHED_EXPIRATION_JITTER_S: most seconds added at random to a new counter's life; 0 adds none. */
  memcachedExpirationJitterS: 0,
  /**
   * The most MEMCACHED_EXPIRATION_JITTER_S takes: a day is far wider than any crowd of keys made
   * together needs spreading (upstream's default is 300), and a value meant in ms (300000) would
   * otherwise keep every dead counter for days.
   */
  maxMemcachedExpirationJitterS: 86_400,
  /** Servers one call may talk to at once. */
  memcachedMaxParallelServers: 8,
  /** MEMCACHED_FAILOVER: a down server's clients move to the next server on the ring. */
  memcachedFailover: true,
  /** MEMCACHED_FAILOVER_HOLD_DOWN_MS: least time a server stays out of placement once its clients moved. */
  memcachedFailoverHoldDownMs: 30_000,
  /** MEMCACHED_FAILOVER_SETTLE_MS: how long a server must answer without a break before its clients move back. */
  memcachedFailoverSettleMs: 10_000,
  /** A server that fails again this soon after its clients moved back stays out twice as long as last time… */
  memcachedFailoverFlapWindowMs: 300_000,
  /** …up to this long. */
  memcachedFailoverMaxHoldDownMs: 600_000,
  /** How often an eviction watch looks at every server's `evictions`. */
  evictionWatchIntervalMs: 30_000,

  /** MEMGATE_MAX_CLOCK_SKEW_MS: how far apart instances' clocks may be. */
  maxClockSkewMs: 2000,
  /** MEMGATE_CACHE_MB: memory for features' settled counts and denials, every event together, in MiB. */
  cacheMb: 256,
  /** MEMGATE_MAX_DENIAL_CACHE_MS: longest a denial is repeated from memory. */
  maxDenialCacheMs: 1000,
  /**
   * V8's old space beyond MEMGATE_CACHE_MB, in MiB, when memgate sets the heap limit (the
   * operator set no --max-old-space-size): what the rest of the process keeps live, and
   * room for garbage between collections (docs/operations.md, Memory).
   */
  heapBeyondCacheMb: 80,
  /** Items the embedded store holds before it evicts the oldest. */
  embeddedMaxItems: 2_000_000,

  /** MEMGATE_MAX_EVENT_LOOP_DELAY_MS: checks are shed while the event loop lags more. */
  maxEventLoopDelayMs: 1000,
  /** How often the event loop's lag is sampled (the mean over the last period decides shedding). */
  eventLoopSampleMs: 1000,
  /**
   * Largest request body but a batch's: one check or lease of the longest event (64 bytes) and
   * feature (1024 UTF-8 bytes), even written with every byte escaped as `\u00XX` (6.4 KB).
   */
  bodyLimitBytes: 8 * 1024,
  /** Arrays and objects inside one another in a JSON body: the deepest request needs 3. */
  jsonMaxDepth: 4,
  /** Values in a JSON body (by its commas): a full /lease/batch needs about 800. */
  jsonMaxValues: 1024,
  /**
   * A JSON body larger than this is scanned, parsed and checked in steps with the event loop
   * between them, so that a flood of large batches delays other requests by one step's time
   * (about 0.5 ms for a full batch) instead of the whole body's.
   */
  jsonStepAboveBytes: 32 * 1024,
  /** Longest a client may take to send a whole request. */
  requestTimeoutMs: 10_000,
  /** Longest a shutdown may take, after the drain, before the process exits anyway. */
  shutdownGraceMs: 10_000,
  /**
   * The same stop signal again within this long is the same stop (systemd, `timeout` and
   * shells signal every process at once, and the launcher hands it on): it does not cut
   * the drain short, as a later second signal does.
   */
  repeatedSignalMs: 1000,
  /** Changes to the policy files settle this long before they are read (an editor writes, then renames). */
  policyWatchSettleMs: 200,
  /** How often the watched folders are looked at again: one removed and made again is watched anew (MEMGATE_POLICY_WATCH_RECHECK_MS). */
  policyWatchRecheckMs: 10_000,
  /** Largest policy or Envoy file read: 20,000 client rules fit with room. */
  policyFileMaxBytes: 4 * 1024 * 1024,
  /**
   * Deepest nesting of a policy or Envoy file (maps, lists): a policy file needs 7, Envoy's
   * descriptors a few more a level; thousands overflow the parser's stack.
   */
  policyFileMaxDepth: 64,
  /**
   * Most values (keys, items, as the bound counts them) a policy or Envoy file may hold:
   * 20,000 overrides of two limits each count about 460,000.
   */
  policyFileMaxValues: 1_000_000,
  /**
   * The old space of the process that parses policy and Envoy files: a file of 20,000
   * overrides took about 250 MiB to parse; a file that needs more is refused.
   */
  policyParseHeapMb: 512,
  /** Longest parsing the files may take (20,000 overrides: a few seconds). */
  policyParseDeadlineMs: 30_000,
  /**
   * How much nicer the parse process is than the service: below it, so that checks take the cores first
   * while a large file is parsed, not so low that a busy service starves it past the
   * deadline (at 10 it keeps about a tenth of a core against a busy one).
   */
  policyParseNice: 10,
  /**
   * How much nicer the service's V8 helper threads are than its serving thread: a reload's
   * collections mark on them, and on 2 cores they took turns with checks (the slowest /check
   * during a reload of the largest file 33 to 78 ms; 29 to 46 with them lowered).
   */
  v8HelperNiceBy: 10,
  /** Policy and Envoy files of at most this many bytes together are parsed in the service's own process (config/parse-apart.ts). */
  policyParseHereBytes: 1024,
  /**
   * At start, before anything is served, files of at most this many bytes together are parsed
   * in the service's own process: 64 KiB of overrides in 60 to 110 ms, where a process of
   * their own took 0.45 to 0.48 s to start and answer, on every start (config/parse-apart.ts).
   */
  policyParseHereAtStartBytes: 64 * 1024,
  /** How often a listener's certificate files are read again (MEMGATE_TLS_REFRESH_S). */
  tlsRefreshSeconds: 5,
  /** How often statsd's summed counters are sent (MEMGATE_STATSD_FLUSH_MS). */
  statsdFlushMs: 1000,
  /** Where a descriptor's near_limit stat starts, as upstream's NEAR_LIMIT_RATIO default. */
  envoyNearLimitRatio: 0.8,
  /** The longest the serving thread plans a reload's policies before it lets checks through. */
  planSliceMs: 5,
  /**
   * How far apart instances sharing the counters may put the same policy files in use (a
   * ConfigMap reaches each pod at its kubelet's next sync): a reload's transition trusts bucket
   * sizes new to it only from this long after it, and keeps counting the old ones this long
   * after it ends (docs/operations.md, Changing policies).
   */
  reloadSpreadSeconds: 120,
  /** envoyproxy/ratelimit's limit headers' names, its defaults (MEMGATE_ENVOY_LIMIT_HEADERS=on). */
  envoyLimitHeaders: { limit: 'RateLimit-Limit', remaining: 'RateLimit-Remaining', reset: 'RateLimit-Reset' },
  /** Longest a policy file's read may take: a hung network file system fails the load, never blocks the next. */
  policyReadDeadlineMs: 5000,
  /** MEMGATE_SHUTDOWN_DRAIN_MS: after SIGTERM, how long requests are still answered (with Connection: close). */
  shutdownDrainMs: 5000,
  /**
   * After the drain, the listener closes once no connection has arrived for this long (a
   * connection left in the accept queue would be reset); connections with no request are
   * closed this long after it, time for a request already on its way to arrive.
   */
  shutdownQuietMs: 100,
  /** The longest the listener waits for that quiet; requests arriving meanwhile wait with it. */
  shutdownQuietMaxMs: 1000,
  /** After the drain, how long gRPC calls in flight may take to finish before they are cut. */
  grpcCloseMs: 5000,
  /** How long a gRPC connection may stay silent before memgate pings it (grpc-go's server default, upstream's). */
  grpcKeepaliveMs: 2 * 60 * 60 * 1000,
  /** How long that ping may go unanswered before the connection is closed. */
  grpcKeepaliveTimeoutMs: 20_000,
  /** How long a gRPC call's message may take to arrive once its headers have (Envoy's are a few hundred bytes, sent at once). */
  grpcReadTimeoutMs: 10_000,
  /** gRPC calls one connection may have open at once (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS). */
  grpcMaxConcurrentStreams: 1000,

  /** OTEL_EXPORTER_OTLP_PROTOCOL: OpenTelemetry's default. */
  tracingProtocol: 'http/protobuf',
  /** Where OTLP over HTTP goes without OTEL_EXPORTER_OTLP_ENDPOINT, as OpenTelemetry says (a collector beside memgate). */
  tracingHttpEndpoint: 'http://localhost:4318',
  /** Where OTLP over gRPC goes without an endpoint. */
  tracingGrpcEndpoint: 'http://localhost:4317',
  /** OTEL_TRACES_SAMPLER: a caller's traceparent decides; a request without one is traced. */
  tracingSampler: 'parentbased_always_on',
  /** OTEL_SERVICE_NAME. */
  tracingServiceName: 'memgate',
  /** Longest the spans still held may take to be sent when the service stops; past it they are dropped. */
  tracingFlushMs: 3000,

  /** How long a request of a concurrency limit may hold its slot when the policy names no `timeout`: then it frees itself. */
  concurrencyTimeoutSeconds: 60,
  /** Longest `timeout` a concurrency limit may set: a slot lost with its instance frees itself within it. */
  concurrencyMaxTimeoutSeconds: 86_400,
  /** Most requests in flight a concurrency limit may allow: every check reads each of its slots. */
  concurrencyMaxLimit: 1000,

  /** A lease's life when the policy's `lease` names none: the client returns what it did not spend by then. */
  leaseLifeSeconds: 5,
  /** Most units one lease may take when the policy's `lease` names none, as a share of the event's tightest limit. */
  leaseMaxUnitsShare: 0.1,
  /** How late after its life a lease's return is still taken; its buckets stay unsettled this long. */
  leaseReturnGraceSeconds: 2,
  /** Longest lease life a policy may set. */
  leaseMaxLifeSeconds: 60,
  /**
   * A reservation's life when the policy's `reservations` names none (within the event's
   * shortest window, with the grace): how long its holder has to settle it.
   */
  reservationLifeSeconds: 300,
  /** Longest reservation life a policy may set: its buckets stay unsettled this long. */
  reservationMaxLifeSeconds: 3600,

  /** Failed admin authentications one client address may make per window before 429. */
  adminFailureLimit: 10,
  /** The window of adminFailureLimit, in seconds. */
  adminFailureWindowSeconds: 60,

  /** MEMGATE_USAGE_DB: the embedded usage history; `off` records none. */
  usageDb: './data/usage.db',
  /** MEMGATE_USAGE_FLUSH_S: how often an instance writes the decisions it has counted. */
  usageFlushSeconds: 15,
  /** MEMGATE_USAGE_TOP: the heaviest clients kept per event, minute and outcome. */
  usageTop: 20,
  /** MEMGATE_USAGE_RETENTION: archives as Graphite's storage-schemas.conf writes them. */
  usageRetention: '1s:6h,1m:30d,1h:2y',
  /**
   * Clients the heavy-hitters summary follows per event, minute and outcome, as a multiple
   * of MEMGATE_USAGE_TOP: a minute with fewer clients than this has exact counts for all.
   */
  usageSummaryPerTop: 50,
  /** Seconds and minutes of counts kept for a store that keeps failing; past it the oldest are dropped (a metric counts them). */
  usageMaxPendingRows: 500_000,
  /** The longest step a /usage answer may ask for: a year. */
  usageMaxStepSeconds: 31_536_000,
  /** Points a /usage answer may hold. */
  usageMaxPoints: 10_000,
  /** Points a /usage answer aims at when it names no step nor maxDataPoints: an hour in minutes. */
  usageDefaultMaxDataPoints: 60,
  /** /usage's range when none is given: the last hour. */
  usageDefaultRangeSeconds: 3600,
  /** Periods /usage/top sums at most (a day of minutes): longer ranges read a coarser archive. */
  usageTopMaxPeriods: 1440,
  /** Clients /usage/top lists when no limit is given, and the most it lists. */
  usageTopDefaultLimit: 20,
  usageTopMaxLimit: 1000,
  /** How long a write to Graphite or a read from graphite-web may take. */
  graphiteTimeoutMs: 5000,

  /**
   * `memgate what-if`: the longest log line it reads, in bytes; a longer one is skipped and
   * counted. nginx's request line is at most 8 KiB by default, a referer and a user agent as
   * long again.
   */
  whatIfMaxLineBytes: 64 * 1024,
  /** How far behind the newest line read a log line may be and still be replayed in its place. */
  whatIfReorderSeconds: 60,
  /** The most the lines held for that may weigh, in bytes: past it the oldest are replayed early. */
  whatIfReorderBytes: 16 * 1024 * 1024,
  /**
   * `memgate what-if`: the most points each event's denials over time has (in the report and
   * its chart), whatever span the log covers: the step grows from a minute to keep within it.
   */
  whatIfChartPoints: 500,

} as const;
