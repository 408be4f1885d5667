import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULTS, KEY_PREFIX_PATTERN } from './defaults.js';
import { parseServerList, ServerListError, type Credentials } from './memcached-servers.js';
import { parseRetention, type Archive } from './retention.js';
import { readPemFile, type ListenerTls, type MemcachedTls } from './tls.js';
import { fromUpstream, isUpstreamVariable, UPSTREAM_NAMES } from './upstream-env.js';
import { misnamedVariables } from './variable-names.js';

type Env = Readonly<Record<string, string | undefined>>;

/** A DNS SRV name as upstream parses MEMCACHE_SRV: `_service._proto.name`. */
const SRV_NAME = /^_(.+?)\._(.+?)\.(.+)$/;

/** An HTTP header's name (RFC 9110's token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The OTLP protocols memgate's tracing sends with (OTEL_EXPORTER_OTLP_PROTOCOL). */
export const TRACING_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
export type TracingProtocol = (typeof TRACING_PROTOCOLS)[number];
export type TracingPropagator = 'tracecontext' | 'baggage';

/** OpenTelemetry's samplers (OTEL_TRACES_SAMPLER) that its JavaScript SDK has. */
export const TRACING_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/**
 * One environment variable (or a pair read together): how it is read, and how `--help`
 * and the README's table of settings describe it. Both are generated from SETTINGS.
 */
export interface Setting<T> {
  /** The variables, as the environment names them: a contract, never renamed. */
  readonly env: readonly [string, ...string[]];
  /** The default as a person reads it; `unset` when there is none. */
  readonly default: string;
  /** What values it takes. */
  readonly values: string;
  /** One line, for `--help` and the README (markdown: backticks and links are dropped for --help). */
  readonly summary: string;
  /** More for the README, after the summary. */
  readonly details?: string;
  /** The value; throws SettingsError naming the variable when it cannot be used. */
  readonly read: (env: Env) => T;
}

/** A setting that cannot be used; each problem is one line naming the variable and why. */
export class SettingsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'SettingsError';
  }
}

