// The example configurations that cannot run here (Traefik, Envoy, docker compose) at
// least parse, point at memgate and pass it only the headers it reads, as its README says.
// nginx runs for real in nginx.test.ts.
import { DEFAULTS } from '../src/config/defaults.js';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parseEnv } from 'node:util';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadEnvoyConfig, type DescriptorLevel } from '../src/config/envoy-config.js';
import { envoyEventName, matchEnvoyDescriptor } from '../src/config/envoy-match.js';
import { parsePolicyText } from '../src/config/policies.js';
import { loadSettings } from '../src/config/settings.js';
import { isUpstreamVariable } from '../src/config/upstream-env.js';

const yamlOf = async (path: string) => parse(await readFile(path, 'utf8'), { merge: true }) as Record<string, unknown>;
/** The Compose Specification's JSON schema, as dclint (a Compose linter) ships it. */
const COMPOSE_SCHEMA = join(
  dirname(createRequire(import.meta.url).resolve('dclint/package.json')),
  'schemas/compose.schema.json',
);

/** A nested value by path, for configs too deep to type. */
function at(value: unknown, ...path: (string | number)[]): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string | number, unknown> | undefined)?.[key], value);
}

/**
 * The descriptor key each of Envoy's rate limit actions produces (Envoy's
 * config.route.v3.RateLimit.Action). An action not listed here fails the test rather than
 * being skipped, so a new one in the example gets its key added here.
 */
const ACTION_KEYS: Record<string, (action: Record<string, unknown>) => string> = {
  remote_address: () => 'remote_address',
  source_cluster: () => 'source_cluster',
  destination_cluster: () => 'destination_cluster',
  request_headers: (action) => action.descriptor_key as string,
  generic_key: (action) => (action.descriptor_key as string | undefined) ?? 'generic_key',
};

function descriptorKeys(actions: Record<string, Record<string, unknown>>[]): string[] {
  return actions.map((action) => {
    const [type, settings] = Object.entries(action)[0] ?? [];
    const keyOf = type === undefined ? undefined : ACTION_KEYS[type];
    if (!keyOf || !settings) throw new Error(`unknown rate limit action ${JSON.stringify(action)}`);
    return keyOf(settings);
  });
}

/** Whether some chain of nested descriptors has these keys in order and ends at a limit. */
function reachesLimit(level: DescriptorLevel, keys: readonly string[]): boolean {
  const [key, ...rest] = keys;
  return [...level.byKey.values()].some(
    (descriptor) =>
      descriptor.key === key &&
      (rest.length === 0 ? descriptor.rateLimit !== undefined : reachesLimit(descriptor.children, rest)),
  );
}

