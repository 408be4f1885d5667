import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from './defaults.js';
import { loadSettings, SETTINGS, SettingsError, USAGE, type Setting } from './settings.js';

/** The problems loadSettings reports for `env`, or [] when it accepts it. */
function problemsOf(env: Record<string, string>, argv: string[] = []): readonly string[] {
  try {
    loadSettings(env, argv);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError);
    return (error as SettingsError).problems;
  }
}

describe('loadSettings', () => {
  it('takes every default from DEFAULTS', () => {
    expect(loadSettings({}, [])).toMatchObject({
      port: DEFAULTS.port,
      host: DEFAULTS.host,
      memcachedServers: undefined,
      memcachedTimeoutMs: DEFAULTS.memcachedTimeoutMs,
      memcachedMaxInFlight: DEFAULTS.memcachedMaxInFlight,
      memcachedExpirationJitterS: DEFAULTS.memcachedExpirationJitterS,
      keyPrefix: DEFAULTS.keyPrefix,
      logLevel: DEFAULTS.logLevel,
      maxClockSkewMs: DEFAULTS.maxClockSkewMs,
      cacheMb: DEFAULTS.cacheMb,
      maxDenialCacheMs: DEFAULTS.maxDenialCacheMs,
      maxEventLoopDelayMs: DEFAULTS.maxEventLoopDelayMs,
      shutdownDrainMs: DEFAULTS.shutdownDrainMs,
      help: false,
      version: false,
    });
  });

  it('reads the caching settings from the environment, 0 turning a cache off', () => {
    const env = { MEMGATE_MAX_CLOCK_SKEW_MS: '500', MEMGATE_CACHE_MB: '0', MEMGATE_MAX_DENIAL_CACHE_MS: '0' };
    expect(loadSettings(env, [])).toMatchObject({ maxClockSkewMs: 500, cacheMb: 0, maxDenialCacheMs: 0 });
  });

  it('takes the policy file from --config before MEMGATE_CONFIG', () => {
    expect(loadSettings({ MEMGATE_CONFIG: 'env.yaml' }, []).configPath).toBe('env.yaml');
    expect(loadSettings({ MEMGATE_CONFIG: 'env.yaml' }, ['--config', 'flag.yaml']).configPath).toBe('flag.yaml');
  });

  it('reads MEMGATE_GRAPHITE as one MEMCACHED_SERVERS entry reads: a host, or a bracketed IPv6 address, and a port', () => {
    expect(loadSettings({ MEMGATE_GRAPHITE: 'carbon:2003' }, []).graphite).toEqual({ host: 'carbon', port: 2003 });
    expect(loadSettings({ MEMGATE_GRAPHITE: '[::1]:2003' }, []).graphite).toEqual({ host: '::1', port: 2003 });
    expect(problemsOf({ MEMGATE_GRAPHITE: 'carbon' })).toEqual([
      'MEMGATE_GRAPHITE "carbon" names no port: write host:port, carbon\'s plaintext receiver listening on 2003 by default',
    ]);
    expect(problemsOf({ MEMGATE_GRAPHITE: '[nope]:2003' })[0]).toMatch(/^MEMGATE_GRAPHITE "\[nope\]:2003" is not host:port/);
    expect(problemsOf({ MEMGATE_GRAPHITE: 'a:2003,b:2003' })).toEqual(['MEMGATE_GRAPHITE must be one host:port (got "a:2003,b:2003")']);
  });

  it('refuses the replaced MEMGATE_FEATURE_CACHE_SIZE, naming its replacement', () => {
    expect(() => loadSettings({ MEMGATE_FEATURE_CACHE_SIZE: '10000' }, [])).toThrow('MEMGATE_FEATURE_CACHE_SIZE was replaced by MEMGATE_CACHE_MB');
  });

  it('takes SASL credentials in pairs, and keeps the password out of anything it prints', () => {
    expect(loadSettings({ MEMCACHED_USERNAME: 'memgate', MEMCACHED_PASSWORD: ' pw ' }, []).memcachedCredentials).toEqual({ username: 'memgate', password: ' pw ' });
    expect(() => loadSettings({ MEMCACHED_USERNAME: 'memgate' }, [])).toThrow('MEMCACHED_USERNAME and MEMCACHED_PASSWORD go together');
    expect(problemsOf({ MEMCACHED_PASSWORD: 'secret-value' })).toHaveLength(1);
    expect(problemsOf({ MEMCACHED_PASSWORD: 'secret-value' }).join('\n')).not.toContain('secret-value');
  });

  it('reads TLS to Memcached: off unless asked, PEM files read at start, a client pair whole, no stray option', () => {
    const folder = mkdtempSync(join(tmpdir(), 'memgate-settings-tls-'));
    const ca = join(folder, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n');
    const notPem = join(folder, 'ca.der');
    writeFileSync(notPem, Buffer.from([0x30, 0x82]));
    expect(loadSettings({}, []).memcachedTls).toBeUndefined();
    expect(loadSettings({ MEMCACHED_TLS: 'on' }, []).memcachedTls).toEqual({ verifyHostname: true });
    expect(loadSettings({ MEMCACHED_TLS: 'on', MEMCACHED_TLS_CA: ca, MEMCACHED_TLS_VERIFY_HOSTNAME: 'off' }, []).memcachedTls).toEqual({
      ca: readFileSync(ca),
      verifyHostname: false,
    });
    expect(problemsOf({ MEMCACHED_TLS_CA: ca })).toEqual(['MEMCACHED_TLS_CA set without MEMCACHED_TLS=on: set it, or unset them']);
    expect(problemsOf({ MEMCACHED_TLS: 'on', MEMCACHED_TLS_CERT: ca })).toEqual([
      'MEMCACHED_TLS_CERT and MEMCACHED_TLS_KEY go together: set both or neither',
    ]);
    expect(problemsOf({ MEMCACHED_TLS: 'on', MEMCACHED_TLS_CA: notPem, MEMCACHED_TLS_CERT: join(folder, 'missing.pem'), MEMCACHED_TLS_KEY: ca })).toEqual([
      `MEMCACHED_TLS_CA=${notPem}: not a PEM file (no "-----BEGIN" line)`,
      `MEMCACHED_TLS_CERT=${join(folder, 'missing.pem')}: cannot be read (ENOENT)`,
    ]);
    expect(problemsOf({ MEMCACHED_TLS: 'yes' })).toEqual(['MEMCACHED_TLS must be on or off (got "yes")']);
  });

  it('reads TLS on the listeners: both files or neither, a client name only with a client authority', () => {
    const folder = mkdtempSync(join(tmpdir(), 'memgate-settings-listener-'));
    const file = join(folder, 'a.pem');
    writeFileSync(file, '-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n');
    expect(loadSettings({}, [])).toMatchObject({ grpcTls: undefined, httpTls: undefined, tlsRefreshSeconds: DEFAULTS.tlsRefreshSeconds });
    expect(loadSettings({ MEMGATE_GRPC_PORT: '0', MEMGATE_GRPC_TLS_CERT: file, MEMGATE_GRPC_TLS_KEY: file, MEMGATE_GRPC_TLS_CLIENT_CA: file, MEMGATE_GRPC_TLS_CLIENT_SAN: 'envoy' }, []).grpcTls).toEqual({
      certFile: file,
      keyFile: file,
      clientCaFile: file,
      clientSan: 'envoy',
    });
    expect(loadSettings({ MEMGATE_TLS_CERT: file, MEMGATE_TLS_KEY: file }, []).httpTls).toEqual({ certFile: file, keyFile: file });
    expect(problemsOf({ MEMGATE_TLS_CERT: file })).toEqual(['MEMGATE_TLS_CERT and MEMGATE_TLS_KEY go together: set both or neither']);
    expect(problemsOf({ MEMGATE_GRPC_TLS_CLIENT_CA: file })).toEqual([
      'MEMGATE_GRPC_TLS_CLIENT_CA set without MEMGATE_GRPC_TLS_CERT and MEMGATE_GRPC_TLS_KEY: set them, or unset it',
    ]);
    expect(problemsOf({ MEMGATE_GRPC_PORT: '0', MEMGATE_GRPC_TLS_CERT: file, MEMGATE_GRPC_TLS_KEY: file, MEMGATE_GRPC_TLS_CLIENT_SAN: 'envoy' })).toEqual([
      'MEMGATE_GRPC_TLS_CLIENT_SAN needs MEMGATE_GRPC_TLS_CLIENT_CA: a name is checked only on certificates that authority signed',
    ]);
    expect(problemsOf({ MEMGATE_TLS_CERT: join(folder, 'gone.pem'), MEMGATE_TLS_KEY: file })).toEqual([
      `MEMGATE_TLS_CERT=${join(folder, 'gone.pem')}: cannot be read (ENOENT)`,
    ]);
    // Nothing would be served over them without a gRPC port.
    expect(problemsOf({ MEMGATE_GRPC_TLS_CERT: file, MEMGATE_GRPC_TLS_KEY: file })).toEqual([
      'MEMGATE_GRPC_TLS_CERT and MEMGATE_GRPC_TLS_KEY set without MEMGATE_GRPC_PORT: set the port, or unset them (nothing would be served over them)',
    ]);
    // HTTP has no client name: the variable is no setting, and its near miss is named.
    expect(problemsOf({ MEMGATE_TLS_CERT: file, MEMGATE_TLS_KEY: file, MEMGATE_TLS_CLIENT_SAN: 'x' })[0]).toMatch(/MEMGATE_TLS_CLIENT_SAN/);
  });

  it('reads LOG_LEVEL in any case, as envoyproxy/ratelimit operators write it', () => {
    expect(loadSettings({ LOG_LEVEL: 'WARN' }, []).logLevel).toBe('warn');
    expect(problemsOf({ LOG_LEVEL: 'LOUD' })).toEqual(['LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "LOUD")']);
  });

  it("serves gRPC only on MEMGATE_GRPC_PORT, and never on PORT's port", () => {
    expect(loadSettings({}, []).grpcPort).toBeUndefined();
    expect(loadSettings({ MEMGATE_GRPC_PORT: '8081' }, []).grpcPort).toBe(8081);
    expect(loadSettings({ MEMGATE_GRPC_PORT: '0', PORT: '0' }, []).grpcPort).toBe(0);
    expect(problemsOf({ MEMGATE_GRPC_PORT: 'grpc' })).toEqual(['MEMGATE_GRPC_PORT must be a whole number from 0 to 65535 (got "grpc")']);
    expect(problemsOf({ MEMGATE_GRPC_PORT: '8080' })).toEqual(['MEMGATE_GRPC_PORT and PORT are both 8080: gRPC and HTTP need a port each']);
    expect(loadSettings({ MEMGATE_ENVOY_CONFIG: ' config/envoy ' }, []).envoyConfigPath).toBe('config/envoy');
  });

  it('fails over between Memcached servers unless told not to, holding a server out 30 s and settling 10 s', () => {
    expect(loadSettings({}, [])).toMatchObject({
      memcachedFailover: true,
      memcachedFailoverHoldDownMs: 30_000,
      memcachedFailoverSettleMs: 10_000,
    });
    expect(loadSettings({ MEMCACHED_FAILOVER: 'off', MEMCACHED_FAILOVER_SETTLE_MS: '0' }, [])).toMatchObject({
      memcachedFailover: false,
      memcachedFailoverSettleMs: 0,
    });
  });

  it("traces only when OpenTelemetry's variables name an OTLP endpoint or exporter, to the traces' URL by their rules", () => {
    const tracing = (env: Record<string, string>) => loadSettings(env, []).tracing;
    expect(tracing({})).toBeUndefined();
    expect(tracing({ OTEL_SERVICE_NAME: 'edge' })).toBeUndefined();
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toEqual({
      protocol: 'http/protobuf',
      url: 'http://collector:4318/v1/traces',
      propagators: ['tracecontext', 'baggage'],
    });
    // The traces' own endpoint is taken as it is, and wins.
    expect(
      tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/traces' })?.url,
    ).toBe('https://b/traces');
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toMatchObject({
      protocol: 'grpc',
      url: 'http://a:4317',
    });
    expect(tracing({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({
      protocol: 'http/json',
      url: 'http://localhost:4318/v1/traces',
    });
    expect(tracing({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })?.url).toBe('http://localhost:4317');
    expect(tracing({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_PROPAGATORS: 'tracecontext' })?.propagators).toEqual(['tracecontext']);
    expect(tracing({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_PROPAGATORS: 'none' })?.propagators).toEqual([]);
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });

  it("refuses OpenTelemetry's variables memgate cannot honour, naming each", () => {
    expect(
      problemsOf({
        OTEL_TRACES_EXPORTER: 'zipkin',
        OTEL_PROPAGATORS: 'b3',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'thrift',
        OTEL_SDK_DISABLED: 'yes',
        OTEL_TRACES_SAMPLER: 'xray',
        OTEL_TRACES_SAMPLER_ARG: '2',
        OTEL_RESOURCE_ATTRIBUTES: 'team',
      }),
    ).toEqual([
      'OTEL_TRACES_EXPORTER must name otlp, none (got "zipkin"): memgate sends traces over OTLP only',
      `OTEL_PROPAGATORS must name tracecontext, baggage, none (got "b3"): memgate reads W3C's traceparent and baggage only`,
      'OTEL_SDK_DISABLED must be true or false (got "yes")',
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http/protobuf, http/json, grpc (got "thrift")',
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL (got "collector:4318")',
      'OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio (got "xray")',
      'OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1 (got "2")',
      'OTEL_RESOURCE_ATTRIBUTES must be key=value pairs, comma-separated, each value percent-encoded (got "team")',
    ]);
  });

  it("reads the sampler and the service's name and attributes as OpenTelemetry's variables say", () => {
    expect(loadSettings({}, [])).toMatchObject({
      tracingSampler: { name: 'parentbased_always_on', ratio: 1 },
      tracingService: { serviceName: 'memgate', attributes: {} },
    });
    const env = {
      OTEL_TRACES_SAMPLER: 'traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes, deployment.environment=prod%20eu',
    };
    expect(loadSettings(env, [])).toMatchObject({
      tracingSampler: { name: 'traceidratio', ratio: 0.25 },
      tracingService: {
        serviceName: 'from-attributes',
        attributes: { 'service.name': 'from-attributes', 'deployment.environment': 'prod eu' },
      },
    });
    expect(loadSettings({ ...env, OTEL_SERVICE_NAME: 'edge' }, []).tracingService.serviceName).toBe('edge');
  });

  it("adds no jitter to counters' lives unless MEMCACHED_EXPIRATION_JITTER_S asks, up to a day", () => {
    expect(loadSettings({}, []).memcachedExpirationJitterS).toBe(0);
    expect(loadSettings({ MEMCACHED_EXPIRATION_JITTER_S: '0' }, []).memcachedExpirationJitterS).toBe(0);
    expect(loadSettings({ MEMCACHED_EXPIRATION_JITTER_S: '300' }, []).memcachedExpirationJitterS).toBe(300);
    expect(loadSettings({ MEMCACHED_EXPIRATION_JITTER_S: '86400' }, []).memcachedExpirationJitterS).toBe(86_400);
  });

  it('drains for 5 s after SIGTERM unless told otherwise; 0 means no drain', () => {
    expect(loadSettings({}, []).shutdownDrainMs).toBe(5000);
    expect(loadSettings({ MEMGATE_SHUTDOWN_DRAIN_MS: '0' }, []).shutdownDrainMs).toBe(0);
    expect(loadSettings({ MEMGATE_SHUTDOWN_DRAIN_MS: '400' }, []).shutdownDrainMs).toBe(400);
  });

  it.each([
    ['MEMGATE_SHUTDOWN_DRAIN_MS', '-1', 'MEMGATE_SHUTDOWN_DRAIN_MS must be a whole number from 0 to 600000 ms (got "-1")'],
    ['MEMGATE_MAX_CLOCK_SKEW_MS', '-1', 'MEMGATE_MAX_CLOCK_SKEW_MS must be a whole number from 0 to 60000 ms (got "-1")'],
    ['MEMGATE_CACHE_MB', 'lots', 'MEMGATE_CACHE_MB must be a whole number from 0 to 1048576 MiB (got "lots")'],
    ['MEMGATE_MAX_DENIAL_CACHE_MS', '1.5', 'MEMGATE_MAX_DENIAL_CACHE_MS must be a whole number from 0 to 3600000 ms (got "1.5")'],
    ['PORT', '65536', 'PORT must be a whole number from 0 to 65535 (got "65536")'],
    ['MEMCACHED_TIMEOUT_MS', '0', 'MEMCACHED_TIMEOUT_MS must be a whole number from 1 to 60000 ms (got "0")'],
    ['MEMCACHED_EXPIRATION_JITTER_S', '-1', 'MEMCACHED_EXPIRATION_JITTER_S must be a whole number from 0 to 86400 s (got "-1")'],
    ['MEMCACHED_EXPIRATION_JITTER_S', 'abc', 'MEMCACHED_EXPIRATION_JITTER_S must be a whole number from 0 to 86400 s (got "abc")'],
    ['MEMCACHED_EXPIRATION_JITTER_S', '1.5', 'MEMCACHED_EXPIRATION_JITTER_S must be a whole number from 0 to 86400 s (got "1.5")'],
    ['MEMCACHED_EXPIRATION_JITTER_S', '300000', 'MEMCACHED_EXPIRATION_JITTER_S must be a whole number from 0 to 86400 s (got "300000")'],
    ['MEMCACHED_FAILOVER', 'yes', 'MEMCACHED_FAILOVER must be on or off (got "yes")'],
    ['MEMCACHED_FAILOVER_SETTLE_MS', '10s', 'MEMCACHED_FAILOVER_SETTLE_MS must be a whole number from 0 to 3600000 ms (got "10s")'],
    ['MEMCACHED_FAILOVER_HOLD_DOWN_MS', '-5', 'MEMCACHED_FAILOVER_HOLD_DOWN_MS must be a whole number from 0 to 3600000 ms (got "-5")'],
    ['LOG_LEVEL', 'loud', 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")'],
    ['MEMGATE_KEY_PREFIX', 'has space', 'MEMGATE_KEY_PREFIX must be 1 to 32 letters, digits, "_", "." or "-" (got "has space")'],
    ['HOST', 'not a host', 'HOST must be an IP address or a host name (got "not a host")'],
    ['MEMGATE_ADMIN_TOKEN', 'short', 'MEMGATE_ADMIN_TOKEN must be at least 16 characters'],
  ])('refuses %s=%s in one line naming it and what it takes', (name, value, message) => {
    expect(problemsOf({ [name]: value })).toEqual([message]);
  });

  it.each([
    ['garbage', 'MEMCACHED_SERVERS entry "garbage" names no port: write host:port, as garbage:11211 (Memcached\'s usual port)'],
    ['host:', 'MEMCACHED_SERVERS entry "host:" has port "": a port is a whole number from 1 to 65535'],
    ['host:99999', 'MEMCACHED_SERVERS entry "host:99999" has port "99999": a port is a whole number from 1 to 65535'],
    ['host:abc', 'MEMCACHED_SERVERS entry "host:abc" has port "abc": a port is a whole number from 1 to 65535'],
    ['host:0', 'MEMCACHED_SERVERS entry "host:0" has port "0": a port is a whole number from 1 to 65535'],
    ['a:1,,b:2', 'MEMCACHED_SERVERS entry number 2 of 3 is empty: remove the stray comma'],
    ['a:1,', 'MEMCACHED_SERVERS entry number 2 of 2 is empty: remove the stray comma'],
    ['bad host:1', 'MEMCACHED_SERVERS entry "bad host:1" is not host:port (a host name or IPv4 address, or an IPv6 address in brackets as [::1]:11211)'],
    ['300.1.1.1:11211', 'MEMCACHED_SERVERS entry "300.1.1.1:11211" is not host:port'],
    ['::1:11211', 'MEMCACHED_SERVERS entry "::1:11211" is not host:port'],
    ['[::1]', 'MEMCACHED_SERVERS entry "[::1]" names no port: write host:port, as [::1]:11211'],
    ['[nope]:1', 'MEMCACHED_SERVERS entry "[nope]:1" is not host:port'],
    ['alice@cache:11211', 'MEMCACHED_SERVERS entry "cache:11211" has credentials that are not user:password@host:port'],
    ['a:1,a:1', 'MEMCACHED_SERVERS entry a:1 is listed twice'],
  ])('refuses MEMCACHED_SERVERS=%s at start, naming the entry', (servers, message) => {
    const problems = problemsOf({ MEMCACHED_SERVERS: servers });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(message);
  });

  it('accepts host:port lists: names, IPv4, bracketed IPv6, SASL credentials', () => {
    for (const servers of ['cache-1:11211,cache_2:11212', '10.0.0.5:11211', '[::1]:11211,[2001:db8::7]:1', 'alice:s3cr@t:x@cache.example.:11211', ' a:1 , b:2 ']) {
      expect(problemsOf({ MEMCACHED_SERVERS: servers }), servers).toEqual([]);
    }
  });

  it('never names the credentials of a server it refuses', () => {
    const problems = problemsOf({ MEMCACHED_SERVERS: 'alice:s3cret@bad host:1' });
    expect(problems[0]).toContain('"bad host:1" is not host:port');
    expect(problems.join('\n')).not.toContain('s3cret');
  });

  it('reports every bad setting at once, one line each', () => {
    expect(problemsOf({ PORT: 'eighty', LOG_LEVEL: 'loud', MEMCACHED_SERVERS: 'garbage' })).toEqual([
      expect.stringMatching(/^PORT must be/) as string,
      expect.stringMatching(/^MEMCACHED_SERVERS entry "garbage"/) as string,
      expect.stringMatching(/^LOG_LEVEL must be/) as string,
    ]);
  });

  it('refuses a MEMGATE_* or MEMCACHED_* variable that is no setting, naming the closest', () => {
    expect(problemsOf({ MEMGATE_CAHCE_MB: '16' })).toEqual([
      'MEMGATE_CAHCE_MB is not a memgate setting: did you mean MEMGATE_CACHE_MB? (memgate --help lists every setting)',
    ]);
    expect(problemsOf({ MEMCACHED_SERVER: 'a:1', MEMGATE_ADMIN_TOKN: 'x'.repeat(16) })).toEqual([
      expect.stringContaining('MEMCACHED_SERVER is not a memgate setting: did you mean MEMCACHED_SERVERS?') as string,
      expect.stringContaining('MEMGATE_ADMIN_TOKN is not a memgate setting: did you mean MEMGATE_ADMIN_TOKEN?') as string,
    ]);
    // Nothing close: no guess.
    expect(problemsOf({ MEMGATE_SOMETHING_ELSE_ENTIRELY: '1' })).toEqual([
      'MEMGATE_SOMETHING_ELSE_ENTIRELY is not a memgate setting (memgate --help lists every setting)',
    ]);
    // Other prefixes are not memgate's; what other tools read, and Kubernetes' service links, are let be.
    expect(
      problemsOf({
        MEMGATEWAY: '1',
        NODE_MEMGATE_X: '1',
        MEMGATE_URL: 'http://127.0.0.1:8080',
        MEMCACHED_SERVICE_HOST: '10.0.0.7',
        MEMCACHED_SERVICE_PORT: '11211',
        MEMCACHED_SERVICE_PORT_MEMCACHE: '11211',
        MEMCACHED_PORT: 'tcp://10.0.0.7:11211',
        MEMCACHED_PORT_11211_TCP: 'tcp://10.0.0.7:11211',
        MEMCACHED_PORT_11211_TCP_ADDR: '10.0.0.7',
        MEMGATE_PORT: 'tcp://10.0.0.8:8080',
        MEMGATE_PORT_8080_TCP_PROTO: 'tcp',
      }),
    ).toEqual([]);
  });

  it('refuses a setting misspelt under any prefix, or with memgate\'s prefix added, swapped or left out, naming the one meant', () => {
    const meant = (env: Record<string, string>) =>
      problemsOf(env).map((problem) => /^(\S+) is not a memgate setting(?:: did you mean (.+?)\?)?/.exec(problem)?.slice(1, 3));
    expect(meant({ MEMCACHE_SERVERS: 'cache:11211' })).toEqual([['MEMCACHE_SERVERS', 'MEMCACHED_SERVERS']]);
    expect(meant({ MEMGATE_PORT: '9000' })).toEqual([['MEMGATE_PORT', 'PORT']]);
    expect(meant({ MEMGATE_HOST: '0.0.0.0' })).toEqual([['MEMGATE_HOST', 'HOST']]);
    // MEMGATE_URL is the client's setting, not what a Memcached address was meant for.
    expect(meant({ MEMCACHED_URL: 'cache:11211' })).toEqual([['MEMCACHED_URL', 'MEMCACHED_SERVERS']]);
    expect(meant({ MEMGATE_SERVERS: 'cache:11211' })).toEqual([['MEMGATE_SERVERS', 'MEMCACHED_SERVERS']]);
    expect(meant({ MEMCACHED_CACHE_MB: '64' })).toEqual([['MEMCACHED_CACHE_MB', 'MEMGATE_CACHE_MB']]);
    expect(meant({ CACHE_MB: '64' })).toEqual([['CACHE_MB', 'MEMGATE_CACHE_MB']]);
    expect(meant({ TLS_CERT: 'c.pem' })).toEqual([['TLS_CERT', 'MEMGATE_TLS_CERT or MEMCACHED_TLS_CERT']]);
    expect(meant({ MEMGATE_LOG_LEVEL: 'debug' })).toEqual([['MEMGATE_LOG_LEVEL', 'LOG_LEVEL']]);
    // envoyproxy/ratelimit's names are read, so their mistakes are named too.
    expect(meant({ MEMCACHE_HOST_PORTS: 'cache:11211' })).toEqual([['MEMCACHE_HOST_PORTS', 'MEMCACHE_HOST_PORT']]);
    expect(meant({ MEMGATE_STATSD_HOST: 'statsd' })).toEqual([['MEMGATE_STATSD_HOST', 'STATSD_HOST']]);
    // Two edits, or two letters swapped, under any prefix; one edit for a short name.
    expect(meant({ LOG_LEVL: 'info', LOGLEVEL: 'info', MEMCACHED_SERVRES: 'a:1', PROT: '80', HSOT: 'x' })).toEqual([
      ['HSOT', 'HOST'],
      ['LOGLEVEL', 'LOG_LEVEL'],
      ['LOG_LEVL', 'LOG_LEVEL'],
      ['MEMCACHED_SERVRES', 'MEMCACHED_SERVERS'],
      ['PROT', 'PORT'],
    ]);
    // A machine's own variables are not settings misspelt, nor are other programs' of one word.
    expect(
      problemsOf({
        HOME: '/root',
        HOSTNAME: 'pod-1',
        PATH: '/usr/bin',
        PWD: '/',
        TERM: 'xterm',
        USERNAME: 'me',
        PASSWORD: 'x',
        SERVERS: 'a',
        NODE_ENV: 'production',
        NODE_OPTIONS: '--enable-source-maps',
        GRPC_TRACE: 'all',
        GRPC_VERBOSITY: 'debug',
        OTEL_METRICS_EXPORTER: 'none',
        OTEL_LOGS_EXPORTER: 'none',
        OTEL_EXPORTER_OTLP_HEADERS: 'a=b',
        KUBERNETES_SERVICE_HOST: '10.0.0.1',
        KUBERNETES_SERVICE_PORT: '443',
        KUBERNETES_PORT: 'tcp://10.0.0.1:443',
      }),
    ).toEqual([]);
  });

  it('knows Kubernetes service links by their tcp:// values: without one, a link-shaped name is a mistake', () => {
    expect(problemsOf({ MEMGATE_PORT: 'tcp://10.0.0.8:8080', MEMGATE_SERVICE_HOST: '10.0.0.8' })).toEqual([]);
    expect(problemsOf({ MEMGATE_PORT: '9000' })).toEqual([
      'MEMGATE_PORT is not a memgate setting: did you mean PORT? (a Kubernetes service link would hold tcp://…) (memgate --help lists every setting)',
    ]);
    expect(problemsOf({ MEMCACHED_SERVICE_HOST: '10.0.0.7' })).toEqual([
      'MEMCACHED_SERVICE_HOST is not a memgate setting (memgate --help lists every setting)',
    ]);
    // Another service's link is no MEMGATE one.
    expect(problemsOf({ MEMCACHED_PORT: 'tcp://10.0.0.7:11211', MEMGATE_SERVICE_PORT: '8080' })).toHaveLength(1);
  });

  it('refuses an empty MEMCACHED_SERVERS: unset is what means in-process counters', () => {
    expect(problemsOf({ MEMCACHED_SERVERS: '' })).toEqual([
      'MEMCACHED_SERVERS is set but empty: name the servers (host:port,…), or unset it to count in this process only',
    ]);
    expect(problemsOf({ MEMCACHED_SERVERS: '  ' })).toHaveLength(1);
    expect(loadSettings({}, []).memcachedServers).toBeUndefined();
  });

  it('reads memcached://host:port as host:port, and refuses another scheme saying what to write', () => {
    expect(loadSettings({ MEMCACHED_SERVERS: 'memcached://cache-1:11211,memcached://u:p@cache-2:11212/' }, []).memcachedServers).toBe(
      'memcached://cache-1:11211,memcached://u:p@cache-2:11212/',
    );
    const [problem] = problemsOf({ MEMCACHED_SERVERS: 'redis://alice:s3cret@cache:6379' });
    expect(problem).toBe(
      'MEMCACHED_SERVERS entry "redis://…" is not a Memcached address: write host:port (memcached://host:port is read as host:port too)',
    );
    expect(problem).not.toContain('s3cret');
    expect(problemsOf({ MEMCACHED_SERVERS: 'memcached://cache' })[0]).toContain('names no port: write host:port, as cache:11211');
  });

  it('refuses a bad command line in one line that names the option', () => {
    expect(problemsOf({}, ['--confg', 'x.yaml'])).toEqual(["Unknown option '--confg' (memgate --help lists the options)"]);
    expect(problemsOf({}, ['--config'])).toEqual(["Option '-c, --config <value>' argument missing (memgate --help lists the options)"]);
    expect(loadSettings({}, ['--help']).help).toBe(true);
  });
});

describe('--help', () => {
  it('lists every setting of the table with its default and values', () => {
    for (const setting of Object.values(SETTINGS) as Setting<unknown>[]) {
      const line = USAGE.split('\n').find((l) => l.startsWith(`  ${setting.env.join(', ')} (`));
      expect(line, setting.env[0]).toBeDefined();
      expect(line).toContain(setting.default === 'unset' ? 'unset by default' : `default ${setting.default}`);
    }
    expect(USAGE).toContain('MEMGATE_SHUTDOWN_DRAIN_MS (default 5000; 0 to 600000 ms)');
  });

  it('is plain text', () => {
    expect(USAGE).not.toMatch(/[`[\]]\(|`/);
  });
});