/** The example policies shipped in config/, beside src/ and dist/. */
export const BUNDLED_POLICIES = fileURLToPath(new URL('../../config/policies.yaml', import.meta.url));

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Every setting of the service, in the order --help and the README list them. */
export const SETTINGS = {
  port: integer('PORT', DEFAULTS.port, 0, 65_535, '', { summary: 'port to serve on; 0 picks a free one' }),
  host: {
    env: ['HOST'],
    default: DEFAULTS.host,
    values: 'an IP address or a host name',
    summary: 'address to bind',
    read: (env) => {
      const host = value(env, 'HOST') ?? DEFAULTS.host;
      if (isIP(host) === 0 && !/^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})$/.test(host)) {
        throw new SettingsError([`HOST must be an IP address or a host name (got ${JSON.stringify(host)})`]);
      }
      return host;
    },
  },
  configPath: {
    env: ['MEMGATE_CONFIG'],
    default: 'config/policies.yaml',
    values: 'a YAML or JSON policy file',
    summary: 'the policy file; `--config FILE` overrides it',
    read: (env) => value(env, 'MEMGATE_CONFIG') ?? BUNDLED_POLICIES,
  },
  policyWatch: onOff('MEMGATE_POLICY_WATCH', true, {
    summary: 'reload the policy file and `MEMGATE_ENVOY_CONFIG` when they change on disk (an editor\'s save, a Kubernetes ConfigMap update); `SIGHUP` and `POST /admin/reload` reload either way',
    details: 'A file that changes to something invalid keeps the policies in use, logs every problem and counts `memgate_policy_reload_failures_total` (see [Changing policies](docs/operations.md#changing-policies))',
  }),
  policyWatchRecheckMs: integer('MEMGATE_POLICY_WATCH_RECHECK_MS', DEFAULTS.policyWatchRecheckMs, 100, 3_600_000, 'ms', {
    summary: 'how often, while `MEMGATE_POLICY_WATCH` is on, the watched folders are looked at again: a folder removed and made again is watched anew, and its files read',
  }),
  reloadSpreadSeconds: integer('MEMGATE_RELOAD_SPREAD_S', DEFAULTS.reloadSpreadSeconds, 0, 3600, 's', {
    summary: 'how far apart the instances sharing the counters may put the same policy files in use; a reload that changes bucket sizes is judged conservatively for this long and the new windows more',
    details: 'Raise it when the instances reload further apart (a ConfigMap synced by each kubelet, a rollout): one that loads later counts only in the old sizes meanwhile (see [What a reload keeps](docs/operations.md#changing-policies)). Set the same value on every instance',
  }),
  grpcPort: {
    env: ['MEMGATE_GRPC_PORT'],
    default: 'unset',
    values: '0 to 65535',
    summary: "port of the gRPC server: Envoy's rate limit service (`ShouldRateLimit`) and gRPC health, on HOST; unset, off; 0 picks a free one",
    details: 'envoyproxy/ratelimit serves on 8081; see [Envoy](docs/envoy.md)',
    read: (env): number | undefined => {
      const given = value(env, 'MEMGATE_GRPC_PORT');
      if (given === undefined) return undefined;
      if (!/^[0-9]+$/.test(given) || Number(given) > 65_535) {
        throw new SettingsError([`MEMGATE_GRPC_PORT must be a whole number from 0 to 65535 (got ${JSON.stringify(given)})`]);
      }
      return Number(given);
    },
  },
  grpcTls: listenerTls('MEMGATE_GRPC_TLS', 'the gRPC server', {
    clientSan: true,
    details: "Read from envoyproxy/ratelimit's `GRPC_SERVER_USE_TLS` with `GRPC_SERVER_TLS_CERT`, `GRPC_SERVER_TLS_KEY`, `GRPC_CLIENT_TLS_CACERT` and `GRPC_CLIENT_TLS_SAN` too. A client without a certificate is refused at the handshake; one whose certificate lacks the name is answered `UNAUTHENTICATED`",
  }),
  httpTls: listenerTls('MEMGATE_TLS', 'the HTTP server (`PORT`)', {
    clientSan: false,
    details: 'With a client authority, a client without a certificate it signed is refused at the handshake (probes of `/healthz` need one too)',
  }),
  tlsRefreshSeconds: integer('MEMGATE_TLS_REFRESH_S', DEFAULTS.tlsRefreshSeconds, 1, 86_400, 's', {
    summary: "how often the listeners' certificate files (`MEMGATE_TLS_CERT`, `MEMGATE_GRPC_TLS_CERT`, their keys and client authorities) are read again: a renewed certificate is served to new connections without a restart",
  }),
  envoyConfigPath: {
    env: ['MEMGATE_ENVOY_CONFIG'],
    default: 'unset',
    values: 'an envoyproxy/ratelimit YAML file, or a directory of them',
    summary: "Envoy's rate limit descriptors, as envoyproxy/ratelimit reads them; unset, no descriptor has a limit",
    details: "A directory's `.yaml` and `.yml` files are read, not its subdirectories or dot files. Checked at start like the policy file, and read again with it on a reload (see [Envoy](docs/envoy.md))",
    read: (env): string | undefined => value(env, 'MEMGATE_ENVOY_CONFIG'),
  },
  envoyMergeDomains: onOff('MEMGATE_ENVOY_MERGE_DOMAINS', false, {
    summary: "a domain defined in several files of `MEMGATE_ENVOY_CONFIG` is one domain, their descriptors together, as envoyproxy/ratelimit's `MERGE_DOMAIN_CONFIG` (read under that name too); off, a domain belongs to one file",
    details: 'A descriptor two of the files define is refused either way',
  }),
  envoyShadowMode: onOff('MEMGATE_ENVOY_SHADOW_MODE', false, {
    summary: "every Envoy descriptor in shadow, as envoyproxy/ratelimit's `SHADOW_MODE` (read under that name too): each is decided and counted as a `shadow_mode` one, a descriptor over its limit still says `OVER_LIMIT`, and every call is answered `OK`",
    details: '`memgate_envoy_shadow_over_limit_total{event}` counts what would have been refused (see [Envoy](docs/envoy.md#shadow-mode))',
  }),
  envoyQuotaMode: onOff('MEMGATE_ENVOY_QUOTA_MODE', false, {
    summary: "every Envoy descriptor in quota mode, as envoyproxy/ratelimit's `QUOTA_MODE` (read under that name too): a call is over only when every one of its descriptors is",
    details: 'A descriptor over its limit says `OVER_LIMIT` in its status either way (see [Envoy](docs/envoy.md#shadow-mode))',
  }),
  envoyDynamicMetadata: onOff('MEMGATE_ENVOY_DYNAMIC_METADATA', false, {
    summary: "each Envoy answer describes its call in `dynamic_metadata`, as envoyproxy/ratelimit's `RESPONSE_DYNAMIC_METADATA` (read under that name too): its `domain`, its `descriptors` (`entries` as `key=value`, a per-request `limit`, their own `hitsAddend`), the call's `hitsAddend`, and the configured `metadata` of the descriptors that passed",
    details: 'A reservation\'s id is there either way (`memgate_reservation`; see [Envoy](docs/envoy.md#dynamic-metadata))',
  }),
  envoyLimitHeaders: {
    env: ['MEMGATE_ENVOY_LIMIT_HEADERS'],
    default: 'off',
    values: '`off`, `on`, or three header names `limit,remaining,reset`',
    summary: "envoyproxy/ratelimit's limit headers in Envoy's answers, in place of memgate's `RateLimit-Policy` and `RateLimit`: the limit, remaining and reset (seconds) of the descriptor closest to its limit; `on` names them `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`",
    details: "Read from upstream's `LIMIT_RESPONSE_HEADERS_ENABLED` and `LIMIT_LIMIT_HEADER`, `LIMIT_REMAINING_HEADER`, `LIMIT_RESET_HEADER` too",
    read: (env): { limit: string; remaining: string; reset: string } | undefined => {
      const given = value(env, 'MEMGATE_ENVOY_LIMIT_HEADERS');
      if (given === undefined || given === 'off') return undefined;
      if (given === 'on') return { ...DEFAULTS.envoyLimitHeaders };
      const names = given.split(',').map((name) => name.trim());
      const [limit, remaining, reset] = names;
      if (names.length !== 3 || !limit || !remaining || !reset || names.some((name) => !HEADER_NAME.test(name))) {
        throw new SettingsError([
          `MEMGATE_ENVOY_LIMIT_HEADERS must be off, on, or three header names "limit,remaining,reset" (got ${JSON.stringify(given)})`,
        ]);
      }
      return { limit, remaining, reset };
    },
  },
  memcachedServers: {
    env: ['MEMCACHED_SERVERS'],
    default: 'unset',
    values: '`host:port,…`; IPv6 as `[addr]:port`, SASL as `user:pass@host:port`',
    summary: 'the Memcached servers; unset, the embedded store, in-process, for a single instance',
    details: 'Each entry names its port; `memcached://host:port` is read as `host:port`. Set but empty, or with a malformed entry, it stops the service at start; a server that does not answer does not (see [Failure modes](docs/operations.md#failure-modes))',
    read: (env): string | undefined => {
      // Set but empty is likely a template that lost its value: in-process counters, not
      // shared between instances, would be a silent surprise. Unset means the embedded store.
      if (env.MEMCACHED_SERVERS?.trim() === '') {
        throw new SettingsError([
          'MEMCACHED_SERVERS is set but empty: name the servers (host:port,…), or unset it to count in this process only',
        ]);
      }
      const servers = value(env, 'MEMCACHED_SERVERS');
      if (servers === undefined) return undefined;
      try {
        parseServerList(servers);
      } catch (error) {
        if (!(error instanceof ServerListError)) throw error;
        throw new SettingsError([`MEMCACHED_SERVERS entry ${error.entry} ${error.problem}`]);
      }
      return servers;
    },
  },
  memcachedSrv: {
    env: ['MEMCACHED_SRV'],
    default: 'unset',
    values: '`_service._proto.name`, such as `_memcache._tcp.memcached.default.svc.cluster.local`',
    summary: 'the Memcached servers from a DNS SRV record instead of `MEMCACHED_SERVERS`: looked up once at start, its targets sorted by `host:port` (every instance must see the same list)',
    details: "Read from envoyproxy/ratelimit's `MEMCACHE_SRV` too. A record that does not resolve, or holds no target, stops the start; servers added later are used after a restart",
    read: (env): string | undefined => {
      const given = value(env, 'MEMCACHED_SRV');
      if (given === undefined) return undefined;
      if (!SRV_NAME.test(given)) throw new SettingsError([`MEMCACHED_SRV must be _service._proto.name, such as _memcache._tcp.example.com (got ${JSON.stringify(given)})`]);
      return given;
    },
  },
  memcachedCredentials: {
    env: ['MEMCACHED_USERNAME', 'MEMCACHED_PASSWORD'],
    default: 'unset',
    values: 'both or neither',
    summary: 'SASL credentials for every server that names none of its own',
    details: 'Never logged',
    read: (env): Credentials | undefined => {
      const username = value(env, 'MEMCACHED_USERNAME');
      // A password is taken as written, spaces and all; empty is unset.
      const password = env.MEMCACHED_PASSWORD === '' ? undefined : env.MEMCACHED_PASSWORD;
      // Never echo the password.
      if ((username === undefined) !== (password === undefined)) {
        throw new SettingsError(['MEMCACHED_USERNAME and MEMCACHED_PASSWORD go together: set both or neither']);
      }
      return username === undefined || password === undefined ? undefined : { username, password };
    },
  },
  memcachedTls: {
    env: ['MEMCACHED_TLS', 'MEMCACHED_TLS_CA', 'MEMCACHED_TLS_CERT', 'MEMCACHED_TLS_KEY', 'MEMCACHED_TLS_VERIFY_HOSTNAME'],
    default: 'off',
    values: '`on` or `off`; PEM files; `on` or `off`',
    summary: 'TLS to every Memcached server (memcached started with `-Z`): `MEMCACHED_TLS=on`, the authorities to trust in `MEMCACHED_TLS_CA` (Node\'s bundled ones when unset), a client certificate for mutual TLS in `MEMCACHED_TLS_CERT` and `MEMCACHED_TLS_KEY` (both or neither)',
    details: '`MEMCACHED_TLS_VERIFY_HOSTNAME=off` accepts a certificate that does not name the host dialled (its chain is still verified). Files are read at start. Read from envoyproxy/ratelimit\'s `MEMCACHE_TLS`, `MEMCACHE_TLS_CACERT`, `MEMCACHE_TLS_CLIENT_CERT`, `MEMCACHE_TLS_CLIENT_KEY` and `MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION` too',
    read: (env): MemcachedTls | undefined => {
      const on = onOff('MEMCACHED_TLS', false, { summary: '' }).read(env);
      const verifyHostname = onOff('MEMCACHED_TLS_VERIFY_HOSTNAME', true, { summary: '' }).read(env);
      const files = { ca: 'MEMCACHED_TLS_CA', cert: 'MEMCACHED_TLS_CERT', key: 'MEMCACHED_TLS_KEY' } as const;
      const named = (Object.values(files) as string[]).filter((name) => value(env, name) !== undefined);
      if (!on) {
        const alone = value(env, 'MEMCACHED_TLS_VERIFY_HOSTNAME') === undefined ? named : [...named, 'MEMCACHED_TLS_VERIFY_HOSTNAME'];
        if (alone.length > 0) throw new SettingsError([`${alone.join(', ')} set without MEMCACHED_TLS=on: set it, or unset them`]);
        return undefined;
      }
      if ((value(env, files.cert) === undefined) !== (value(env, files.key) === undefined)) {
        throw new SettingsError(['MEMCACHED_TLS_CERT and MEMCACHED_TLS_KEY go together: set both or neither']);
      }
      const problems: string[] = [];
      const read: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
      for (const [field, name] of Object.entries(files) as [keyof typeof files, string][]) {
        const path = value(env, name);
        if (path === undefined) continue;
        const pem = readPemFile(name, path);
        if (typeof pem === 'string') problems.push(pem);
        else read[field] = pem;
      }
      if (problems.length > 0) throw new SettingsError(problems);
      try {
        // As Node will use them: a key that does not match its certificate, or a PEM it cannot read, stops the start.
        createSecureContext(read);
      } catch (error) {
        const named = Object.values(files).filter((name) => value(env, name) !== undefined);
        throw new SettingsError([`${named.join(', ')}: cannot be used for TLS (${(error as Error).message})`]);
      }
      return { ...read, verifyHostname };
    },
  } satisfies Setting<MemcachedTls | undefined>,
  memcachedTimeoutMs: integer('MEMCACHED_TIMEOUT_MS', DEFAULTS.memcachedTimeoutMs, 1, 60_000, 'ms', {
    summary: 'how long a Memcached server may stay silent while a call waits on it',
    details:
      'Then the call is late and the server counts as down: its clients fail over to the next server on the ring (`MEMCACHED_FAILOVER`), or their checks are decided by `onStoreError` until it answers again (see [design](docs/design.md#deadlines-and-store-faults))',
  }),
  memcachedFailover: onOff('MEMCACHED_FAILOVER', DEFAULTS.memcachedFailover, {
    summary: "with two or more servers, a down server's clients are counted on the next server on the ring until it is back",
    details:
      'Their counts start from zero there: a moved client can be admitted up to one more window\'s limit, once per move. `off`: they are decided by `onStoreError` until it answers (see [Failover](docs/operations.md#failover))',
  }),
  memcachedFailoverHoldDownMs: integer('MEMCACHED_FAILOVER_HOLD_DOWN_MS', DEFAULTS.memcachedFailoverHoldDownMs, 0, 3_600_000, 'ms', {
    summary: "least time a failed server's clients stay moved, however soon it answers again",
    details:
      'A server that fails again within 5 minutes of their return stays out twice as long as last time, up to 10 minutes. A total outage (every server down) ends every hold-down: each server is placed again as it answers (see [Failover](docs/operations.md#failover))',
  }),
  memcachedFailoverSettleMs: integer('MEMCACHED_FAILOVER_SETTLE_MS', DEFAULTS.memcachedFailoverSettleMs, 0, 3_600_000, 'ms', {
    summary: "how long a failed server must answer without a break before its clients move back to it",
  }),
  maxEventLoopDelayMs: integer('MEMGATE_MAX_EVENT_LOOP_DELAY_MS', DEFAULTS.maxEventLoopDelayMs, 0, 60_000, 'ms', {
    summary: 'while the event loop lags more than this (CPU overload), decisions (`/check`, `/peek`, batches, leases, `/gate`) are shed with `503 overloaded`; 0 never sheds',
    details:
      'The lag is the mean over each second (@fastify/under-pressure); the first two seconds after listening never shed, as their lag is the start\'s own work. Shed checks get `retry-after: 1`; health and admin routes still answer',
  }),
  memcachedMaxInFlight: integer('MEMCACHED_MAX_IN_FLIGHT', DEFAULTS.memcachedMaxInFlight, 1, 1_000_000, '', {
    summary: 'checks that may wait on Memcached at once; past it a check is shed at once with `503 overloaded` instead of queueing',
    details: 'Shed checks get `retry-after: 1`',
  }),
  memcachedExpirationJitterS: integer('MEMCACHED_EXPIRATION_JITTER_S', DEFAULTS.memcachedExpirationJitterS, 0, DEFAULTS.maxMemcachedExpirationJitterS, 's', {
    summary: 'up to this many seconds, drawn at random for each, added to the life of every counter an increment creates in Memcached (window buckets, lease and reservation records; token buckets and concurrency slots keep theirs), so that counters made together expire apart; 0 adds none',
    details:
      "A longer life never changes a decision: memgate reads only the buckets of its windows. Read from envoyproxy/ratelimit's `EXPIRATION_JITTER_MAX_SECONDS` too",
  }),
  keyPrefix: {
    env: ['MEMGATE_KEY_PREFIX'],
    default: DEFAULTS.keyPrefix,
    values: '1 to 32 letters, digits, `_`, `.` or `-`',
    summary: 'first part of every Memcached key',
    read: (env) => {
      const prefix = value(env, 'MEMGATE_KEY_PREFIX') ?? DEFAULTS.keyPrefix;
      if (!KEY_PREFIX_PATTERN.test(prefix)) {
        throw new SettingsError([`MEMGATE_KEY_PREFIX must be 1 to 32 letters, digits, "_", "." or "-" (got ${JSON.stringify(prefix)})`]);
      }
      return prefix;
    },
  },
  maxClockSkewMs: integer('MEMGATE_MAX_CLOCK_SKEW_MS', DEFAULTS.maxClockSkewMs, 0, 60_000, 'ms', {
    summary: "how far apart instances' times may be; a host further from Memcached's clock is warned about",
    details:
      "Instances count by the Memcached server's clock, so theirs may be anywhere. A bucket that ended longer ago than this is settled and kept in memory; buckets this far ahead of now are read too",
  }),
  cacheMb: integer('MEMGATE_CACHE_MB', DEFAULTS.cacheMb, 0, 1_048_576, 'MiB', {
    summary: "memory each instance may spend keeping clients' settled counts and last denials between checks, every event together; 0 reads whole windows every time",
    details:
      'Past it the least recently checked clients go first (`memgate_local_cache_bytes`). A client costs at most about 1.2 KB for a 1-minute window and 1.9 KB for a 1-day window (docs/operations.md, Memory). Replaces `MEMGATE_FEATURE_CACHE_SIZE`, which is refused at start',
  }),
  adminToken: {
    env: ['MEMGATE_ADMIN_TOKEN'],
    default: 'unset',
    values: '16 or more characters',
    summary: 'bearer token of `/admin/reset` and `/admin/reload`; unset, those routes do not exist',
    details: `Never logged. An address that gives a wrong one ${DEFAULTS.adminFailureLimit} times within ${DEFAULTS.adminFailureWindowSeconds} s gets 429 for a while ([Admin operations](docs/operations.md#admin-operations))`,
    read: (env): string | undefined => {
      const token = value(env, 'MEMGATE_ADMIN_TOKEN');
      // Never echo the token itself.
      if (token !== undefined && token.length < 16) throw new SettingsError(['MEMGATE_ADMIN_TOKEN must be at least 16 characters']);
      return token;
    },
  },
  maxDenialCacheMs: integer('MEMGATE_MAX_DENIAL_CACHE_MS', DEFAULTS.maxDenialCacheMs, 0, 3_600_000, 'ms', {
    summary: 'longest a denial is repeated from memory, without asking Memcached, for the same client and cost; 0 never',
  }),
  shutdownDrainMs: integer('MEMGATE_SHUTDOWN_DRAIN_MS', DEFAULTS.shutdownDrainMs, 0, 600_000, 'ms', {
    summary: 'after `SIGTERM`, how long requests are still answered, each with `Connection: close`, while `/readyz` answers 503, before the listener closes; 0 none; `SIGINT` skips it',
  }),
  usageDb: {
    env: ['MEMGATE_USAGE_DB'],
    default: DEFAULTS.usageDb,
    values: 'a file path, or `off`',
    summary: 'the SQLite file of usage history (`/usage`, `/dashboard`); `off` keeps none',
    details: 'Created with its folder if missing. One instance per file: several instances share history through Graphite instead (see [Usage history](docs/operations.md#usage-history))',
    read: (env): string | undefined => {
      const path = value(env, 'MEMGATE_USAGE_DB') ?? DEFAULTS.usageDb;
      return path === 'off' ? undefined : path;
    },
  },
  usageFlushSeconds: integer('MEMGATE_USAGE_FLUSH_S', DEFAULTS.usageFlushSeconds, 1, 3600, 's', {
    summary: 'how often each instance writes the decisions it has counted in memory to the usage store; answers include what is not written yet',
  }),
  usageTop: integer('MEMGATE_USAGE_TOP', DEFAULTS.usageTop, 1, 1000, '', {
    summary: 'the heaviest clients kept per event and minute, allowed and denied each; each of them has a curve of its own',
  }),
  usageRetention: {
    env: ['MEMGATE_USAGE_RETENTION'],
    default: DEFAULTS.usageRetention,
    values: '`resolution:keep,…` as in Graphite\'s storage-schemas.conf',
    summary: 'how long usage points are kept at each resolution, finest first',
    details: 'Each resolution a multiple of the one before. With Graphite, write the same retentions in its storage-schemas.conf (examples/graphite)',
    read: (env): readonly Archive[] => {
      const text = value(env, 'MEMGATE_USAGE_RETENTION') ?? DEFAULTS.usageRetention;
      const archives = parseRetention(text);
      if (typeof archives === 'string') throw new SettingsError([`MEMGATE_USAGE_RETENTION: ${archives}`]);
      return archives;
    },
  },
  graphite: {
    env: ['MEMGATE_GRAPHITE'],
    default: 'unset',
    values: '`host:port` of carbon\'s plaintext receiver',
    summary: 'also send usage to Graphite: `memgate.<event>.<outcome> <count> <epoch>` each flush, and the heaviest clients under `memgate.<event>.clients.<client>.<outcome>`',
    details: 'For several instances and long retention; see [Usage history](docs/operations.md#usage-history)',
    read: (env): { host: string; port: number } | undefined => {
      const address = value(env, 'MEMGATE_GRAPHITE');
      if (address === undefined) return undefined;
      return oneEndpoint('MEMGATE_GRAPHITE', address, {
        usualPort: "carbon's plaintext receiver listening on 2003 by default",
        forms: 'one host:port',
      });
    },
  },
  statsd: {
    env: ['MEMGATE_STATSD'],
    default: 'unset',
    values: '`host:port` (TCP), `tcp://host:port` or `udp://host:port`',
    summary: "also send envoyproxy/ratelimit's statsd stats, under its names: `ratelimit.service.rate_limit.<domain>.<key_value>.{total_hits,over_limit,near_limit,within_limit,shadow_mode,over_limit_with_local_cache}` per Envoy descriptor, `<domain>.domain_not_found`, `ratelimit.service.{config_load_success,config_load_error,global_shadow_mode}` and `call.should_rate_limit.service_error`",
    details: "Read from upstream's `USE_STATSD=true` with `STATSD_HOST` and `STATSD_PORT` too (TCP, as upstream sends them). Counters are summed over `MEMGATE_STATSD_FLUSH_MS`; near_limit starts at `MEMGATE_ENVOY_NEAR_LIMIT_RATIO` of a limit. Prometheus at `/metrics` either way (see [Envoy](docs/envoy.md#statsd))",
    read: (env): StatsdTarget | undefined => {
      const given = value(env, 'MEMGATE_STATSD');
      if (given === undefined) return undefined;
      const scheme = /^(tcp|udp):\/\//.exec(given);
      const address = scheme ? given.slice(scheme[0].length) : given;
      const endpoint = oneEndpoint('MEMGATE_STATSD', address, {
        usualPort: 'statsd listening on 8125 by default',
        forms: 'one host:port, tcp://host:port or udp://host:port',
        given,
      });
      return { host: endpoint.host, port: endpoint.port, protocol: scheme?.[1] === 'udp' ? 'udp' : 'tcp' };
    },
  },
  statsdFlushMs: integer('MEMGATE_STATSD_FLUSH_MS', DEFAULTS.statsdFlushMs, 100, 3_600_000, 'ms', {
    summary: "how often statsd's counters are sent (`MEMGATE_STATSD`), each the sum since the last; upstream's `STATS_FLUSH_INTERVAL` is read as it",
  }),
  envoyNearLimitRatio: {
    env: ['MEMGATE_ENVOY_NEAR_LIMIT_RATIO'],
    default: String(DEFAULTS.envoyNearLimitRatio),
    values: 'a number above 0, at most 1',
    summary: "where a descriptor's `near_limit` statsd stat starts, as a fraction of its limit: hits past floor(limit × ratio) and within the limit, as envoyproxy/ratelimit's `NEAR_LIMIT_RATIO` (read under that name too)",
    read: (env): number => {
      const given = value(env, 'MEMGATE_ENVOY_NEAR_LIMIT_RATIO');
      if (given === undefined) return DEFAULTS.envoyNearLimitRatio;
      const ratio = Number(given);
      if (!/^[0-9.]+$/.test(given) || !(ratio > 0 && ratio <= 1)) {
        throw new SettingsError([`MEMGATE_ENVOY_NEAR_LIMIT_RATIO must be a number above 0 and at most 1 (got ${JSON.stringify(given)})`]);
      }
      return ratio;
    },
  },
  graphiteWeb: {
    env: ['MEMGATE_GRAPHITE_WEB'],
    default: 'unset',
    values: 'an `http://host:port` URL',
    summary: 'read `/usage` and `/dashboard` back from graphite-web\'s render API instead of the SQLite file',
    read: (env): URL | undefined => {
      const text = value(env, 'MEMGATE_GRAPHITE_WEB');
      if (text === undefined) return undefined;
      let url: URL | undefined;
      try {
        url = new URL(text);
      } catch {
        url = undefined;
      }
      if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
        throw new SettingsError([`MEMGATE_GRAPHITE_WEB must be an http:// or https:// URL (got ${JSON.stringify(text)})`]);
      }
      return url;
    },
  },
  graphiteInstance: {
    env: ['MEMGATE_GRAPHITE_INSTANCE'],
    default: 'unset',
    values: '1 to 64 letters, digits, `_` or `-`',
    summary: "this instance's node in Graphite: paths become `memgate.<instance>.<event>.<outcome>` and reads sum every instance's (`sumSeries(memgate.*.<event>.<outcome>)`)",
    details: 'Unset, every instance writes the same paths and the last to write a second wins: with several instances, give each its own name, and the same name again after a restart',
    read: (env): string | undefined => {
      const instance = value(env, 'MEMGATE_GRAPHITE_INSTANCE');
      if (instance !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(instance)) {
        throw new SettingsError([`MEMGATE_GRAPHITE_INSTANCE must be 1 to 64 letters, digits, "_" or "-" (got ${JSON.stringify(instance)})`]);
      }
      return instance;
    },
  },
  tracing: {
    env: [
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      'OTEL_TRACES_EXPORTER',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
      'OTEL_PROPAGATORS',
      'OTEL_SDK_DISABLED',
    ],
    default: 'off',
    values: 'an `http://` or `https://` URL; `otlp` or `none`; `http/protobuf`, `http/json` or `grpc`; `tracecontext`, `baggage` or `none`, comma-separated; `true` or `false`',
    summary: 'OpenTelemetry traces of `/check`, `/peek`, `/gate` and `ShouldRateLimit`, their store calls as child spans, sent over OTLP: on when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set or `OTEL_TRACES_EXPORTER=otlp`; `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true` keeps it off',
    details: `The protocol is \`${DEFAULTS.tracingProtocol}\` unless \`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL\` or \`OTEL_EXPORTER_OTLP_PROTOCOL\` says otherwise; without an endpoint, OpenTelemetry's \`localhost\` one. \`traceparent\` (and \`baggage\`) of a request parent its span, as \`OTEL_PROPAGATORS\` says. The exporter reads its other \`OTEL_EXPORTER_OTLP_*\` variables (headers, timeout, compression, certificates), and the batching its \`OTEL_BSP_*\`, as OpenTelemetry documents them. Off, no part of the SDK is loaded. A tracer provider the process registered itself (\`node --import\` of its own set-up) is used instead, whatever these say. Read from envoyproxy/ratelimit's \`TRACING_ENABLED\` and \`TRACING_EXPORTER_PROTOCOL\` too (see [Tracing](docs/operations.md#tracing))`,
    read: (env): TracingExport | undefined => {
      const problems: string[] = [];
      const listed = (name: string, allowed: readonly string[], why: string): string[] => {
        const given = value(env, name);
        if (given === undefined) return [];
        const names = given.split(',').map((part) => part.trim());
        if (names.some((part) => !allowed.includes(part))) problems.push(`${name} must name ${allowed.join(', ')} (got ${JSON.stringify(given)}): ${why}`);
        return names;
      };
      const exporters = listed('OTEL_TRACES_EXPORTER', ['otlp', 'none'], 'memgate sends traces over OTLP only');
      const propagators = listed('OTEL_PROPAGATORS', ['tracecontext', 'baggage', 'none'], "memgate reads W3C's traceparent and baggage only");
      const disabled = value(env, 'OTEL_SDK_DISABLED');
      if (disabled !== undefined && !['true', 'false'].includes(disabled.toLowerCase())) problems.push(`OTEL_SDK_DISABLED must be true or false (got ${JSON.stringify(disabled)})`);
      const protocol = (['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const).map((name) => [name, value(env, name)] as const).find(([, given]) => given !== undefined);
      if (protocol && !(TRACING_PROTOCOLS as readonly string[]).includes(protocol[1] ?? '')) problems.push(`${protocol[0]} must be ${TRACING_PROTOCOLS.join(', ')} (got ${JSON.stringify(protocol[1])})`);
      const endpoints = (['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const).map((name) => [name, value(env, name)] as const);
      for (const [name, given] of endpoints) if (given !== undefined && !isHttpUrl(given)) problems.push(`${name} must be an http:// or https:// URL (got ${JSON.stringify(given)})`);
      if (problems.length > 0) throw new SettingsError(problems);
      const on = exporters.length > 0 ? exporters.includes('otlp') : endpoints.some(([, given]) => given !== undefined);
      if (!on || disabled?.toLowerCase() === 'true') return undefined;
      const chosen = (protocol?.[1] ?? DEFAULTS.tracingProtocol) as TracingProtocol;
      const [traces, any] = endpoints.map(([, given]) => given);
      // OpenTelemetry's rule: the traces' own endpoint as it is; the general one with the signal's path, for HTTP.
      const url = traces ?? (chosen === 'grpc' ? (any ?? DEFAULTS.tracingGrpcEndpoint) : `${(any ?? DEFAULTS.tracingHttpEndpoint).replace(/\/+$/, '')}/v1/traces`);
      return { protocol: chosen, url, propagators: propagators.length === 0 ? ['tracecontext', 'baggage'] : propagators.filter((name) => name !== 'none') as TracingPropagator[] };
    },
  },
  tracingSampler: {
    env: ['OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG'],
    default: DEFAULTS.tracingSampler,
    values: `${TRACING_SAMPLERS.map((name) => `\`${name}\``).join(', ')}; a ratio from 0 to 1`,
    summary: "which traces are kept when tracing is on, as OpenTelemetry's sampler variables say: `parentbased_*` follows the caller's `traceparent` and decides alone for a request without one; `OTEL_TRACES_SAMPLER_ARG` is the share a `traceidratio` keeps (default 1)",
    details: "Read from envoyproxy/ratelimit's `TRACING_SAMPLING_RATE` too, as `parentbased_traceidratio`",
    read: (env): TracingSampler => {
      const name = value(env, 'OTEL_TRACES_SAMPLER') ?? DEFAULTS.tracingSampler;
      const arg = value(env, 'OTEL_TRACES_SAMPLER_ARG');
      const problems: string[] = [];
      if (!(TRACING_SAMPLERS as readonly string[]).includes(name)) problems.push(`OTEL_TRACES_SAMPLER must be one of ${TRACING_SAMPLERS.join(', ')} (got ${JSON.stringify(name)})`);
      const ratio = arg === undefined ? 1 : Number(arg);
      if (arg !== undefined && (!/^[0-9.]+$/.test(arg) || !(ratio >= 0 && ratio <= 1))) problems.push(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1 (got ${JSON.stringify(arg)})`);
      if (problems.length > 0) throw new SettingsError(problems);
      return { name: name as TracingSampler['name'], ratio };
    },
  },
  tracingService: {
    env: ['OTEL_SERVICE_NAME', 'OTEL_RESOURCE_ATTRIBUTES'],
    default: DEFAULTS.tracingServiceName,
    values: 'a name; `key=value,…` (values percent-encoded)',
    summary: "how memgate's spans name their service (`service.name`) and what else describes it (`service.namespace=edge,deployment.environment=prod`), as OpenTelemetry's resource variables say; `OTEL_SERVICE_NAME` wins over a `service.name` among the attributes",
    details: "`service.version` is memgate's, and `service.instance.id` a random one per process unless given. Read from envoyproxy/ratelimit's `TRACING_SERVICE_NAME`, `TRACING_SERVICE_NAMESPACE` and `TRACING_SERVICE_INSTANCE_ID` too",
    read: (env): TracingService => {
      const attributes: Record<string, string> = {};
      const given = value(env, 'OTEL_RESOURCE_ATTRIBUTES');
      for (const pair of given === undefined ? [] : given.split(',')) {
        const at = pair.indexOf('=');
        const [key, text] = at === -1 ? ['', ''] : [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
        let decoded: string | undefined;
        try {
          decoded = decodeURIComponent(text);
        } catch {
          decoded = undefined;
        }
        if (key === '' || decoded === undefined) throw new SettingsError([`OTEL_RESOURCE_ATTRIBUTES must be key=value pairs, comma-separated, each value percent-encoded (got ${JSON.stringify(pair.trim())})`]);
        attributes[key] = decoded;
      }
      const serviceName = value(env, 'OTEL_SERVICE_NAME') ?? attributes['service.name'] ?? DEFAULTS.tracingServiceName;
      return { serviceName, attributes };
    },
  },
  logLevel: {
    env: ['LOG_LEVEL'],
    default: DEFAULTS.logLevel,
    values: `${LOG_LEVELS.join(', ')}, in any case`,
    summary: 'how much is logged, as JSON lines on stdout; one line at start says what runs',
    details: '`debug` also prints the stack of an error that stops the start',
    read: (env): LogLevel => {
      // In any case: envoyproxy/ratelimit's operators write WARN.
      const given = value(env, 'LOG_LEVEL') ?? DEFAULTS.logLevel;
      // logrus's names too, which envoyproxy/ratelimit's deployments use.
      const level = ({ warning: 'warn', panic: 'fatal' } as Record<string, string>)[given.toLowerCase()] ?? given.toLowerCase();
      if (!isLogLevel(level)) throw new SettingsError([`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(given)})`]);
      return level;
    },
  },
} as const satisfies Record<string, Setting<unknown>>;