describe('examples', () => {
  it('nginx: the auth location sends memgate only the URI, the client address and the tier nginx itself sets', async () => {
    const config = await readFile('examples/nginx/nginx.conf', 'utf8');
    const auth = /location = \/_memgate \{([\s\S]*?)\n {4}\}/.exec(config)?.[1] ?? '';
    expect(auth).toMatch(/proxy_pass_request_headers off;/);
    expect(auth).toMatch(/proxy_method GET;/);
    expect(
      [...auth.matchAll(/proxy_set_header (\S+) (\S+);/g)].map(([, name, value]) => `${name ?? ''} ${value ?? ''}`),
    ).toEqual([
      'Content-Length ""',
      'X-Original-URI $request_uri',
      'X-Forwarded-For $remote_addr',
      'X-Memgate-Tier $memgate_tier',
    ]);
    // The tier comes from nginx's own map, empty (not sent) for a client it knows nothing of.
    expect(config).toMatch(/map \$http_x_api_key \$memgate_tier \{\s+default "";/);
  });

  it('Traefik: a forwardAuth middleware asking /gate that passes only the headers memgate reads, set by Traefik', async () => {
    const config = await yamlOf('examples/traefik/dynamic.yml');
    const forwardAuth = at(config, 'http', 'middlewares', 'memgate', 'forwardAuth') as Record<string, unknown>;
    expect(forwardAuth.address).toMatch(/\/gate$/);
    // Traefik overwrites X-Forwarded-* only when it does not trust the client's; an empty list would pass every header.
    expect(forwardAuth.trustForwardHeader).toBe(false);
    expect((forwardAuth.authRequestHeaders as string[]).map((h) => h.toLowerCase()).sort()).toEqual([
      'x-forwarded-for',
      'x-forwarded-uri',
    ]);
    expect(forwardAuth.authResponseHeaders).toEqual(['RateLimit', 'RateLimit-Policy']);
    expect(at(config, 'http', 'routers', 'api', 'middlewares')).toEqual(['memgate']);
  });

  it('Envoy: an ext_authz HTTP service at /gate that passes only X-Forwarded-For, fails closed with 503 and hands memgate’s answer on', async () => {
    const text = await readFile('examples/envoy/envoy.yaml', 'utf8');
    const config = parse(text) as Record<string, unknown>;
    const manager = at(
      config,
      'static_resources',
      'listeners',
      0,
      'filter_chains',
      0,
      'filters',
      0,
      'typed_config',
    ) as Record<string, unknown>;
    expect([manager.use_remote_address, manager.normalize_path, manager.merge_slashes]).toEqual([true, true, true]);
    const filters = manager.http_filters as { name: string; typed_config: Record<string, unknown> }[];
    expect(filters.map((f) => f.name)).toEqual(['envoy.filters.http.ext_authz', 'envoy.filters.http.router']);
    const authz = filters[0]?.typed_config ?? {};
    expect(at(authz, 'allowed_headers', 'patterns')).toEqual([{ exact: 'x-forwarded-for' }]);
    expect([authz.failure_mode_allow, at(authz, 'status_on_error', 'code')]).toEqual([false, 'ServiceUnavailable']);
    const service = authz.http_service as Record<string, unknown>;
    expect(service.path_prefix).toBe('/gate');
    // The deprecated per-service list is gone, and so is any way for a client to name the event.
    expect(service.authorization_request).toBeUndefined();
    expect(text.toLowerCase()).not.toContain('x-memgate-event');
    const allowed = at(service, 'authorization_response', 'allowed_client_headers', 'patterns') as { exact: string }[];
    expect(allowed.map((p) => p.exact)).toEqual(
      expect.arrayContaining(['retry-after', 'ratelimit', 'ratelimit-policy', 'memgate-error']),
    );
  });

  it('Envoy: the ratelimit filter asks memgate_rls over HTTP/2 on 8081 with the v3 API, for the domain of the descriptor file, and its actions produce keys that file limits', async () => {
    const config = await yamlOf('examples/envoy/ratelimit.yaml');
    const manager = at(
      config,
      'static_resources',
      'listeners',
      0,
      'filter_chains',
      0,
      'filters',
      0,
      'typed_config',
    ) as Record<string, unknown>;
    // remote_address is the trusted client address only when Envoy takes the peer's (or trusts hops).
    expect(manager.use_remote_address).toBe(true);
    const filters = manager.http_filters as { name: string; typed_config: Record<string, unknown> }[];
    expect(filters.map((f) => f.name)).toEqual(['envoy.filters.http.ratelimit', 'envoy.filters.http.router']);
    const filter = filters[0]?.typed_config ?? {};
    expect(filter['@type']).toBe('type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit');
    expect(filter.enable_x_ratelimit_headers).toBe('DRAFT_VERSION_03');
    expect(typeof filter.failure_mode_deny).toBe('boolean');
    // Above MEMCACHED_TIMEOUT_MS's 250 ms, so memgate's onStoreError answers before Envoy gives up.
    expect(Number(/^([0-9.]+)s$/.exec(String(filter.timeout))?.[1])).toBeGreaterThan(0.25);
    const service = filter.rate_limit_service as Record<string, unknown>;
    expect(service.transport_api_version).toBe('V3');
    const clusterName = at(service, 'grpc_service', 'envoy_grpc', 'cluster_name');
    expect(clusterName).toBe('memgate_rls');

    const clusters = at(config, 'static_resources', 'clusters') as Record<string, unknown>[];
    const cluster = clusters.find((c) => c.name === clusterName) ?? {};
    const options = at(
      cluster,
      'typed_extension_protocol_options',
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
    );
    expect(at(options, '@type')).toBe('type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions');
    expect(at(options, 'explicit_http_config', 'http2_protocol_options')).toEqual({});
    expect(
      at(cluster, 'load_assignment', 'endpoints', 0, 'lb_endpoints', 0, 'endpoint', 'address', 'socket_address'),
    ).toEqual({
      address: '127.0.0.1',
      port_value: 8081,
    });
    expect(at(cluster, 'health_checks', 0, 'grpc_health_check', 'service_name')).toBe(
      'envoy.service.ratelimit.v3.RateLimitService',
    );

    const envoyConfig = await loadEnvoyConfig('examples/envoy/ratelimit-config.yaml');
    expect([...envoyConfig.domains.keys()]).toEqual([filter.domain]);
    const domain = envoyConfig.domains.get(filter.domain as string);
    if (!domain) throw new Error(`ratelimit-config.yaml has no domain ${String(filter.domain)}`);
    const hosts = at(manager, 'route_config', 'virtual_hosts') as { routes: { route: Record<string, unknown> }[] }[];
    const entries = hosts.flatMap((host) =>
      host.routes.flatMap((route) => (route.route.rate_limits ?? []) as Record<string, unknown>[]),
    );
    const descriptors = entries.map((entry) =>
      descriptorKeys(entry.actions as Record<string, Record<string, unknown>>[]),
    );
    expect(descriptors).toEqual([['remote_address'], ['path'], ['path', 'remote_address']]);
    const firstLevel = new Set([...domain.descriptors.byKey.values()].map((descriptor) => descriptor.key));
    for (const keys of descriptors) {
      expect(firstLevel, keys.join(',')).toContain(keys[0]);
      expect(reachesLimit(domain.descriptors, keys), `a limit for ${keys.join(', ')}`).toBe(true);
    }
  });

  it('Envoy: ratelimit-config.yaml loads without problems and limits what its comments say', async () => {
    const config = await loadEnvoyConfig('examples/envoy/ratelimit-config.yaml');
    const match = (...pairs: [string, string][]) =>
      matchEnvoyDescriptor(
        config,
        'api',
        pairs.map(([key, value]) => ({ key, value })),
      );
    const perAddress = match(['remote_address', '203.0.113.7']);
    expect(perAddress).toMatchObject({
      kind: 'limit',
      feature: '203.0.113.7',
      rateLimit: { unit: 'minute', requestsPerUnit: 600, algorithm: 'fixed' },
    });
    // Every spelling of /login shares the address's one sliding 90 s counter.
    const logins = ['/login', '/login?next=/cart', '/login?x=2'].map((path) =>
      match(['path', path], ['remote_address', '203.0.113.7']),
    );
    for (const login of logins) {
      expect(login).toMatchObject({
        kind: 'limit',
        feature: '203.0.113.7',
        rateLimit: { window: 90, algorithm: 'sliding', requestsPerUnit: 5, onStoreError: 'deny' },
      });
    }
    expect(new Set(logins.map((login) => (login.kind === 'limit' ? login.event : '')))).toHaveProperty('size', 1);
    expect(match(['path', '/login'])).toMatchObject({ kind: 'none' });
    expect(match(['path', '/api/orders'])).toMatchObject({
      kind: 'limit',
      feature: '/api/orders',
      rateLimit: { unit: 'second', requestsPerUnit: 100 },
    });
    expect(match(['path', '/healthz'])).toMatchObject({ kind: 'unlimited' });
    const search = match(['path', '/search?q=shoes']);
    expect(search).toMatchObject({ kind: 'limit', shadowMode: true, feature: '-' });
    // The shadow metric's label, as the comment gives it.
    const text = await readFile('examples/envoy/ratelimit-config.yaml', 'utf8');
    expect(search.kind === 'limit' ? search.event : '').toBe(envoyEventName('api', ['path_/search*']));
    expect(text).toContain(
      `memgate_envoy_shadow_over_limit_total{event="${envoyEventName('api', ['path_/search*'])}"}`,
    );
    expect(match(['path', '/other'])).toMatchObject({ kind: 'none', reason: 'no-limit' });
  });

  it("Envoy (upstream): examples/envoy/upstream holds upstream's examples/ratelimit files as upstream ships them, and memgate loads both domains", async () => {
    // Git's blob ids of upstream's examples/ratelimit/config/*.yaml at f2fb157 (`git ls-tree`), which any copy of it can check.
    const UPSTREAM_BLOBS = {
      'config.yaml': 'b4204dccada4d6f38d3af2461358087c9bfdf09b',
      'example.yaml': '556681b0bb76c9f104b7a3c3205bdbe34f5b9dbb',
    };
    const folder = 'examples/envoy/upstream/ratelimit/config';
    for (const [file, blob] of Object.entries(UPSTREAM_BLOBS)) {
      const bytes = await readFile(join(folder, file));
      const id = createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
      expect(id, file).toBe(blob);
    }
    const config = await loadEnvoyConfig(folder);
    expect([...config.domains.keys()].sort()).toEqual(['mongo_cps', 'rl']);
    const readme = await readFile('examples/envoy/upstream/README.md', 'utf8');
    for (const blob of Object.values(UPSTREAM_BLOBS)) expect(readme).toContain(blob.slice(0, 7));
    expect(await readFile('examples/envoy/upstream/LICENSE', 'utf8')).toContain('Apache License');
  });

  it("Envoy (upstream): ratelimit.env holds only upstream's variables, read by memgate as that folder on gRPC 8081, with statsd and dynamic metadata", async () => {
    const env = parseEnv(await readFile('examples/envoy/upstream/ratelimit.env', 'utf8')) as Record<string, string>;
    expect(Object.keys(env).filter((name) => !isUpstreamVariable(name))).toEqual([]);
    // As upstream's integration test sets them, less Redis; the README's table names the rest.
    expect(env).toMatchObject({
      BACKEND_TYPE: 'memcache',
      RUNTIME_SUBDIRECTORY: 'ratelimit',
      RUNTIME_WATCH_ROOT: 'false',
      RESPONSE_DYNAMIC_METADATA: 'true',
      USE_STATSD: 'true',
    });
    const settings = loadSettings(env, []);
    expect(settings).toMatchObject({
      envoyConfigPath: 'examples/envoy/upstream/ratelimit/config',
      grpcPort: 8081,
      port: 8080,
      memcachedServers: '127.0.0.1:11211',
      envoyDynamicMetadata: true,
      statsd: { host: '127.0.0.1', port: 9125, protocol: 'tcp' },
      logLevel: 'debug',
    });
    // The README's command, and its folder, are those of the file.
    const readme = await readFile('examples/envoy/upstream/README.md', 'utf8');
    expect(readme).toContain('node --env-file=examples/envoy/upstream/ratelimit.env dist/main.js');
  });

  it('compose: three memcached nodes, two memgate instances on them, nginx in front with the tested example', async () => {
    const compose = await yamlOf('docker-compose.yml');
    const services = compose.services as Record<string, { environment?: Record<string, string>; volumes?: string[] }>;
    expect(Object.keys(services).sort()).toEqual([
      'api',
      'memcached-1',
      'memcached-2',
      'memcached-3',
      'memgate-a',
      'memgate-b',
      'nginx',
    ]);
    for (const name of ['memgate-a', 'memgate-b']) {
      expect(services[name]?.environment?.MEMCACHED_SERVERS).toBe(
        'memcached-1:11211,memcached-2:11211,memcached-3:11211',
      );
    }
    expect(services.nginx?.volumes).toEqual(['./examples/nginx/nginx.conf:/etc/memgate/nginx.conf:ro']);
    // The policies the instances load (copied into the image) are valid and set up /gate for nginx.
    const path = services['memgate-a']?.environment?.MEMGATE_CONFIG?.replace('/app/', '') ?? '';
    const policies = parsePolicyText(await readFile(path, 'utf8'), path);
    expect(policies.gateway).toMatchObject({
      uri: { from: 'header', header: 'x-original-uri' },
      event: { from: 'routes' },
      denyStatus: 403,
      invalidStatus: 401,
      trustedProxies: 1,
    });
  });

  // What `docker compose config` checks, without Docker: the file against the Compose
  // Specification's schema, and that each service it waits for is one of the file's.
  it.each(['docker-compose.yml', 'examples/graphite/compose.yaml'])(
    'compose: %s is valid against the Compose Specification, waiting only for its own services',
    async (file) => {
      const schema = JSON.parse(await readFile(COMPOSE_SCHEMA, 'utf8')) as Record<string, unknown>;
      // Draft-07, Ajv's default, which Ajv does not know by the schema's https spelling.
      delete schema.$schema;
      const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
      const compose = await yamlOf(file);
      expect(validate(compose) ? [] : validate.errors).toEqual([]);
      const services = compose.services as Record<string, { depends_on?: string[] }>;
      const awaited = Object.values(services).flatMap((service) => service.depends_on ?? []);
      expect(awaited.length).toBeGreaterThan(0);
      expect(awaited.filter((name) => !(name in services))).toEqual([]);
      // The same check refuses a service with a misspelt key.
      expect(validate({ services: { api: { image: 'x', enviroment: {} } } })).toBe(false);
    },
  );

  it('graphite: memgate sends to carbon and reads from graphite-web, each instance under a name of its own, with the schemas mounted', async () => {
    const compose = await yamlOf('examples/graphite/compose.yaml');
    const services = compose.services as Record<string, { environment?: Record<string, string>; volumes?: string[] }>;
    const instances = ['memgate-a', 'memgate-b'].map((name) => services[name]?.environment ?? {});
    expect(instances.map((environment) => environment.MEMGATE_GRAPHITE_INSTANCE)).toEqual(['a', 'b']);
    for (const environment of instances) {
      expect(environment).toMatchObject({
        MEMGATE_GRAPHITE: 'graphite:2003',
        MEMGATE_GRAPHITE_WEB: 'http://graphite:8080',
      });
      expect(environment.MEMGATE_USAGE_RETENTION).toBe(DEFAULTS.usageRetention);
    }
    expect(services.graphite?.volumes?.map((volume) => volume.split(':')[0])).toEqual(
      expect.arrayContaining(['./storage-schemas.conf', './storage-aggregation.conf']),
    );
    // Graphite keeps what memgate's queries expect, and sums counts when it rolls them up.
    const schemas = await readFile('examples/graphite/storage-schemas.conf', 'utf8');
    expect(/^retentions = (.*)$/m.exec(schemas)?.[1]).toBe(DEFAULTS.usageRetention);
    const aggregation = await readFile('examples/graphite/storage-aggregation.conf', 'utf8');
    expect(aggregation).toMatch(/^xFilesFactor = 0$/m);
    expect(aggregation).toMatch(/^aggregationMethod = sum$/m);
  });
});
