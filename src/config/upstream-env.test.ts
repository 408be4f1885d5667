import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from './settings.js';
import { fromUpstream, isUpstreamVariable, UPSTREAM_VARIABLES } from './upstream-env.js';

/** upstream's docker-compose.yml for Memcached, as an operator switching would keep it. */
const MEMCACHE_DEPLOYMENT = {
  USE_STATSD: 'false',
  LOG_LEVEL: 'debug',
  BACKEND_TYPE: 'memcache',
  MEMCACHE_HOST_PORT: 'memcached:11211',
  RUNTIME_ROOT: '/data',
  RUNTIME_SUBDIRECTORY: 'ratelimit',
  RUNTIME_WATCH_ROOT: 'false',
  GRPC_PORT: '8081',
};

const problemsOf = (env: Record<string, string>) => {
  try {
    loadSettings(env, []);
    return [];
  } catch (error) {
    if (error instanceof SettingsError) return error.problems;
    throw error;
  }
};

describe("envoyproxy/ratelimit's environment", () => {
  it("starts an upstream Memcached deployment unchanged, its variables read as memgate's", () => {
    const settings = loadSettings(MEMCACHE_DEPLOYMENT, []);
    expect(settings.memcachedServers).toBe('memcached:11211');
    expect(settings.grpcPort).toBe(8081);
    expect(settings.envoyConfigPath).toBe(join('/data', 'ratelimit', 'config'));
    expect(settings.logLevel).toBe('debug');
    expect(settings.fromUpstream).toEqual([
      'GRPC_PORT as MEMGATE_GRPC_PORT',
      'RUNTIME_ROOT, RUNTIME_SUBDIRECTORY as MEMGATE_ENVOY_CONFIG',
      'MEMCACHE_HOST_PORT as MEMCACHED_SERVERS',
    ]);
  });

  it("takes upstream's defaults for the runtime directories it is not given", () => {
    // And gRPC on upstream's port, where upstream serves it without being told.
    expect(fromUpstream({ RUNTIME_SUBDIRECTORY: 'rl' }).env).toEqual({
      MEMGATE_ENVOY_CONFIG: join('/srv/runtime_data/current', 'rl', 'config'),
      MEMGATE_GRPC_PORT: '8081',
    });
    expect(fromUpstream({ RUNTIME_ROOT: '/etc/rl', RUNTIME_APPDIRECTORY: 'limits', MEMGATE_GRPC_PORT: '9000' }).env).toEqual({
      MEMGATE_ENVOY_CONFIG: join('/etc/rl', 'limits'),
    });
    // Less the separator it ends with, as upstream's own test writes one ("prefix:").
    expect(fromUpstream({ CACHE_KEY_PREFIX: 'edge:' }).env).toEqual({ MEMGATE_KEY_PREFIX: 'edge' });
    expect(loadSettings({ CACHE_KEY_PREFIX: 'ratelimit:' }, []).keyPrefix).toBe('ratelimit');
    // Only a colon: prod_ and prod stay two prefixes, two sets of counters.
    expect(loadSettings({ CACHE_KEY_PREFIX: 'prod_' }, []).keyPrefix).toBe('prod_');
    expect(problemsOf({ CACHE_KEY_PREFIX: 'rl/edge:' })[0]).toMatch(/MEMGATE_KEY_PREFIX must be 1 to 32 letters/);
  });

  it("reads upstream's MEMCACHE_TLS settings as memgate's when MEMCACHE_TLS is true, and leaves them unused otherwise", () => {
    const tls = {
      MEMCACHE_TLS: 'true',
      MEMCACHE_TLS_CACERT: '/certs/ca.pem',
      MEMCACHE_TLS_CLIENT_CERT: '/certs/client.pem',
      MEMCACHE_TLS_CLIENT_KEY: '/certs/client.key',
      MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION: 'true',
    };
    expect(fromUpstream(tls).env).toEqual({
      MEMCACHED_TLS: 'on',
      MEMCACHED_TLS_CA: '/certs/ca.pem',
      MEMCACHED_TLS_CERT: '/certs/client.pem',
      MEMCACHED_TLS_KEY: '/certs/client.key',
      MEMCACHED_TLS_VERIFY_HOSTNAME: 'off',
    });
    expect(fromUpstream({ ...tls, MEMCACHE_TLS: 'false' }).env).toEqual({});
    expect(fromUpstream({ ...tls, MEMCACHED_TLS_CA: '/elsewhere/ca.pem' }).problems).toEqual([
      'MEMCACHE_TLS_CACERT and MEMCACHED_TLS_CA disagree ("/certs/ca.pem" and "/elsewhere/ca.pem"): set one of them',
    ]);
  });

  it("reads upstream's gRPC TLS settings as memgate's when GRPC_SERVER_USE_TLS is true, which needs the pair", () => {
    const tls = {
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: '/certs/tls.crt',
      GRPC_SERVER_TLS_KEY: '/certs/tls.key',
      GRPC_CLIENT_TLS_CACERT: '/certs/ca.crt',
      GRPC_CLIENT_TLS_SAN: 'envoy.local',
    };
    expect(fromUpstream(tls).env).toEqual({
      MEMGATE_GRPC_TLS_CERT: '/certs/tls.crt',
      MEMGATE_GRPC_TLS_KEY: '/certs/tls.key',
      MEMGATE_GRPC_TLS_CLIENT_CA: '/certs/ca.crt',
      MEMGATE_GRPC_TLS_CLIENT_SAN: 'envoy.local',
    });
    expect(fromUpstream({ ...tls, GRPC_SERVER_USE_TLS: 'false' }).env).toEqual({});
    expect(fromUpstream({ GRPC_SERVER_USE_TLS: 'true', MEMGATE_GRPC_TLS_CERT: '/c.crt', MEMGATE_GRPC_TLS_KEY: '/c.key' }).problems).toEqual([]);
    expect(fromUpstream({ GRPC_SERVER_USE_TLS: 'true', GRPC_SERVER_TLS_CERT: '/certs/tls.crt' }).problems).toEqual([
      'GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY (or MEMGATE_GRPC_TLS_CERT and MEMGATE_GRPC_TLS_KEY)',
    ]);
  });

  it("reads MEMCACHE_SRV as MEMCACHED_SRV, refusing it beside MEMCACHE_HOST_PORT and a refresh period, as memgate looks it up once", () => {
    expect(fromUpstream({ MEMCACHE_SRV: '_memcache._tcp.cache.svc' }).env).toEqual({ MEMCACHED_SRV: '_memcache._tcp.cache.svc' });
    expect(loadSettings({ MEMCACHE_SRV: '_memcache._tcp.cache.svc', MEMCACHE_SRV_REFRESH: '0' }, []).memcachedSrv).toBe('_memcache._tcp.cache.svc');
    expect(fromUpstream({ MEMCACHE_SRV: '_memcache._tcp.cache.svc', MEMCACHE_HOST_PORT: 'a:11211' }).problems).toEqual([
      'MEMCACHE_SRV and MEMCACHE_HOST_PORT are both set: name the servers one way, as upstream requires',
    ]);
    expect(fromUpstream({ MEMCACHE_SRV: '_memcache._tcp.cache.svc', MEMCACHE_SRV_REFRESH: '30s' }).problems[0]).toMatch(
      /^MEMCACHE_SRV_REFRESH=30s: memgate looks MEMCACHE_SRV up once at start/,
    );
    expect(problemsOf({ MEMCACHE_SRV: 'cache.svc' })).toEqual([
      'MEMCACHED_SRV must be _service._proto.name, such as _memcache._tcp.example.com (got "cache.svc")',
    ]);
    expect(problemsOf({ MEMCACHED_SRV: '_memcache._tcp.cache.svc', MEMCACHED_SERVERS: 'a:11211' })).toEqual([
      'MEMCACHED_SRV and MEMCACHED_SERVERS are both set: name the servers one way',
    ]);
  });

  it('reads the global shadow mode and the limit headers, with their names', () => {
    expect(loadSettings({ SHADOW_MODE: 'true' }, []).envoyShadowMode).toBe(true);
    expect(loadSettings({ SHADOW_MODE: 'false' }, []).envoyShadowMode).toBe(false);
    expect(loadSettings({ RESPONSE_DYNAMIC_METADATA: 'true' }, []).envoyDynamicMetadata).toBe(true);
    expect(loadSettings({}, []).envoyDynamicMetadata).toBe(false);
    expect(loadSettings({ QUOTA_MODE: 'true' }, []).envoyQuotaMode).toBe(true);
    expect(loadSettings({ MERGE_DOMAIN_CONFIG: 'true' }, []).envoyMergeDomains).toBe(true);
    expect(loadSettings({ LIMIT_RESPONSE_HEADERS_ENABLED: 'true' }, []).envoyLimitHeaders).toEqual({
      limit: 'RateLimit-Limit',
      remaining: 'RateLimit-Remaining',
      reset: 'RateLimit-Reset',
    });
    const named = { LIMIT_RESPONSE_HEADERS_ENABLED: '1', LIMIT_REMAINING_HEADER: 'X-RateLimit-Remaining' };
    expect(loadSettings(named, []).envoyLimitHeaders?.remaining).toBe('X-RateLimit-Remaining');
    expect(loadSettings({ LIMIT_REMAINING_HEADER: 'X-Left' }, []).envoyLimitHeaders).toBeUndefined();
    expect(problemsOf({ MEMGATE_ENVOY_LIMIT_HEADERS: 'a,b' })[0]).toMatch(/three header names/);
    expect(problemsOf({ LIMIT_RESPONSE_HEADERS_ENABLED: 'true', LIMIT_LIMIT_HEADER: 'bad header' })[0]).toMatch(
      /three header names/,
    );
  });

  it("leaves alone what is not upstream's: Kubernetes service links, a platform's LOG_FORMAT", () => {
    // A Service named redis, grpc, debug or statsd in the namespace puts these into every pod.
    const links = {
      REDIS_PORT: 'tcp://10.0.0.9:6379',
      REDIS_SERVICE_HOST: '10.0.0.9',
      REDIS_PORT_6379_TCP_PROTO: 'tcp',
      GRPC_PORT: 'tcp://10.0.0.10:8081',
      DEBUG_PORT: 'tcp://10.0.0.11:6070',
      STATSD_PORT: 'tcp://10.0.0.12:8125',
      LOG_FORMAT: 'logfmt',
    };
    expect(problemsOf(links)).toEqual([]);
    expect(loadSettings(links, []).grpcPort).toBeUndefined();
  });

  it('refuses dogstatsd, on with statsd off as upstream runs it', () => {
    expect(fromUpstream({ USE_DOG_STATSD: 'true', USE_STATSD: 'false' }).problems[0]).toMatch(
      /^USE_DOG_STATSD=true: memgate sends plain statsd/,
    );
  });

  it("sends upstream's statsd where its variables say, over TCP, at its flush interval and near-limit ratio", () => {
    // statsd is on by default upstream: its host alone means it sends, to its default port.
    expect(fromUpstream({ STATSD_HOST: 'statsd' }).env).toEqual({ MEMGATE_STATSD: 'statsd:8125' });
    expect(fromUpstream({ USE_STATSD: 'true', STATSD_PORT: '9125', STATS_FLUSH_INTERVAL: '1m30s' }).env).toEqual({
      MEMGATE_STATSD: 'localhost:9125',
      MEMGATE_STATSD_FLUSH_MS: '90000',
    });
    expect(loadSettings({ USE_STATSD: 'true', STATSD_HOST: '10.0.0.9', STATS_FLUSH_INTERVAL: '500ms', NEAR_LIMIT_RATIO: '0.9' }, [])).toMatchObject({
      statsd: { host: '10.0.0.9', port: 8125, protocol: 'tcp' },
      statsdFlushMs: 500,
      envoyNearLimitRatio: 0.9,
    });
    // Nothing set, nothing sent (upstream would send to localhost:8125); off, or disabled, nothing either.
    expect(loadSettings({}, []).statsd).toBeUndefined();
    expect(fromUpstream({ STATSD_HOST: 'statsd', USE_STATSD: 'false' }).env).toEqual({});
    expect(fromUpstream({ STATSD_HOST: 'statsd', DISABLE_STATS: 'true' }).env).toEqual({});
    expect(fromUpstream({ STATSD_HOST: 'statsd', EXTRA_TAGS: 'a:b' }).problems[0]).toMatch(/^EXTRA_TAGS: memgate sends statsd lines without tags/);
    expect(fromUpstream({ STATSD_HOST: 'statsd', STATS_FLUSH_INTERVAL: 'soon' }).problems).toEqual([
      'STATS_FLUSH_INTERVAL=soon: not a duration as upstream reads it (such as 10s or 500ms)',
    ]);
    expect(problemsOf({ NEAR_LIMIT_RATIO: '1.5' })).toEqual(['MEMGATE_ENVOY_NEAR_LIMIT_RATIO must be a number above 0 and at most 1 (got "1.5")']);
    expect(loadSettings({ MEMGATE_STATSD: 'udp://[::1]:8125' }, []).statsd).toEqual({ host: '::1', port: 8125, protocol: 'udp' });
  });

  it("takes logrus's level names, as upstream's deployments write them", () => {
    expect(loadSettings({ LOG_LEVEL: 'WARNING' }, []).logLevel).toBe('warn');
    expect(loadSettings({ LOG_LEVEL: 'panic' }, []).logLevel).toBe('fatal');
  });

  it("agrees with memgate's own names, or says they disagree", () => {
    // An own variable set empty (a chart's default) is unset: the upstream one holds.
    expect(loadSettings({ GRPC_PORT: '8081', MEMGATE_GRPC_PORT: '' }, []).grpcPort).toBe(8081);
    expect(problemsOf({ MEMCACHE_HOST_PORT: 'a:11211', MEMCACHED_SERVERS: 'a:11211' })).toEqual([]);
    expect(problemsOf({ MEMCACHE_HOST_PORT: 'a:11211', MEMCACHED_SERVERS: 'b:11211' })).toEqual([
      'MEMCACHE_HOST_PORT and MEMCACHED_SERVERS disagree ("a:11211" and "b:11211"): set one of them',
    ]);
  });

  it("reads upstream's EXPIRATION_JITTER_MAX_SECONDS (its default 300 written out) as MEMCACHED_EXPIRATION_JITTER_S", () => {
    const settings = loadSettings({ ...MEMCACHE_DEPLOYMENT, EXPIRATION_JITTER_MAX_SECONDS: '300' }, []);
    expect(settings.memcachedExpirationJitterS).toBe(300);
    expect(settings.fromUpstream).toContain('EXPIRATION_JITTER_MAX_SECONDS as MEMCACHED_EXPIRATION_JITTER_S');
    expect(loadSettings({ EXPIRATION_JITTER_MAX_SECONDS: '0' }, []).memcachedExpirationJitterS).toBe(0);
    expect(fromUpstream({ EXPIRATION_JITTER_MAX_SECONDS: '300' })).toMatchObject({
      env: { MEMCACHED_EXPIRATION_JITTER_S: '300' },
      problems: [],
    });
    // Unset, memgate adds none (upstream would add up to 300 s): memgate's own default.
    expect(loadSettings(MEMCACHE_DEPLOYMENT, []).memcachedExpirationJitterS).toBe(0);
    expect(problemsOf({ EXPIRATION_JITTER_MAX_SECONDS: '300', MEMCACHED_EXPIRATION_JITTER_S: '60' })).toEqual([
      'EXPIRATION_JITTER_MAX_SECONDS and MEMCACHED_EXPIRATION_JITTER_S disagree ("300" and "60"): set one of them',
    ]);
    expect(problemsOf({ EXPIRATION_JITTER_MAX_SECONDS: '-1' })).toEqual([
      'EXPIRATION_JITTER_MAX_SECONDS=-1: read as MEMCACHED_EXPIRATION_JITTER_S, it must be a whole number of seconds from 0 to 86400',
    ]);
  });

  it("refuses, naming memgate's equivalent, what memgate would otherwise do differently", () => {
    const refused = (env: Record<string, string>) => fromUpstream(env).problems;
    // Redis is upstream's default backend.
    expect(refused({ REDIS_URL: 'redis:6379', REDIS_SOCKET_TYPE: 'tcp' })).toEqual([
      'REDIS_SOCKET_TYPE, REDIS_URL: memgate has no Redis backend; it counts in Memcached (set BACKEND_TYPE=memcache and MEMCACHE_HOST_PORT, or MEMCACHED_SERVERS)',
    ]);
    expect(refused({ REDIS_URL: 'redis:6379', BACKEND_TYPE: 'memcache' })).toEqual([]);
    expect(refused({ BACKEND_TYPE: 'redis' })[0]).toMatch(/^BACKEND_TYPE=redis: memgate counts in Memcached only/);
    expect(refused({ RESPONSE_DYNAMIC_METADATA: 'true' })).toEqual([]);
    expect(refused({ SHADOW_MODE: 'false', QUOTA_MODE: '0', TRACING_ENABLED: 'F' })).toEqual([]);
    expect(refused({ SHADOW_MODE: 'yes' })).toEqual([
      'SHADOW_MODE must be true or false, as envoyproxy/ratelimit reads it (got "yes")',
    ]);
    expect(refused({ GRPC_HOST: '10.0.0.1', HOST: '0.0.0.0' })[0]).toMatch(/^GRPC_HOST=10.0.0.1: memgate serves gRPC on HOST/);
    expect(refused({ GRPC_HOST: '0.0.0.0' })).toEqual([]);
    expect(refused({ EXPIRATION_JITTER_MAX_SECONDS: '-1' })).toEqual([
      'EXPIRATION_JITTER_MAX_SECONDS=-1: read as MEMCACHED_EXPIRATION_JITTER_S, it must be a whole number of seconds from 0 to 86400',
    ]);
    expect(refused({ EXPIRATION_JITTER_MAX_SECONDS: 'abc' })).toEqual([
      'EXPIRATION_JITTER_MAX_SECONDS=abc: read as MEMCACHED_EXPIRATION_JITTER_S, it must be a whole number of seconds from 0 to 86400',
    ]);
    expect(refused({ EXPIRATION_JITTER_MAX_SECONDS: '1.5' })[0]).toMatch(/^EXPIRATION_JITTER_MAX_SECONDS=1.5: /);
    expect(refused({ EXPIRATION_JITTER_MAX_SECONDS: '86401' })[0]).toMatch(/^EXPIRATION_JITTER_MAX_SECONDS=86401: /);
    expect(refused({ USE_PROMETHEUS: 'true', PROMETHEUS_ADDR: ':9090' })[0]).toMatch(/GET \/metrics on PORT/);
    expect(refused({ CONFIG_TYPE: 'GRPC_XDS_SOTW' })[0]).toMatch(/files only/);
  });

  it("reads upstream's tracing as OpenTelemetry's variables while TRACING_ENABLED is true, and leaves them unused otherwise", () => {
    const tracing = {
      TRACING_ENABLED: 'true',
      TRACING_SERVICE_NAME: 'ratelimit-edge',
      TRACING_SERVICE_NAMESPACE: 'edge, eu',
      TRACING_SERVICE_INSTANCE_ID: 'pod-1',
      TRACING_SAMPLING_RATE: '0.1',
      TRACING_EXPORTER_PROTOCOL: 'grpc',
    };
    expect(fromUpstream(tracing).env).toEqual({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_SERVICE_NAME: 'ratelimit-edge',
      OTEL_RESOURCE_ATTRIBUTES: 'service.namespace=edge%2C%20eu,service.instance.id=pod-1',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
    });
    const settings = loadSettings({ ...tracing, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317' }, []);
    expect(settings.tracing).toEqual({ protocol: 'grpc', url: 'http://collector:4317', propagators: ['tracecontext', 'baggage'] });
    expect(settings.tracingSampler).toEqual({ name: 'parentbased_traceidratio', ratio: 0.1 });
    expect(settings.tracingService).toEqual({
      serviceName: 'ratelimit-edge',
      attributes: { 'service.namespace': 'edge, eu', 'service.instance.id': 'pod-1' },
    });
    // Upstream samples every trace from a rate of 1 up, none from 0 down; its http is protobuf.
    expect(fromUpstream({ TRACING_ENABLED: 'true', TRACING_SAMPLING_RATE: '5', TRACING_EXPORTER_PROTOCOL: 'http' }).env).toMatchObject({
      OTEL_TRACES_SAMPLER_ARG: '1',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    });
    expect(fromUpstream({ TRACING_ENABLED: 'true', TRACING_SAMPLING_RATE: '-1' }).env.OTEL_TRACES_SAMPLER_ARG).toBe('0');
    // Without it upstream traces nothing, whatever else is set.
    expect(fromUpstream({ ...tracing, TRACING_ENABLED: 'false' }).env).toEqual({ OTEL_TRACES_EXPORTER: 'none' });
    expect(loadSettings({ TRACING_ENABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, []).tracing).toBeUndefined();
    expect(fromUpstream({ TRACING_SERVICE_NAME: 'alone' }).env).toEqual({});
    expect(fromUpstream({ TRACING_ENABLED: 'true', TRACING_EXPORTER_PROTOCOL: 'thrift', TRACING_SAMPLING_RATE: 'half' }).problems).toEqual([
      'TRACING_SAMPLING_RATE=half: not a number as upstream reads it (such as 0.1)',
      'TRACING_EXPORTER_PROTOCOL=thrift: upstream takes http or grpc',
    ]);
    expect(fromUpstream({ ...tracing, OTEL_RESOURCE_ATTRIBUTES: 'team=edge' }).problems).toEqual([
      'TRACING_SERVICE_NAMESPACE, TRACING_SERVICE_INSTANCE_ID and OTEL_RESOURCE_ATTRIBUTES disagree ("service.namespace=edge%2C%20eu,service.instance.id=pod-1" and "team=edge"): set one of them',
    ]);
  });

  it('stops the start with every refusal at once', () => {
    const problems = problemsOf({ ...MEMCACHE_DEPLOYMENT, TRACING_ENABLED: 'true', TRACING_EXPORTER_PROTOCOL: 'zipkin', DEBUG_PORT: '6070' });
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toMatch(/TRACING_EXPORTER_PROTOCOL=zipkin/);
    expect(problems.join('\n')).toMatch(/DEBUG_PORT=6070: memgate has no debug listener/);
  });

  it("names each of upstream's variables once", () => {
    const names = UPSTREAM_VARIABLES.flatMap((row) => row.names);
    expect(new Set(names).size).toBe(names.length);
    for (const name of ['MEMCACHE_TLS', 'GRPC_SERVER_USE_TLS', 'NEAR_LIMIT_RATIO', 'RESPONSE_DYNAMIC_METADATA'])
      expect(isUpstreamVariable(name)).toBe(true);
    expect(isUpstreamVariable('REDIS_PERSECOND_URL')).toBe(true);
    expect(isUpstreamVariable('MEMGATE_GRPC_PORT')).toBe(false);
  });
});