/** Variables that were replaced: set, they stop the start rather than be ignored in silence. */
export const REPLACED_SETTINGS: Readonly<Record<string, string>> = {
  MEMGATE_FEATURE_CACHE_SIZE: 'MEMGATE_FEATURE_CACHE_SIZE was replaced by MEMGATE_CACHE_MB, one memory budget for every event (default 256; 0 keeps nothing)',
};

/**
 * Variables with memgate's prefixes that other tools read: set beside the service (a shell
 * that also runs the `memgate usage` command, a bench), they are not the service's mistake.
 */
export const READ_BY_OTHER_TOOLS: Readonly<Record<string, string>> = {
  MEMGATE_URL: 'the address of memgate for memgate/client and `memgate usage`',
  MEMGATE_BENCH_COMPILED: "the bench's choice of build",
  MEMGATE_BENCH_BUILD: "the bench's choice of build",
};

/**
 * A problem for each variable that is a setting misspelt, or memgate's own but no setting
 * (variable-names.ts): it would otherwise be ignored in silence, its default used.
 */
function misnamedVariableProblems(env: Env): string[] {
  // envoyproxy/ratelimit's names are honoured too: a misspelt one is as silent as memgate's.
  const settings = [...new Set([...Object.values(SETTINGS).flatMap((setting: Setting<unknown>) => setting.env), ...UPSTREAM_NAMES])];
  const readElsewhere = new Set([...Object.keys(REPLACED_SETTINGS), ...Object.keys(READ_BY_OTHER_TOOLS)]);
  return misnamedVariables(env, {
    settings,
    alsoKnown: (name) => readElsewhere.has(name) || isUpstreamVariable(name),
  }).map(({ name, meant }) => {
    const guess = meant.length > 0 ? `: did you mean ${meant.join(' or ')}?` : '';
    // MEMGATE_PORT=9000 is no Kubernetes link, whose value is tcp://…
    const link = name.endsWith('_PORT') && meant.length > 0 ? ' (a Kubernetes service link would hold tcp://…)' : '';
    return `${name} is not a memgate setting${guess}${link} (memgate --help lists every setting)`;
  });
}

/** How the service runs, from the environment and the command line. */
export type Settings = { readonly [K in keyof typeof SETTINGS]: ReturnType<(typeof SETTINGS)[K]['read']> };

/** `text` as plain text: markdown's backticks and links dropped. */
export function plainText(text: string): string {
  return text.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replaceAll('`', '');
}

/** `--help`, generated from SETTINGS. */
export const USAGE = [
  'usage: memgate [serve] [--config FILE] [--help] [--version]',
  '       memgate policies FILE                   check a policy file or an Envoy configuration, and print what it costs Memcached',
  "       memgate usage --event EVENT [options]   a running memgate's usage history in the terminal",
  '       memgate what-if --policies NEW --trace LOG   who a change of policies would refuse, replayed on an access log',
  '',
  'Serves rate-limit decisions over HTTP, counting in Memcached. Settings come from the environment:',
  '',
  ...Object.values(SETTINGS).flatMap((setting: Setting<unknown>) => {
    const fallback = setting.default === 'unset' ? 'unset by default' : `default ${setting.default}`;
    return [`  ${setting.env.join(', ')} (${fallback}; ${plainText(setting.values)})`, `      ${plainText(setting.summary)}`];
  }),
  '',
  'Any other MEMGATE_* or MEMCACHED_* variable, or one within two edits of a setting, stops the start, naming the setting it meant.',
  'Exit codes: 0 stopped cleanly, 1 failed, 2 bad usage or configuration (a setting, or the policy file).',
].join('\n');

/**
 * The settings, or a SettingsError listing every setting that cannot be used (and a bad
 * command line). `help` is true for --help.
 */
export function loadSettings(
  env: Env,
  argv: readonly string[],
): Settings & { readonly help: boolean; readonly version: boolean; readonly fromUpstream: readonly string[] } {
  let args;
  try {
    args = parseArgs({
      args: [...argv],
      options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
    });
  } catch (error) {
    // node's own first sentence names the option; the rest is advice about '--' that does not apply.
    const [first] = (error as Error).message.split(/\.\s/);
    throw new SettingsError([`${first ?? 'bad command line'} (memgate --help lists the options)`]);
  }
  const problems: string[] = Object.entries(REPLACED_SETTINGS).flatMap(([name, message]) => (value(env, name) === undefined ? [] : [message]));
  problems.push(...misnamedVariableProblems(env));
  // envoyproxy/ratelimit's variables, read as memgate's (or refused): memgate's own, where set, agree.
  const upstream = fromUpstream(env);
  problems.push(...upstream.problems);
  // What they give wins over an empty own variable (a chart's default ""); a set one agreed, or was refused.
  env = { ...env, ...upstream.env };
  const settings: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(SETTINGS) as [string, Setting<unknown>][]) {
    try {
      settings[key] = setting.read(env);
    } catch (error) {
      if (!(error instanceof SettingsError)) throw error;
      problems.push(...error.problems);
    }
  }
  if (settings.grpcTls !== undefined && settings.grpcPort === undefined) {
    problems.push('MEMGATE_GRPC_TLS_CERT and MEMGATE_GRPC_TLS_KEY set without MEMGATE_GRPC_PORT: set the port, or unset them (nothing would be served over them)');
  }
  if (settings.memcachedSrv !== undefined && settings.memcachedServers !== undefined) {
    problems.push('MEMCACHED_SRV and MEMCACHED_SERVERS are both set: name the servers one way');
  }
  if (settings.grpcPort !== undefined && settings.grpcPort !== 0 && settings.grpcPort === settings.port) {
    problems.push(`MEMGATE_GRPC_PORT and PORT are both ${String(settings.port)}: gRPC and HTTP need a port each`);
  }
  if (problems.length > 0) throw new SettingsError(problems);
  if (args.values.config !== undefined) settings.configPath = args.values.config;
  return {
    ...(settings as Settings),
    help: args.values.help ?? false,
    version: args.values.version ?? false,
    fromUpstream: upstream.honoured,
  };
}

/** The settings as the service starts with them: with the envoyproxy/ratelimit variables read as memgate's, in words. */
export type LoadedSettings = ReturnType<typeof loadSettings>;

/** A variable's trimmed value; unset and empty both mean "use the default". */
function value(env: Env, name: string): string | undefined {
  const text = env[name]?.trim();
  return text === '' ? undefined : text;
}

function isLogLevel(level: string): level is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(level);
}

/** `on` or `off`. */
function onOff(name: string, fallback: boolean, text: { summary: string; details?: string }): Setting<boolean> {
  return {
    env: [name],
    default: fallback ? 'on' : 'off',
    values: '`on` or `off`',
    ...text,
    read: (env) => {
      const given = value(env, name);
      if (given === undefined) return fallback;
      if (given !== 'on' && given !== 'off') throw new SettingsError([`${name} must be on or off (got ${JSON.stringify(given)})`]);
      return given === 'on';
    },
  };
}

/**
 * A listener's TLS from `<prefix>_CERT` and `<prefix>_KEY` (both or neither: off without them),
 * `<prefix>_CLIENT_CA` for mutual TLS, and `<prefix>_CLIENT_SAN` when `clientSan`. The files are
 * read once here, so that one that cannot be used stops the start naming its variable.
 */
function listenerTls(prefix: string, listener: string, text: { clientSan: boolean; details: string }): Setting<ListenerTls | undefined> {
  const names = { cert: `${prefix}_CERT`, key: `${prefix}_KEY`, clientCa: `${prefix}_CLIENT_CA`, clientSan: `${prefix}_CLIENT_SAN` };
  return {
    env: [names.cert, names.key, names.clientCa, ...(text.clientSan ? [names.clientSan] : [])],
    default: 'unset',
    values: text.clientSan ? 'PEM files; a name' : 'PEM files',
    summary: `TLS on ${listener}: its certificate chain and key (both or neither; unset, in clear), and for mutual TLS the authority its clients' certificates must come from${text.clientSan ? ', and a subject alternative name they must have' : ''}`,
    details: text.details,
    read: (env) => {
      const [cert, key, clientCa] = [names.cert, names.key, names.clientCa].map((name) => value(env, name));
      const clientSan = text.clientSan ? value(env, names.clientSan) : undefined;
      if (cert === undefined && key === undefined) {
        const stray = [clientCa === undefined ? [] : [names.clientCa], clientSan === undefined ? [] : [names.clientSan]].flat();
        if (stray.length > 0) throw new SettingsError([`${stray.join(', ')} set without ${names.cert} and ${names.key}: set them, or unset it`]);
        return undefined;
      }
      if (cert === undefined || key === undefined) throw new SettingsError([`${names.cert} and ${names.key} go together: set both or neither`]);
      if (clientSan !== undefined && clientCa === undefined) throw new SettingsError([`${names.clientSan} needs ${names.clientCa}: a name is checked only on certificates that authority signed`]);
      const files: [string, string][] = [[names.cert, cert], [names.key, key]];
      if (clientCa !== undefined) files.push([names.clientCa, clientCa]);
      const problems = files.map(([name, path]) => readPemFile(name, path)).filter((read) => typeof read === 'string');
      if (problems.length > 0) throw new SettingsError(problems);
      return { certFile: cert, keyFile: key, ...(clientCa === undefined ? {} : { clientCaFile: clientCa }), ...(clientSan === undefined ? {} : { clientSan }) };
    },
  };
}

/**
 * The one `host:port` a setting names (MEMGATE_GRAPHITE, MEMGATE_STATSD), read as MEMCACHED_SERVERS
 * reads an entry: the same hosts, brackets and port rules. `usualPort` replaces the list's advice
 * on a missing port (which names Memcached's); `given` is the value as written, when not `address`.
 */
function oneEndpoint(
  name: string,
  address: string,
  { usualPort, forms, given = address }: { usualPort: string; forms: string; given?: string },
): { host: string; port: number } {
  let endpoints;
  try {
    endpoints = parseServerList(address);
  } catch (error) {
    if (!(error instanceof ServerListError)) throw error;
    const problem = error.problem.startsWith('names no port') ? `names no port: write host:port, ${usualPort}` : error.problem;
    throw new SettingsError([`${name} ${error.entry} ${problem}`]);
  }
  const [endpoint] = endpoints;
  if (!endpoint || endpoints.length > 1 || endpoint.username !== undefined) {
    throw new SettingsError([`${name} must be ${forms} (got ${JSON.stringify(given)})`]);
  }
  return { host: endpoint.host, port: endpoint.port };
}

/** Where and how traces are sent (OTEL_EXPORTER_OTLP_*), when tracing is on. */
export interface TracingExport {
  readonly protocol: TracingProtocol;
  /** The traces' own URL: `/v1/traces` already added to a general HTTP endpoint. */
  readonly url: string;
  /** What parents a request's span: W3C's traceparent, baggage, both or neither. */
  readonly propagators: readonly TracingPropagator[];
}

export interface TracingSampler {
  readonly name: (typeof TRACING_SAMPLERS)[number];
  /** The share `traceidratio` keeps, 0 to 1. */
  readonly ratio: number;
}

/** What the spans say of the service (OpenTelemetry's resource). */
export interface TracingService {
  readonly serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, decoded. */
  readonly attributes: Readonly<Record<string, string>>;
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** Where statsd lines go (MEMGATE_STATSD). */
export interface StatsdTarget {
  readonly host: string;
  readonly port: number;
  readonly protocol: 'tcp' | 'udp';
}

/** A whole number from `min` to `max`, in `unit`. */
function integer(name: string, fallback: number, min: number, max: number, unit: string, text: { summary: string; details?: string }): Setting<number> {
  const range = `${min} to ${max}${unit ? ` ${unit}` : ''}`;
  return {
    env: [name],
    default: String(fallback),
    values: range,
    ...text,
    read: (env) => {
      const given = value(env, name);
      if (given === undefined) return fallback;
      const number = Number(given);
      if (!/^[0-9]+$/.test(given) || number < min || number > max) {
        throw new SettingsError([`${name} must be a whole number from ${range} (got ${JSON.stringify(given)})`]);
      }
      return number;
    },
  };
}
