// Conformance: envoyproxy/ratelimit's own configuration tests (test/config/config_test.go), case
// by case. A file upstream refuses is refused by memgate's loader, naming the problem; a file
// upstream accepts loads, and what it changes in the answers is checked over gRPC against a real
// memgate counting in a real Memcached. Upstream's stat keys (its GetLimit's Stats.Key) are the
// names memgate sends to a statsd listener; memgate's own Prometheus events, one per configured
// descriptor, are checked beside them. The YAML fixtures are upstream's test/config/*.yaml, as
// they are; its inline Go configurations are written here as the YAML they stand for.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RlsClient, WireRequestIn, WireResponseOut, WireStatusOut } from '../../scripts/lib/rls-client.js';
import { parseEnvoyTexts, type EnvoyParseOptions } from '../../src/config/envoy-config.js';
import { envoyEventName } from '../../src/config/envoy-match.js';
import { PolicyError } from '../../src/config/policies.js';
import { envoyConfigFile, startEnvoyService, useEnvoyServices, type EnvoyService } from '../helpers/envoy-service.js';
import { createMemcachedStore } from '../../src/store/memcached/memcached-store.js';
import type { CounterStore } from '../../src/store/counter-store.js';
import { useMemcached } from '../helpers/memcached.js';
import { startStatsd, useStatsd, type StatsdServer } from './helpers-integration.js';

// --- upstream's fixtures (test/config/*.yaml) ---------------------------------------------------

const BASIC_CONFIG = `# Basic configuration for testing.
domain: test-domain
descriptors:
  # Top level key/value with no default rate limit.
  - key: key1
    value: value1
    descriptors:
      # 2nd level key only with default rate limit.
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5

      # 2nd level key/value with limit. Specific override at 2nd level.
      - key: subkey1
        value: subvalue1
        rate_limit:
          unit: second
          requests_per_unit: 10

  # Top level key only with default rate limit.
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20

  # Top level key/value with limit. Specific override at 1st level.
  - key: key2
    value: value2
    rate_limit:
      unit: minute
      requests_per_unit: 30

  # First level override with no limit. This effectively whitelists the value.
  - key: key2
    value: value3

  - key: key3
    rate_limit:
      unit: hour
      requests_per_unit: 1

  - key: key4
    rate_limit:
      name: key4_rate_limit
      unit: day
      requests_per_unit: 1

  - key: key5
    value: value5
    rate_limit:
      unit: day
      requests_per_unit: 15
    descriptors:
      - key: subkey5
        value: subvalue5
        rate_limit:
          unit: day
          requests_per_unit: 25

  - key: key6
    rate_limit:
      unlimited: true

  # Top level key only with default rate limit.

  - key: key7
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 70
`;

const MERGE_DOMAIN_KEY1 = `# Basic configuration which will be merged with \`merge_domain2.yaml\`
domain: test-domain
descriptors:
  # Top level key/value which is not specified in \`merge_domain2.yaml\`
  - key: key1
    value: value1
    rate_limit:
      unit: minute
      requests_per_unit: 10
`;

const MERGE_DOMAIN_KEY2 = `# Basic configuration which will be merged with \`merge_domain.yaml\`
domain: test-domain
descriptors:
  # Top level key/value which is not specified in \`merge_domain.yaml\`
  - key: key2
    value: value2
    rate_limit:
      unit: minute
      requests_per_unit: 20
`;

const EMPTY_DOMAIN = 'descriptors:\n';
const DUPLICATE_DOMAIN = 'domain: test-domain\ndescriptors:\n';
const EMPTY_KEY = 'domain: test-domain\ndescriptors:\n  - value: value1\n';
const DUPLICATE_KEY = `domain: test-domain
descriptors:
  - key: key1
    value: value1

  - key: key1
    value: value1
`;
const BAD_LIMIT_UNIT = `domain: test-domain
descriptors:
  - key: key1
    value: value1
    rate_limit:
      unit: foo
      requests_per_unit: 5
`;
const REPLACES_SELF = `domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit:
          name: self
          replaces:
            - name: self
          unit: second
          requests_per_unit: 5
`;
const REPLACES_EMPTY = `domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit:
          name: self
          replaces:
            - name:
          unit: second
          requests_per_unit: 5
`;
const BAD_YAML = "'''\n";
const MISSPELLED_KEY = `domain: test-domain
descriptors:
  - key: key1
    value: value1
    ratelimit:
      unit: day
      requests_per_unit: 5
`;
const MISSPELLED_KEY2 = `domain: test-domain
descriptors:
  - key: key1
    value: value1
    rate_limit:
      unit: day
      requestsperunit: 5
`;
const NON_STRING_KEY = `0.25: test-domain
descriptors:
  - key: key1
    value: value1
    rate_limit:
      unit: day
      requests_per_unit: 5
`;
const NON_MAP_LIST = 'domain: test-domain\ndescriptors:\n  - a\n  - b\n  - c\n';
const UNLIMITED_WITH_UNIT = `domain: test-domain
descriptors:
  - key: foo
    rate_limit:
      unlimited: true
      unit: day
      requests_per_unit: 25
`;

const SHADOWMODE_CONFIG = `# Basic configuration for testing.
domain: test-domain
descriptors:
  # Top level key/value with no default rate limit.
  - key: key1
    value: value1
    descriptors:
      # 2nd level key only with default rate limit.
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5

      # 2nd level key/value with limit. Specific override at 2nd level.
      - key: subkey1
        value: subvalue1
        rate_limit:
          unit: second
          requests_per_unit: 10
        shadow_mode: true

  # Top level key only with default rate limit.
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20
    shadow_mode: true
  # Top level key/value with limit. Specific override at 1st level.
  - key: key2
    value: value2
    rate_limit:
      unit: minute
      requests_per_unit: 30
`;

const WILDCARD = `# Basic configuration for testing.
domain: test-domain
descriptors:
  - key: wild
    value: foo*
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: noWild
    value: foo
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: noVal
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: midWild
    value: bar*b
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: multiWild
    value: foo*bar*baz
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: nestedWild
    value: val1
    descriptors:
      - key: wild
        value: goo*
        rate_limit:
          unit: minute
          requests_per_unit: 20
`;

const SHARE_THRESHOLD = `# Configuration for testing share_threshold feature
domain: test-domain
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: minute
      requests_per_unit: 100
  - key: nested
    value: parent
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit:
          unit: minute
          requests_per_unit: 200
  # Test case for nested descriptors with same key name at different levels
  - key: files
    value: top/*
    share_threshold: true
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit:
          unit: minute
          requests_per_unit: 300
  # Test case for share_threshold with value_to_metric
  - key: route
    value: api/*
    share_threshold: true
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit:
          unit: minute
          requests_per_unit: 60
  # Test case for share_threshold with detailed_metric
  - key: service
    value: svc/*
    share_threshold: true
    descriptors:
      - key: endpoint
        detailed_metric: true
        rate_limit:
          unit: minute
          requests_per_unit: 80
  # Test case for nested descriptors with multiple wildcards - mixed share_threshold
  - key: path
    value: path/*
    share_threshold: true
    descriptors:
      - key: file
        value: file/*
        share_threshold: false
        descriptors:
          - key: type
            rate_limit:
              unit: minute
              requests_per_unit: 120
  # Test case for nested descriptors with multiple wildcards - both with share_threshold
  - key: user
    value: user/*
    share_threshold: true
    descriptors:
      - key: resource
        value: res/*
        share_threshold: true
        descriptors:
          - key: action
            rate_limit:
              unit: minute
              requests_per_unit: 150
  # Test case: explicit value takes precedence over wildcard with share_threshold
  - key: file
    value: test1
    rate_limit:
      unit: minute
      requests_per_unit: 50
  - key: file
    value: test*
    share_threshold: true
    rate_limit:
      unit: minute
      requests_per_unit: 100
  # Test case: share_threshold with middle wildcard (single *)
  - key: midpath
    value: /api*v1
    share_threshold: true
    rate_limit:
      unit: minute
      requests_per_unit: 100
  # Test case: share_threshold with multi-wildcard (multiple *)
  - key: multiroute
    value: svc*ep*rpc
    share_threshold: true
    rate_limit:
      unit: minute
      requests_per_unit: 50
  # Test case: share_threshold with middle wildcard + value_to_metric (share_threshold takes priority)
  - key: midroute
    value: /api*v2
    share_threshold: true
    value_to_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 80
  # Test case: share_threshold with middle wildcard nested
  - key: tenant
    value: t*prod
    share_threshold: true
    descriptors:
      - key: resource
        value: res*v2
        share_threshold: true
        rate_limit:
          unit: minute
          requests_per_unit: 60
`;

const METADATA = `domain: test-domain
descriptors:
  # Top level key/value with no default rate limit.
  - key: key1
    value: value1
    descriptors:
      # 2nd level key only with default rate limit.
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5
        metadata:
          name: service_1

      # 2nd level key/value with limit. Specific override at 2nd level.
      - key: subkey1
        value: subvalue1
        rate_limit:
          unit: second
          requests_per_unit: 10

  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20
    metadata:
      service_with_quota:
        name: service_2
`;

// --- helpers ------------------------------------------------------------------------------------

const memcached = useMemcached();
// Before the services: they are closed first after a test (useStatsd).
const statsdServer = useStatsd();
const startService = useEnvoyServices(memcached, BASIC_CONFIG);

/** The settings sending upstream's statsd stats to `statsd`, a flush every 100 ms. */
const statsdEnv = (statsd: StatsdServer) => ({
  MEMGATE_STATSD: `127.0.0.1:${statsd.port}`,
  MEMGATE_STATSD_FLUSH_MS: '100',
});

/** A memgate serving `yaml` over gRPC, with upstream's environment variables `env`, sending its stats to a statsd of its own. */
async function serve(
  yaml: string,
  env: Record<string, string> = {},
): Promise<EnvoyService & { readonly statsd: StatsdServer }> {
  const statsd = await statsdServer();
  const service = await startService({ config: await envoyConfigFile(yaml), env: { ...statsdEnv(statsd), ...env } });
  return { ...service, statsd };
}

const TOTAL_HITS = /^ratelimit\.service\.rate_limit\.(.+)\.total_hits$/;

/**
 * Every stat key whose total_hits `statsd` received, with its total, once each of `expected`'s
 * has reached its total (5 s at most): upstream's Stats.Key as memgate names it.
 */
async function totalHits(statsd: StatsdServer, expected: Record<string, number>): Promise<Record<string, number>> {
  const read = () => {
    const found: Record<string, number> = {};
    for (const [name, value] of statsd.counters()) {
      const key = TOTAL_HITS.exec(name)?.[1];
      if (key !== undefined) found[key] = value;
    }
    return found;
  };
  for (let waited = 0; waited < 5_000; waited += 100) {
    const seen = read();
    if (Object.entries(expected).every(([key, hits]) => (seen[key] ?? 0) >= hits)) return seen;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return read();
}

/** A folder holding `files` (name → text), as upstream's runtime directory. */
async function folderOf(files: Record<string, string>): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'memgate-conformance-config-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(folder, name), text);
  return folder;
}

type Pair = readonly [string, string];

/** One descriptor of `pairs`, optionally with the call's hits_addend and a per-request limit. */
function request(
  domain: string,
  pairs: readonly Pair[],
  extra: { hits?: number; limit?: { requests_per_unit: number; unit: string } } = {},
): WireRequestIn {
  return {
    domain,
    descriptors: [
      { entries: pairs.map(([key, value]) => ({ key, value })), ...(extra.limit ? { limit: extra.limit } : {}) },
    ],
    ...(extra.hits === undefined ? {} : { hits_addend: extra.hits }),
  };
}

/** The status of a one-descriptor call. */
async function statusOf(
  client: RlsClient,
  domain: string,
  pairs: readonly Pair[],
  extra: Parameters<typeof request>[2] = {},
): Promise<WireStatusOut> {
  const answer = await client.shouldRateLimit(request(domain, pairs, extra));
  expect(answer.statuses).toHaveLength(1);
  return answer.statuses[0] as WireStatusOut;
}

/** What a call answers about a descriptor no limit matches: upstream's GetLimit returning nil. */
const NO_LIMIT = { code: 'OK', current_limit: null, limit_remaining: 0 };
/** An unlimited descriptor's status (docs/envoy.md, Protocol behaviours, `unlimited`: the same as upstream). */
const UNLIMITED = { code: 'OK', current_limit: null, limit_remaining: 4_294_967_295 };

/** The status of the first call on a fresh counter of a limit: the limit, one spent. */
function limited(requestsPerUnit: number, unit: string, name = ''): Partial<WireStatusOut> {
  return {
    code: 'OK',
    current_limit: { name, requests_per_unit: requestsPerUnit, unit },
    limit_remaining: requestsPerUnit - 1,
  };
}

/** The configured limit of a status, as upstream's rl.Limit. */
const limitOf = (status: WireStatusOut) => status.current_limit;

/**
 * The services' clock: their windows turn by the shared memcached's clock, which ticks in whole
 * seconds from memcached's own start, up to a second away from this host's (hundreds of ms
 * measured). A second's window timed by Date.now could end in the middle of the calls it was to hold.
 */
let clockStore: CounterStore | undefined;
afterAll(async () => {
  await clockStore?.close();
});
async function serviceNow(): Promise<number> {
  clockStore ??= createMemcachedStore({ servers: memcached().servers });
  const { clock } = clockStore;
  if (clock === undefined) return Date.now();
  await clock.ready();
  return clock.now('clock');
}

/** Resolves when at least `needMs` remain of the services' current fixed window of `seconds`. */
async function roomInWindow(seconds: number, needMs: number): Promise<void> {
  const left = seconds * 1000 - ((await serviceNow()) % (seconds * 1000));
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

/**
 * Before calls that must fall in one window of a minute or longer (epoch-aligned, so their
 * boundaries are whole minutes): at least 5 s of the current minute left.
 */
const steadyMinute = () => roomInWindow(60, 5000);

/** memgate_decisions_total of gRPC checks: event → outcome → count. */
async function decisions(url: string): Promise<Map<string, Record<string, number>>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const found = new Map<string, Record<string, number>>();
  for (const [, event, outcome, count] of text.matchAll(
    /^memgate_decisions_total\{event="([^"]*)",kind="check",outcome="([^"]*)"\} (\d+)$/gm,
  )) {
    const outcomes = found.get(event as string) ?? {};
    outcomes[outcome as string] = Number(count);
    found.set(event as string, outcomes);
  }
  return found;
}

/** The Envoy events memgate names in /metrics. */
async function eventsIn(url: string): Promise<string[]> {
  return [...(await decisions(url)).keys()].filter((event) => event.startsWith('envoy:')).sort();
}

/** The problems memgate's loader names for `files`, which it must refuse. */
function refusal(files: readonly (readonly [string, string])[], options: EnvoyParseOptions = {}): readonly string[] {
  try {
    parseEnvoyTexts(files, 'config', options);
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyError);
    return (error as PolicyError).problems;
  }
  throw new Error(`memgate loaded ${files.map(([name]) => name).join(', ')}, which upstream refuses`);
}

/** Loads `files` as memgate's loader does, which must accept them. */
function loads(files: readonly (readonly [string, string])[], options: EnvoyParseOptions = {}): void {
  expect(() => parseEnvoyTexts(files, 'config', options)).not.toThrow();
}

/** The gRPC status code of a call memgate refuses. */
async function grpcCodeOf(call: Promise<unknown>): Promise<number | undefined> {
  try {
    await call;
  } catch (error) {
    return (error as grpc.ServiceError).code;
  }
  return undefined;
}
const INVALID_ARGUMENT = 3;

// dynamic_metadata as grpc-js decodes a google.protobuf.Struct.
type ValueOut = {
  stringValue?: string;
  numberValue?: number;
  boolValue?: boolean;
  structValue?: StructOut;
  listValue?: { values: ValueOut[] };
};
type StructOut = { fields: Record<string, ValueOut> };
const plainValue = (value: ValueOut): unknown =>
  value.structValue
    ? plainStruct(value.structValue)
    : value.listValue
      ? value.listValue.values.map(plainValue)
      : (value.stringValue ?? value.numberValue ?? value.boolValue);
const plainStruct = (struct: StructOut | null | undefined): Record<string, unknown> | undefined =>
  struct
    ? Object.fromEntries(Object.entries(struct.fields).map(([key, value]) => [key, plainValue(value)]))
    : undefined;

// --- the tests ----------------------------------------------------------------------------------

describe('upstream test/config/config_test.go', () => {
  describe('files upstream accepts: their limits over gRPC', () => {
    it("TestBasicConfig: nested, key-only, whitelisted, named, unlimited and detailed_metric descriptors answer their limits, counted under upstream's stat names", async () => {
      loads([['basic_config.yaml', BASIC_CONFIG]]);
      const { client, url, statsd } = await serve(BASIC_CONFIG);
      const D = 'test-domain';
      // An unknown domain, and the domain's descriptors that reach no limit.
      expect(await statusOf(client, 'foo_domain', [['key1', 'value1']])).toMatchObject(NO_LIMIT);
      for (const pairs of [
        [['key1', 'something']],
        [['key1', 'value1']],
        [
          ['key2', 'value2'],
          ['subkey', 'subvalue'],
        ],
        [
          ['key5', 'value5'],
          ['subkey5', 'subvalue'],
        ],
        [['key2', 'value3']],
      ] as Pair[][]) {
        expect(await statusOf(client, D, pairs), JSON.stringify(pairs)).toMatchObject(NO_LIMIT);
      }
      // docs/envoy.md, Protocol behaviours, "a descriptor with no entries": INVALID_ARGUMENT where upstream finds no limit.
      expect(await grpcCodeOf(client.shouldRateLimit({ domain: D, descriptors: [{ entries: [] }] }))).toBe(
        INVALID_ARGUMENT,
      );

      await steadyMinute();
      expect(
        await statusOf(client, D, [
          ['key1', 'value1'],
          ['subkey1', 'something'],
        ]),
      ).toMatchObject(limited(5, 'SECOND'));
      expect(
        await statusOf(client, D, [
          ['key1', 'value1'],
          ['subkey1', 'subvalue1'],
        ]),
      ).toMatchObject(limited(10, 'SECOND'));
      expect(await statusOf(client, D, [['key2', 'something']])).toMatchObject(limited(20, 'MINUTE'));
      expect(await statusOf(client, D, [['key2', 'value2']])).toMatchObject(limited(30, 'MINUTE'));
      expect(await statusOf(client, D, [['key3', 'foo']])).toMatchObject(limited(1, 'HOUR', ''));
      expect(await statusOf(client, D, [['key4', 'foo']])).toMatchObject(limited(1, 'DAY', 'key4_rate_limit'));
      expect(await statusOf(client, D, [['key6', 'foo']])).toMatchObject(UNLIMITED);
      expect(await statusOf(client, D, [['key7', 'unspecified_value']])).toMatchObject(limited(70, 'MINUTE'));
      expect(await statusOf(client, D, [['key7', 'another_value']])).toMatchObject(limited(70, 'MINUTE'));
      // The limits hold: key3's one request an hour is spent.
      expect(await statusOf(client, D, [['key3', 'foo']])).toMatchObject({ code: 'OVER_LIMIT', limit_remaining: 0 });

      // Stats: upstream's keys, the configured path but for key7's detailed_metric, which names the value;
      // nothing for the unlimited key6, nor for what no limit matched but the unknown domain.
      const hits = {
        'test-domain.key1_value1.subkey1': 1,
        'test-domain.key1_value1.subkey1_subvalue1': 1,
        'test-domain.key2': 1,
        'test-domain.key2_value2': 1,
        'test-domain.key3': 2,
        'test-domain.key4': 1,
        'test-domain.key7_unspecified_value': 1,
        'test-domain.key7_another_value': 1,
      };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      expect(statsd.counter('ratelimit.service.rate_limit.test-domain.key3.over_limit')).toBe(1);
      expect(statsd.counter('ratelimit.service.rate_limit.foo_domain.domain_not_found')).toBe(1);
      expect(statsd.counter('ratelimit.service.rate_limit.test-domain.domain_not_found')).toBe(0);
      // memgate_decisions_total's outcomes allowed and denied, of the event envoy:test-domain.<path>.
      const seen = await decisions(url);
      expect(seen.get('envoy:test-domain.key1_value1.subkey1')).toEqual({ allowed: 1 });
      expect(seen.get('envoy:test-domain.key1_value1.subkey1_subvalue1')).toEqual({ allowed: 1 });
      expect(seen.get('envoy:test-domain.key2')).toEqual({ allowed: 1 });
      expect(seen.get('envoy:test-domain.key2_value2')).toEqual({ allowed: 1 });
      expect(seen.get('envoy:test-domain.key3')).toEqual({ allowed: 1, denied: 1 });
      expect(seen.get('envoy:test-domain.key4')).toEqual({ allowed: 1 });
      // docs/envoy.md, Configuration file, `detailed_metric`: statsd names each value; memgate's event is one for both.
      expect(seen.get('envoy:test-domain.key7')).toEqual({ allowed: 2 });
      // Nothing is counted for what no limit matched, nor for the unlimited key6.

      expect(await eventsIn(url)).toEqual([
        'envoy:test-domain.key1_value1.subkey1',
        'envoy:test-domain.key1_value1.subkey1_subvalue1',
        'envoy:test-domain.key2',
        'envoy:test-domain.key2_value2',
        'envoy:test-domain.key3',
        'envoy:test-domain.key4',
        'envoy:test-domain.key7',
      ]);
    });

    it('TestDomainMerge: with MERGE_DOMAIN_CONFIG=true the two files of one domain are one domain', async () => {
      loads(
        [
          ['merge_domain_key1.yaml', MERGE_DOMAIN_KEY1],
          ['merge_domain_key2.yaml', MERGE_DOMAIN_KEY2],
        ],
        { mergeDomains: true },
      );
      const config = await folderOf({
        'merge_domain_key1.yaml': MERGE_DOMAIN_KEY1,
        'merge_domain_key2.yaml': MERGE_DOMAIN_KEY2,
      });
      const { client } = await startService({ config, env: { MERGE_DOMAIN_CONFIG: 'true' } });
      expect(await statusOf(client, 'foo_domain', [['key1', 'value1']])).toMatchObject(NO_LIMIT);
      // docs/envoy.md, Protocol behaviours, "a descriptor with no entries": INVALID_ARGUMENT where upstream finds no limit.
      expect(await grpcCodeOf(client.shouldRateLimit({ domain: 'test-domain', descriptors: [{ entries: [] }] }))).toBe(
        INVALID_ARGUMENT,
      );
      expect(await statusOf(client, 'test-domain', [['key1', 'value1']])).toMatchObject(limited(10, 'MINUTE'));
      expect(await statusOf(client, 'test-domain', [['key2', 'value2']])).toMatchObject(limited(20, 'MINUTE'));
    });

    it("TestConfigLimitOverride: a per-request limit replaces the file's, each value of the key counted apart", async () => {
      const { client, url, statsd } = await serve(BASIC_CONFIG);
      const D = 'test-domain';
      const day = { requests_per_unit: 10, unit: 'DAY' };
      const hour = { requests_per_unit: 42, unit: 'HOUR' };
      // An unknown domain: no limit, the override included.
      expect(await statusOf(client, 'foo_domain', [['key1', 'value1']], { limit: day })).toMatchObject(NO_LIMIT);
      const something: Pair[] = [
        ['key1', 'value1'],
        ['subkey1', 'something'],
      ];
      await steadyMinute();
      const first = await statusOf(client, D, something, { limit: day });
      expect(limitOf(first)).toEqual({ name: '', ...day });
      expect(first.limit_remaining).toBe(9);
      // A change of the override's value applies at once.
      const second = await statusOf(client, D, something, { limit: hour });
      expect(limitOf(second)).toEqual({ name: '', ...hour });
      const third = await statusOf(client, D, something, { limit: hour });
      expect(third.limit_remaining).toBe(second.limit_remaining - 1);
      // Another value of subkey1 has a counter of its own.
      const other = await statusOf(
        client,
        D,
        [
          ['key1', 'value1'],
          ['subkey1', 'something_else'],
        ],
        { limit: hour },
      );
      expect(limitOf(other)).toEqual({ name: '', ...hour });
      expect(other.limit_remaining).toBe(41);
      // Stats: upstream names an override by the request's entries (its descriptorKey).
      const hits = {
        'test-domain.key1_value1.subkey1_something': 3,
        'test-domain.key1_value1.subkey1_something_else': 1,
      };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      // memgate counts an override on the matched descriptor's event.
      const seen = await decisions(url);

      expect(seen.get('envoy:test-domain.key1_value1.subkey1')).toEqual({ allowed: 4 });
    });

    it('TestShadowModeConfig: shadow_mode descriptors answer OK past their limit; the others are enforced', async () => {
      loads([['shadowmode_config.yaml', SHADOWMODE_CONFIG]]);
      const { client, url, statsd } = await serve(SHADOWMODE_CONFIG);
      const D = 'test-domain';
      const subkey: Pair[] = [
        ['key1', 'value1'],
        ['subkey1', 'something'],
      ];
      const subvalue: Pair[] = [
        ['key1', 'value1'],
        ['subkey1', 'subvalue1'],
      ];
      // Each limit filled in one call, then asked once more, in the same window.
      await roomInWindow(1, 600);
      expect(await statusOf(client, D, subkey, { hits: 5 })).toMatchObject({
        code: 'OK',
        current_limit: { requests_per_unit: 5, unit: 'SECOND' },
      });
      expect((await client.shouldRateLimit(request(D, subkey))).overall_code).toBe('OVER_LIMIT');
      await roomInWindow(1, 600);
      expect(await statusOf(client, D, subvalue, { hits: 10 })).toMatchObject({
        code: 'OK',
        current_limit: { requests_per_unit: 10, unit: 'SECOND' },
      });
      const subvalueOver = await client.shouldRateLimit(request(D, subvalue));
      expect([subvalueOver.overall_code, subvalueOver.statuses[0]?.code]).toEqual(['OK', 'OK']);

      await steadyMinute();
      expect(await statusOf(client, D, [['key2', 'something']], { hits: 20 })).toMatchObject({
        code: 'OK',
        current_limit: { requests_per_unit: 20, unit: 'MINUTE' },
      });
      const key2Over = await client.shouldRateLimit(request(D, [['key2', 'something']]));
      expect([key2Over.overall_code, key2Over.statuses[0]?.code]).toEqual(['OK', 'OK']);
      expect(await statusOf(client, D, [['key2', 'value2']], { hits: 30 })).toMatchObject({
        code: 'OK',
        current_limit: { requests_per_unit: 30, unit: 'MINUTE' },
      });
      expect((await client.shouldRateLimit(request(D, [['key2', 'value2']]))).overall_code).toBe('OVER_LIMIT');

      // Stats: the hit past a shadow limit is over_limit and shadow_mode; past an enforced one, over_limit only.
      const hits = {
        'test-domain.key1_value1.subkey1': 6,
        'test-domain.key1_value1.subkey1_subvalue1': 11,
        'test-domain.key2': 21,
        'test-domain.key2_value2': 31,
      };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      const stat = (key: string, name: string) =>
        statsd.counter(`ratelimit.service.rate_limit.test-domain.${key}.${name}`);
      expect(
        Object.keys(hits).map((key) => {
          const path = key.slice('test-domain.'.length);
          return [path, stat(path, 'over_limit'), stat(path, 'shadow_mode')];
        }),
      ).toEqual([
        ['key1_value1.subkey1', 1, 0],
        ['key1_value1.subkey1_subvalue1', 1, 1],
        ['key2', 1, 1],
        ['key2_value2', 1, 0],
      ]);
      // Upstream's <stat key>.shadow_mode is memgate_envoy_shadow_over_limit_total{event} too, and the
      // outcome shadow_denied of memgate_decisions_total; the enforced limits have none.
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain(
        'memgate_envoy_shadow_over_limit_total{event="envoy:test-domain.key1_value1.subkey1_subvalue1"} 1',
      );
      expect(metrics).toContain('memgate_envoy_shadow_over_limit_total{event="envoy:test-domain.key2"} 1');
      expect(metrics).not.toContain(
        'memgate_envoy_shadow_over_limit_total{event="envoy:test-domain.key1_value1.subkey1"}',
      );
      expect(metrics).not.toContain('memgate_envoy_shadow_over_limit_total{event="envoy:test-domain.key2_value2"}');
      const seen = await decisions(url);
      expect(seen.get('envoy:test-domain.key1_value1.subkey1')).toEqual({ allowed: 1, denied: 1 });
      expect(seen.get('envoy:test-domain.key2')).toEqual({ allowed: 1, shadow_denied: 1 });
    });

    it('TestWildcardConfig: trailing, middle and multiple wildcards match as upstream, each value counted apart', async () => {
      loads([['wildcard.yaml', WILDCARD]]);
      const { client, url, statsd } = await serve(WILDCARD);
      const D = 'test-domain';
      // A key-only descriptor: every value gets the limit, on a counter of its own.
      expect(await statusOf(client, D, [['noVal', 'foo1']])).toMatchObject(limited(20, 'MINUTE'));
      expect(await statusOf(client, D, [['noVal', 'foo2']])).toMatchObject(limited(20, 'MINUTE'));
      // A wildcard works as the key alone: the same limit for every matching value, each counted apart
      // (no share_threshold).
      expect(await statusOf(client, D, [['wild', 'foo1']])).toMatchObject(limited(20, 'MINUTE'));
      expect(await statusOf(client, D, [['wild', 'foo2']])).toMatchObject(limited(20, 'MINUTE'));
      expect(
        await statusOf(client, D, [
          ['nestedWild', 'val1'],
          ['wild', 'goo2'],
        ]),
      ).toMatchObject(limited(20, 'MINUTE'));
      expect(await statusOf(client, D, [['wild', 'bar']])).toMatchObject(NO_LIMIT);
      // A value without a wildcard matches only itself.
      expect(await statusOf(client, D, [['noWild', 'foo1']])).toMatchObject(NO_LIMIT);
      // bar*b: a prefix and a suffix, the middle possibly empty.
      expect(await statusOf(client, D, [['midWild', 'barab']])).toMatchObject(limited(20, 'MINUTE'));
      expect(await statusOf(client, D, [['midWild', 'bar123b']])).toMatchObject(limited(20, 'MINUTE'));
      expect(await statusOf(client, D, [['midWild', 'barb']])).toMatchObject(limited(20, 'MINUTE'));
      expect(await statusOf(client, D, [['midWild', 'bara']])).toMatchObject(NO_LIMIT);
      expect(await statusOf(client, D, [['midWild', 'xbarb']])).toMatchObject(NO_LIMIT);
      // foo*bar*baz: every part, in order.
      expect(await statusOf(client, D, [['multiWild', 'foo123bar456baz']])).toMatchObject(limited(10, 'MINUTE'));
      expect(await statusOf(client, D, [['multiWild', 'foobarbaz']])).toMatchObject(limited(10, 'MINUTE'));
      expect(await statusOf(client, D, [['multiWild', 'foo123baz']])).toMatchObject(NO_LIMIT);
      expect(await statusOf(client, D, [['multiWild', 'bar456baz']])).toMatchObject(NO_LIMIT);

      // Stats: upstream names every match of a wildcard by its pattern, and a key-only one by its key.
      const hits = {
        'test-domain.noVal': 2,
        'test-domain.wild_foo*': 2,
        'test-domain.nestedWild_val1.wild_goo*': 1,
        'test-domain.midWild_bar*b': 3,
        'test-domain.multiWild_foo*bar*baz': 2,
      };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      // memgate has one event per pattern too; docs/envoy.md, "How a call is decided": a name with `*`
      // gets a readable head and a hash.
      const seen = await decisions(url);

      expect(seen.get('envoy:test-domain.noVal')).toEqual({ allowed: 2 });
      expect(seen.get(envoyEventName(D, ['wild_foo*']))).toEqual({ allowed: 2 });
      expect(seen.get(envoyEventName(D, ['nestedWild_val1', 'wild_goo*']))).toEqual({ allowed: 1 });
      expect(seen.get(envoyEventName(D, ['midWild_bar*b']))).toEqual({ allowed: 3 });
      expect(seen.get(envoyEventName(D, ['multiWild_foo*bar*baz']))).toEqual({ allowed: 2 });
      expect(envoyEventName(D, ['wild_foo*'])).toMatch(/^envoy:test-domain\.wild_foo_-h[0-9a-f]{20}$/);
    });

    it("TestMetadata: with RESPONSE_DYNAMIC_METADATA the matched descriptor's metadata is in the answer", async () => {
      loads([['metadata.yaml', METADATA]]);
      const { client } = await serve(METADATA, { RESPONSE_DYNAMIC_METADATA: 'true' });
      const D = 'test-domain';
      // docs/envoy.md, Protocol behaviours, "a descriptor with no entries": INVALID_ARGUMENT where upstream finds no limit.
      expect(await grpcCodeOf(client.shouldRateLimit({ domain: D, descriptors: [{ entries: [] }] }))).toBe(
        INVALID_ARGUMENT,
      );
      const first = (await client.shouldRateLimit(
        request(D, [
          ['key1', 'value1'],
          ['subkey1', 'something'],
        ]),
      )) as WireResponseOut & {
        dynamic_metadata?: StructOut | null;
      };
      expect(first.statuses[0]).toMatchObject(limited(5, 'SECOND'));
      expect(plainStruct(first.dynamic_metadata)?.metadata).toEqual({ name: 'service_1' });
      const second = (await client.shouldRateLimit(request(D, [['key2', 'something']]))) as WireResponseOut & {
        dynamic_metadata?: StructOut | null;
      };
      expect(second.statuses[0]).toMatchObject(limited(20, 'MINUTE'));
      expect(plainStruct(second.dynamic_metadata)?.metadata).toEqual({ service_with_quota: { name: 'service_2' } });
      // The descriptor without metadata adds none.
      const third = (await client.shouldRateLimit(
        request(D, [
          ['key1', 'value1'],
          ['subkey1', 'subvalue1'],
        ]),
      )) as WireResponseOut & {
        dynamic_metadata?: StructOut | null;
      };
      expect(third.statuses[0]).toMatchObject(limited(10, 'SECOND'));
      expect(plainStruct(third.dynamic_metadata)?.metadata).toBeUndefined();
    });
  });

  describe('TestShareThreshold (share_threshold.yaml)', () => {
    // One service and statsd for every scenario: each asks about keys and values of its own, and
    // reads the stat keys of its own.
    let shared: (EnvoyService & { readonly statsd: StatsdServer }) | undefined;
    beforeAll(async () => {
      loads([['share_threshold.yaml', SHARE_THRESHOLD]]);
      const statsd = await startStatsd();
      const config = await envoyConfigFile(SHARE_THRESHOLD);
      shared = { ...(await startEnvoyService(memcached(), { config, env: statsdEnv(statsd) })), statsd };
    });
    afterAll(async () => {
      shared?.client.close();
      await shared?.service.close();
      await shared?.statsd.close();
    });
    /** The service, with a minute of room for the scenario's counts. */
    const sharedService = async (): Promise<EnvoyService & { readonly statsd: StatsdServer }> => {
      await steadyMinute();
      if (!shared) throw new Error('the share_threshold.yaml service did not start');
      return shared;
    };
    /** Upstream's Stats.Key of the scenario's calls, each with its hits, among what statsd received. */
    const expectStats = async (statsd: StatsdServer, hits: Record<string, number>) => {
      expect(await totalHits(statsd, hits)).toMatchObject(hits);
    };

    it('TestShareThreshold: Basic share_threshold: values matching files/* share one counter of 100', async () => {
      const { client, url, statsd } = await sharedService();
      const remaining: number[] = [];
      for (const value of ['files/a.pdf', 'files/b.csv', 'files/c.txt']) {
        const status = await statusOf(client, 'test-domain', [['files', value]]);
        expect(limitOf(status)).toMatchObject({ requests_per_unit: 100, unit: 'MINUTE' });
        remaining.push(status.limit_remaining);
      }
      expect(remaining).toEqual([99, 98, 97]);
      // Upstream's stat test-domain.files_files/* for all three; memgate one event for the pattern too
      // (docs/envoy.md, "How a call is decided": a readable head and a hash).
      await expectStats(statsd, { 'test-domain.files_files/*': 3 });
      expect((await decisions(url)).get(envoyEventName('test-domain', ['files_files/*']))).toEqual({ allowed: 3 });
    });

    it('TestShareThreshold: share_threshold with metrics: the shared parent with value_to_metric or detailed_metric children', async () => {
      const { client, url, statsd } = await sharedService();
      const D = 'test-domain';
      // route api/* is shared; method is a key alone, a counter per method.
      const get1 = await statusOf(client, D, [
        ['route', 'api/v1'],
        ['method', 'GET'],
      ]);
      expect(get1).toMatchObject(limited(60, 'MINUTE'));
      expect(
        (
          await statusOf(client, D, [
            ['route', 'api/v2'],
            ['method', 'GET'],
          ])
        ).limit_remaining,
      ).toBe(58);
      expect(
        (
          await statusOf(client, D, [
            ['route', 'api/v1'],
            ['method', 'POST'],
          ])
        ).limit_remaining,
      ).toBe(59);
      // service svc/* is shared; endpoint a counter per endpoint.
      expect(
        await statusOf(client, D, [
          ['service', 'svc/user'],
          ['endpoint', 'get'],
        ]),
      ).toMatchObject(limited(80, 'MINUTE'));
      expect(
        (
          await statusOf(client, D, [
            ['service', 'svc/order'],
            ['endpoint', 'get'],
          ])
        ).limit_remaining,
      ).toBe(78);
      // share_threshold takes priority over value_to_metric and detailed_metric: the pattern, not the value.
      await expectStats(statsd, { 'test-domain.route_api/*.method': 3, 'test-domain.service_svc/*.endpoint_get': 2 });
      // memgate's events: one per configured path.
      const seen = await decisions(url);
      expect(seen.get(envoyEventName(D, ['route_api/*', 'method']))).toEqual({ allowed: 3 });
      expect(seen.get(envoyEventName(D, ['service_svc/*', 'endpoint']))).toEqual({ allowed: 2 });
    });

    it('TestShareThreshold: Nested wildcards: each shared level shares, a level without share_threshold counts per value', async () => {
      const { client, statsd } = await sharedService();
      const D = 'test-domain';
      // nested=parent, files nested/*: 200, shared.
      expect(
        await statusOf(client, D, [
          ['nested', 'parent'],
          ['files', 'nested/file1.txt'],
        ]),
      ).toMatchObject(limited(200, 'MINUTE'));
      expect(
        (
          await statusOf(client, D, [
            ['nested', 'parent'],
            ['files', 'nested/file2.txt'],
          ])
        ).limit_remaining,
      ).toBe(198);
      // files top/* then files nested/*: 300, both shared.
      expect(
        await statusOf(client, D, [
          ['files', 'top/file1.txt'],
          ['files', 'nested/file1.txt'],
        ]),
      ).toMatchObject(limited(300, 'MINUTE'));
      expect(
        (
          await statusOf(client, D, [
            ['files', 'top/x'],
            ['files', 'nested/y'],
          ])
        ).limit_remaining,
      ).toBe(298);
      // path/* shared, file/* not (share_threshold: false), type a key alone.
      const doc1: Pair[] = [
        ['path', 'path/foo'],
        ['file', 'file/doc1'],
        ['type', 'pdf'],
      ];
      expect(await statusOf(client, D, doc1)).toMatchObject(limited(120, 'MINUTE'));
      expect(
        (
          await statusOf(client, D, [
            ['path', 'path/bar'],
            ['file', 'file/doc1'],
            ['type', 'pdf'],
          ])
        ).limit_remaining,
      ).toBe(118);
      expect(
        (
          await statusOf(client, D, [
            ['path', 'path/foo'],
            ['file', 'file/doc2'],
            ['type', 'pdf'],
          ])
        ).limit_remaining,
      ).toBe(119);
      // user/* and res/* both shared, action a key alone.
      expect(
        await statusOf(client, D, [
          ['user', 'user/alice'],
          ['resource', 'res/file1'],
          ['action', 'read'],
        ]),
      ).toMatchObject(limited(150, 'MINUTE'));
      expect(
        (
          await statusOf(client, D, [
            ['user', 'user/bob'],
            ['resource', 'res/file2'],
            ['action', 'read'],
          ])
        ).limit_remaining,
      ).toBe(148);
      expect(
        (
          await statusOf(client, D, [
            ['user', 'user/bob'],
            ['resource', 'res/file2'],
            ['action', 'write'],
          ])
        ).limit_remaining,
      ).toBe(149);
      // A level without share_threshold keeps its pattern too; a key alone is its key.
      await expectStats(statsd, {
        'test-domain.nested_parent.files_nested/*': 2,
        'test-domain.files_top/*.files_nested/*': 2,
        'test-domain.path_path/*.file_file/*.type': 3,
        'test-domain.user_user/*.resource_res/*.action': 3,
      });
    });

    it('TestShareThreshold: Explicit value precedence over wildcard: file=test1 has its own 50, test* values share 100', async () => {
      const { client, url, statsd } = await sharedService();
      const D = 'test-domain';
      expect(await statusOf(client, D, [['file', 'test1']])).toMatchObject(limited(50, 'MINUTE'));
      const remaining: number[] = [];
      for (const value of ['test2', 'test23', 'test123']) {
        const status = await statusOf(client, D, [['file', value]]);
        expect(limitOf(status)).toMatchObject({ requests_per_unit: 100, unit: 'MINUTE' });
        remaining.push(status.limit_remaining);
      }
      expect(remaining).toEqual([99, 98, 97]);
      expect((await statusOf(client, D, [['file', 'test1']])).limit_remaining).toBe(48);
      // Upstream: test-domain.file_test1 apart from test-domain.file_test*.
      await expectStats(statsd, { 'test-domain.file_test1': 2, 'test-domain.file_test*': 3 });
      const seen = await decisions(url);
      expect(seen.get('envoy:test-domain.file_test1')).toEqual({ allowed: 2 });
      expect(seen.get(envoyEventName(D, ['file_test*']))).toEqual({ allowed: 3 });
    });

    it('TestShareThreshold: share_threshold with middle wildcard: /api*v1 values share 100, /api/v2 matches nothing', async () => {
      const { client, statsd } = await sharedService();
      const remaining: number[] = [];
      for (const value of ['/api/v1', '/api-beta-v1', '/apiXYZv1']) {
        const status = await statusOf(client, 'test-domain', [['midpath', value]]);
        expect(limitOf(status)).toMatchObject({ requests_per_unit: 100, unit: 'MINUTE' });
        remaining.push(status.limit_remaining);
      }
      expect(remaining).toEqual([99, 98, 97]);
      expect(await statusOf(client, 'test-domain', [['midpath', '/api/v2']])).toMatchObject(NO_LIMIT);
      await expectStats(statsd, { 'test-domain.midpath_/api*v1': 3 });
    });

    it('TestShareThreshold: share_threshold with multi-wildcard: svc*ep*rpc values share 50, svcABCrpc matches nothing', async () => {
      const { client, statsd } = await sharedService();
      const remaining: number[] = [];
      for (const value of ['svcAepBrpc', 'svcXXXepYYYrpc', 'svceprpc']) {
        const status = await statusOf(client, 'test-domain', [['multiroute', value]]);
        expect(limitOf(status)).toMatchObject({ requests_per_unit: 50, unit: 'MINUTE' });
        remaining.push(status.limit_remaining);
      }
      expect(remaining).toEqual([49, 48, 47]);
      expect(await statusOf(client, 'test-domain', [['multiroute', 'svcABCrpc']])).toMatchObject(NO_LIMIT);
      await expectStats(statsd, { 'test-domain.multiroute_svc*ep*rpc': 3 });
    });

    it('TestShareThreshold: share_threshold priority over value_to_metric with middle wildcard: /api*v2 values share 80', async () => {
      const { client, url, statsd } = await sharedService();
      expect(await statusOf(client, 'test-domain', [['midroute', '/api/v2']])).toMatchObject(limited(80, 'MINUTE'));
      expect((await statusOf(client, 'test-domain', [['midroute', '/api-beta-v2']])).limit_remaining).toBe(78);
      await expectStats(statsd, { 'test-domain.midroute_/api*v2': 2 });
      expect((await decisions(url)).get(envoyEventName('test-domain', ['midroute_/api*v2']))).toEqual({ allowed: 2 });
    });

    it('TestShareThreshold: share_threshold with nested middle wildcards: t*prod and res*v2 share 60', async () => {
      const { client, statsd } = await sharedService();

      expect(
        await statusOf(client, 'test-domain', [
          ['tenant', 't1prod'],
          ['resource', 'resAv2'],
        ]),
      ).toMatchObject(limited(60, 'MINUTE'));
      expect(
        (
          await statusOf(client, 'test-domain', [
            ['tenant', 't99prod'],
            ['resource', 'resBBBv2'],
          ])
        ).limit_remaining,
      ).toBe(58);
      await expectStats(statsd, { 'test-domain.tenant_t*prod.resource_res*v2': 2 });
    });
  });

  describe('stat names: detailed_metric and value_to_metric (TestDetailedMetric, TestValueToMetric_*)', () => {
    // docs/envoy.md, statsd: the stat key is upstream's, values included where detailed_metric and
    // value_to_metric put them; memgate's own events keep one per configured descriptor path. Each
    // case checks that the file loads, that its limit answers, the stat key statsd receives (the
    // Stats.Key upstream's test expects) and the event memgate names in /metrics.

    /** key-1 (100 a minute) over key-2 (5 a minute), each with detailed_metric or not. */
    const nested = (outer: boolean, inner: boolean) => `domain: nested
descriptors:
  - key: key-1
    detailed_metric: ${outer}
    rate_limit: { requests_per_unit: 100, unit: minute }
    descriptors:
      - key: key-2
        detailed_metric: ${inner}
        rate_limit: { requests_per_unit: 5, unit: minute }
`;
    const detailedCases: {
      name: string;
      yaml: string;
      pairs: Pair[];
      limit: number;
      upstream: string;
      event: string;
    }[] = [
      {
        name: 'nested with no values but request only top-level key',
        yaml: nested(true, false),
        pairs: [['key-1', 'value-1']],
        limit: 100,
        upstream: 'nested.key-1_value-1',
        event: 'envoy:nested.key-1',
      },
      {
        name: 'nested with no values but request only top-level key with no detailed metric',
        yaml: nested(false, false),
        pairs: [['key-1', 'value-1']],
        limit: 100,
        upstream: 'nested.key-1',
        event: 'envoy:nested.key-1',
      },
      {
        name: 'nested with no values and request fully nested descriptors',
        yaml: nested(true, true),
        pairs: [
          ['key-1', 'value-1'],
          ['key-2', 'value-2'],
        ],
        limit: 5,
        upstream: 'nested.key-1_value-1.key-2_value-2',
        event: 'envoy:nested.key-1.key-2',
      },
      {
        name: 'nested with no values and request fully nested descriptors with no detailed metric',
        yaml: nested(false, false),
        pairs: [
          ['key-1', 'value-1'],
          ['key-2', 'value-2'],
        ],
        limit: 5,
        upstream: 'nested.key-1.key-2',
        event: 'envoy:nested.key-1.key-2',
      },
    ];
    for (const { name, yaml, pairs, limit, upstream, event } of detailedCases) {
      it(`TestDetailedMetric: ${name} (upstream's stat ${upstream})`, async () => {
        const { client, url, statsd } = await serve(yaml);
        expect(await statusOf(client, 'nested', pairs)).toMatchObject(limited(limit, 'MINUTE'));
        expect(await totalHits(statsd, { [upstream]: 1 })).toEqual({ [upstream]: 1 });
        expect(await eventsIn(url)).toEqual([event]);
      });
    }

    it('TestDetailedMetric: test nested descriptors with simple request, only second descriptor request not nested, with nested request (the realistic configuration)', async () => {
      const { client, url, statsd } = await serve(`domain: nested
descriptors:
  - key: key_1
    detailed_metric: true
    rate_limit: { requests_per_unit: 500, unit: minute }
  - key: key_1
    value: some-value-for-key-1
    rate_limit: { requests_per_unit: 500, unit: minute }
  - key: key_2
    detailed_metric: true
    rate_limit: { requests_per_unit: 5000, unit: minute }
    descriptors:
      - key: key_3
        detailed_metric: true
      - key: key_3
        value: requested-key3-value
        detailed_metric: true
        rate_limit: { requests_per_unit: 5, unit: minute }
  - key: key_2
    value: specific-id
    detailed_metric: true
    rate_limit: { requests_per_unit: 50000, unit: minute }
    descriptors:
      - key: key_3
        detailed_metric: true
      - key: key_3
        value: requested-key3-value
        detailed_metric: true
        rate_limit: { requests_per_unit: 100, unit: minute }
`);
      expect(await statusOf(client, 'nested', [['key_1', 'value-for-key-1']])).toMatchObject(limited(500, 'MINUTE'));
      expect(await statusOf(client, 'nested', [['key_2', 'key-2-value']])).toMatchObject(limited(5000, 'MINUTE'));
      expect(
        await statusOf(client, 'nested', [
          ['key_2', 'key-2-value'],
          ['key_3', 'requested-key3-value'],
        ]),
      ).toMatchObject(limited(5, 'MINUTE'));
      const hits = {
        'nested.key_1_value-for-key-1': 1,
        'nested.key_2_key-2-value': 1,
        'nested.key_2_key-2-value.key_3_requested-key3-value': 1,
      };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      expect(await eventsIn(url)).toEqual([
        'envoy:nested.key_1',
        'envoy:nested.key_2',
        'envoy:nested.key_2.key_3_requested-key3-value',
      ]);
    });

    /** route (value_to_metric) → http_method (value_to_metric) → subject_id: 60 a minute. */
    const ROUTE_METHOD_SUBJECT = (domain: string, leaf = '') => `domain: ${domain}
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id${leaf}
            rate_limit: { requests_per_unit: 60, unit: minute }
`;
    const drawGet123: Pair[] = [
      ['route', 'draw'],
      ['http_method', 'GET'],
      ['subject_id', '123'],
    ];

    it("TestValueToMetric_UsesRuntimeValuesInStats: the values of the value_to_metric keys are in the stat's name", async () => {
      const { client, url, statsd } = await serve(ROUTE_METHOD_SUBJECT('domain'));
      expect(await statusOf(client, 'domain', drawGet123)).toMatchObject(limited(60, 'MINUTE'));
      const hits = { 'domain.route_draw.http_method_GET.subject_id': 1 };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      expect(
        statsd.counter('ratelimit.service.rate_limit.domain.route_draw.http_method_GET.subject_id.within_limit'),
      ).toBe(1);
      // memgate's event names the configured path.
      expect((await decisions(url)).get('envoy:domain.route.http_method.subject_id')).toEqual({ allowed: 1 });
    });

    it('TestValueToMetric_DefaultKeyIncludesValueAtThatLevel: value_to_metric on the top key (upstream: d.k1_A.k2)', async () => {
      const { client, url, statsd } = await serve(`domain: d
descriptors:
  - key: k1
    value_to_metric: true
    descriptors:
      - key: k2
        rate_limit: { requests_per_unit: 1, unit: second }
`);
      expect(
        await statusOf(client, 'd', [
          ['k1', 'A'],
          ['k2', 'foo'],
        ]),
      ).toMatchObject(limited(1, 'SECOND'));
      expect(await totalHits(statsd, { 'd.k1_A.k2': 1 })).toEqual({ 'd.k1_A.k2': 1 });
      expect(await eventsIn(url)).toEqual(['envoy:d.k1.k2']);
    });

    it('TestValueToMetric_MidLevelOnly: value_to_metric on the middle key only (upstream: d.k1.k2_Y.k3)', async () => {
      const { client, url, statsd } = await serve(`domain: d
descriptors:
  - key: k1
    descriptors:
      - key: k2
        value_to_metric: true
        descriptors:
          - key: k3
            rate_limit: { requests_per_unit: 1, unit: second }
`);
      expect(
        await statusOf(client, 'd', [
          ['k1', 'X'],
          ['k2', 'Y'],
          ['k3', 'Z'],
        ]),
      ).toMatchObject(limited(1, 'SECOND'));
      expect(await totalHits(statsd, { 'd.k1.k2_Y.k3': 1 })).toEqual({ 'd.k1.k2_Y.k3': 1 });
      expect(await eventsIn(url)).toEqual(['envoy:d.k1.k2.k3']);
    });

    it('TestValueToMetric_NoFlag_Unchanged: without flags the stat is the configured path (upstream: d.k1.k2)', async () => {
      const { client, url, statsd } = await serve(`domain: d
descriptors:
  - key: k1
    descriptors:
      - key: k2
        rate_limit: { requests_per_unit: 1, unit: second }
`);
      expect(
        await statusOf(client, 'd', [
          ['k1', 'X'],
          ['k2', 'Y'],
        ]),
      ).toMatchObject(limited(1, 'SECOND'));
      expect(await totalHits(statsd, { 'd.k1.k2': 1 })).toEqual({ 'd.k1.k2': 1 });
      expect(await eventsIn(url)).toEqual(['envoy:d.k1.k2']);
    });

    it('TestValueToMetric_DoesNotOverrideDetailedMetric: detailed_metric at the leaf under value_to_metric keys names every value', async () => {
      const { client, url, statsd } = await serve(
        ROUTE_METHOD_SUBJECT('domain', '\n            detailed_metric: true'),
      );
      expect(await statusOf(client, 'domain', drawGet123)).toMatchObject(limited(60, 'MINUTE'));
      const hits = { 'domain.route_draw.http_method_GET.subject_id_123': 1 };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      expect(await eventsIn(url)).toEqual(['envoy:domain.route.http_method.subject_id']);
    });

    it('TestValueToMetric_WithConfiguredValues: GET and POST values under a value_to_metric key have their own limits and names', async () => {
      const { client, url, statsd } = await serve(`domain: test-domain
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value: GET
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: { requests_per_unit: 60, unit: minute }
      - key: http_method
        value: POST
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: { requests_per_unit: 30, unit: minute }
`);
      expect(
        await statusOf(client, 'test-domain', [
          ['route', 'api'],
          ['http_method', 'GET'],
          ['subject_id', 'user123'],
        ]),
      ).toMatchObject(limited(60, 'MINUTE'));
      expect(
        await statusOf(client, 'test-domain', [
          ['route', 'api'],
          ['http_method', 'POST'],
          ['subject_id', 'user456'],
        ]),
      ).toMatchObject(limited(30, 'MINUTE'));
      const hits = {
        'test-domain.route_api.http_method_GET.subject_id': 1,
        'test-domain.route_api.http_method_POST.subject_id': 1,
      };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      expect(await eventsIn(url)).toEqual([
        'envoy:test-domain.route.http_method_GET.subject_id',
        'envoy:test-domain.route.http_method_POST.subject_id',
      ]);
    });

    it('TestValueToMetric_WithWildcard: a read* value under value_to_metric keys is named by the value it matched', async () => {
      const { client, url, statsd } = await serve(`domain: domain
descriptors:
  - key: user
    value_to_metric: true
    descriptors:
      - key: action
        value: read*
        value_to_metric: true
        descriptors:
          - key: resource
            rate_limit: { requests_per_unit: 100, unit: minute }
`);
      expect(
        await statusOf(client, 'domain', [
          ['user', 'alice'],
          ['action', 'readfile'],
          ['resource', 'documents'],
        ]),
      ).toMatchObject(limited(100, 'MINUTE'));
      expect(
        await statusOf(client, 'domain', [
          ['user', 'bob'],
          ['action', 'readdata'],
          ['resource', 'database'],
        ]),
      ).toMatchObject(limited(100, 'MINUTE'));
      const hits = {
        'domain.user_alice.action_readfile.resource': 1,
        'domain.user_bob.action_readdata.resource': 1,
      };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      expect(await eventsIn(url)).toEqual([envoyEventName('domain', ['user', 'action_read*', 'resource'])]);
    });

    it('TestValueToMetric_WithEmptyValue: an empty value under value_to_metric names the key alone', async () => {
      const { client, url, statsd } = await serve(ROUTE_METHOD_SUBJECT('domain'));
      for (const [route, method] of [
        ['', 'GET'],
        ['draw', ''],
        ['', ''],
      ] as const) {
        const pairs: Pair[] = [
          ['route', route],
          ['http_method', method],
          ['subject_id', '123'],
        ];
        expect(await statusOf(client, 'domain', pairs), JSON.stringify(pairs)).toMatchObject(limited(60, 'MINUTE'));
      }
      const hits = {
        'domain.route.http_method_GET.subject_id': 1,
        'domain.route_draw.http_method.subject_id': 1,
        'domain.route.http_method.subject_id': 1,
      };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      expect((await decisions(url)).get('envoy:domain.route.http_method.subject_id')).toEqual({ allowed: 3 });
    });

    it('TestValueToMetric_FullKeyMatchesStatsKey: with value_to_metric, without it, and with detailed_metric, one stat key each', async () => {
      const plain = ROUTE_METHOD_SUBJECT('test-domain')
        .replaceAll('\n    value_to_metric: true', '')
        .replaceAll('\n        value_to_metric: true', '');
      const pairs: Pair[] = [
        ['route', 'api'],
        ['http_method', 'GET'],
        ['subject_id', 'user123'],
      ];
      const cases = [
        [ROUTE_METHOD_SUBJECT('test-domain'), 'test-domain.route_api.http_method_GET.subject_id'],
        [plain, 'test-domain.route.http_method.subject_id'],
        [
          plain.replace('subject_id\n', 'subject_id\n            detailed_metric: true\n'),
          'test-domain.route_api.http_method_GET.subject_id_user123',
        ],
      ] as const;
      for (const [yaml, key] of cases) {
        const { client, statsd } = await serve(yaml);
        expect(await statusOf(client, 'test-domain', pairs)).toMatchObject(limited(60, 'MINUTE'));
        expect(await totalHits(statsd, { [key]: 1 }), key).toEqual({ [key]: 1 });
      }
    });
  });

  describe('stat names: wildcards with value_to_metric and share_threshold (TestWildcardStatsBehavior)', () => {
    const wild = (value: string, flags: string) => `domain: test-domain
descriptors:
  - key: wild
    value: "${value}"${flags}
    rate_limit: { requests_per_unit: 20, unit: minute }
`;

    const fooCases = [
      {
        name: 'No flags - preserves original behavior with wildcard pattern',
        flags: '',
        shared: false,
        upstream: { 'test-domain.wild_foo*': 2 },
      },
      {
        name: 'value_to_metric - uses runtime value',
        flags: '\n    value_to_metric: true',
        shared: false,
        upstream: { 'test-domain.wild_foo1': 1, 'test-domain.wild_foo2': 1 },
      },
      {
        name: 'share_threshold - uses wildcard pattern with *',
        flags: '\n    share_threshold: true',
        shared: true,
        upstream: { 'test-domain.wild_foo*': 2 },
      },
      {
        name: 'share_threshold with value_to_metric - share_threshold takes priority',
        flags: '\n    share_threshold: true\n    value_to_metric: true',
        shared: true,
        upstream: { 'test-domain.wild_foo*': 2 },
      },
    ];
    for (const { name, flags, shared, upstream } of fooCases) {
      it(`TestWildcardStatsBehavior: ${name} (upstream's stats ${Object.keys(upstream).join(', ')})`, async () => {
        const { client, url, statsd } = await serve(wild('foo*', flags));
        await steadyMinute();
        expect(await statusOf(client, 'test-domain', [['wild', 'foo1']])).toMatchObject(limited(20, 'MINUTE'));
        // share_threshold: one counter for every matching value; otherwise one each.
        expect((await statusOf(client, 'test-domain', [['wild', 'foo2']])).limit_remaining).toBe(shared ? 18 : 19);
        expect(await totalHits(statsd, upstream)).toEqual(upstream);
        // memgate's event: the pattern's name with a hash (docs/envoy.md, How a call is decided).
        expect(await eventsIn(url)).toEqual([envoyEventName('test-domain', ['wild_foo*'])]);
      });
    }

    it('TestWildcardStatsBehavior: value_to_metric in other descriptor - wildcard pattern preserved (upstream: test-domain.wild_foo*.other_bar.limit)', async () => {
      const { client, url, statsd } = await serve(`domain: test-domain
descriptors:
  - key: wild
    value: foo*
    descriptors:
      - key: other
        value_to_metric: true
        descriptors:
          - key: limit
            rate_limit: { requests_per_unit: 20, unit: minute }
`);
      expect(
        await statusOf(client, 'test-domain', [
          ['wild', 'foo1'],
          ['other', 'bar'],
          ['limit', 'X'],
        ]),
      ).toMatchObject(limited(20, 'MINUTE'));
      const hits = { 'test-domain.wild_foo*.other_bar.limit': 1 };
      expect(await totalHits(statsd, hits)).toEqual(hits);
      expect(await eventsIn(url)).toEqual([envoyEventName('test-domain', ['wild_foo*', 'other', 'limit'])]);
    });

    for (const { name, flags, upstream } of [
      {
        name: 'middle+trailing wildcard - no flags - preserves wildcard pattern in stats key',
        flags: '',
        upstream: { 'test-domain.wild_foo*bar*': 3 },
      },
      {
        name: 'middle+trailing wildcard - value_to_metric - uses runtime value',
        flags: '\n    value_to_metric: true',
        upstream: { 'test-domain.wild_foo123bar456': 2, 'test-domain.wild_fooXbarY': 1 },
      },
    ]) {
      it(`TestWildcardStatsBehavior: ${name} (upstream's stats ${Object.keys(upstream).join(', ')})`, async () => {
        const { client, url, statsd } = await serve(wild('foo*bar*', flags));
        await steadyMinute();
        expect(await statusOf(client, 'test-domain', [['wild', 'foo123bar456']])).toMatchObject(limited(20, 'MINUTE'));
        // Each value on a counter of its own (no share_threshold), under the pattern's one event.
        expect(await statusOf(client, 'test-domain', [['wild', 'fooXbarY']])).toMatchObject(limited(20, 'MINUTE'));
        expect((await statusOf(client, 'test-domain', [['wild', 'foo123bar456']])).limit_remaining).toBe(18);
        expect(await totalHits(statsd, upstream)).toEqual(upstream);
        expect(await eventsIn(url)).toEqual([envoyEventName('test-domain', ['wild_foo*bar*'])]);
      });
    }
  });

  describe("files upstream refuses: memgate's loader refuses them, naming the problem", () => {
    /** Every problem names the file; at least one says what `pattern` says. */
    const expectNamed = (problems: readonly string[], file: string, pattern: RegExp) => {
      expect(problems.length).toBeGreaterThan(0);
      for (const problem of problems) expect(problem.startsWith(`${file}: `), problem).toBe(true);
      expect(
        problems.some((problem) => pattern.test(problem)),
        problems.join('\n'),
      ).toBe(true);
    };

    it('TestEmptyDomain: a file without a domain (upstream: "config file cannot have empty domain")', () => {
      expectNamed(refusal([['empty_domain.yaml', EMPTY_DOMAIN]]), 'empty_domain.yaml', /\bdomain\b.*missing/);
      // An empty one too.
      expectNamed(
        refusal([['empty_domain.yaml', 'domain: ""\ndescriptors:\n']]),
        'empty_domain.yaml',
        /domain.*must not be empty/,
      );
    });

    it('TestDuplicateDomain: a domain in two files (upstream: "duplicate domain \'test-domain\' in config file")', async () => {
      loads([['duplicate_domain.yaml', DUPLICATE_DOMAIN]]);
      expectNamed(
        refusal([
          ['basic_config.yaml', BASIC_CONFIG],
          ['duplicate_domain.yaml', DUPLICATE_DOMAIN],
        ]),
        'duplicate_domain.yaml',
        /domain "test-domain" is already defined in basic_config\.yaml/,
      );
      // And the service does not start on them.
      const config = await folderOf({ 'basic_config.yaml': BASIC_CONFIG, 'duplicate_domain.yaml': DUPLICATE_DOMAIN });
      await expect(startService({ config })).rejects.toThrow(/domain "test-domain" is already defined/);
    });

    it('TestEmptyKey: a descriptor without a key (upstream: "descriptor has empty key")', () => {
      expectNamed(refusal([['empty_key.yaml', EMPTY_KEY]]), 'empty_key.yaml', /descriptors\[0\].*field key: missing/);
      expectNamed(
        refusal([['empty_key.yaml', 'domain: test-domain\ndescriptors:\n  - key: ""\n    value: value1\n']]),
        'empty_key.yaml',
        /field key: must not be empty/,
      );
    });

    it('TestDuplicateKey: the same key and value twice in a list (upstream: "duplicate descriptor composite key \'test-domain.key1_value1\'")', () => {
      expectNamed(
        refusal([['duplicate_key.yaml', DUPLICATE_KEY]]),
        'duplicate_key.yaml',
        /key1_value1 \(descriptors\[1\]\): duplicate/,
      );
    });

    it('TestDuplicateKeyDomainMerge: merged files defining the same descriptor (upstream: "duplicate descriptor composite key \'test-domain.key1_value1\'")', async () => {
      expectNamed(
        refusal(
          [
            ['merge_domain_key1.yaml', MERGE_DOMAIN_KEY1],
            ['merge_domain_key1.yaml', MERGE_DOMAIN_KEY1],
          ],
          { mergeDomains: true },
        ),
        'merge_domain_key1.yaml',
        /descriptor "key1_value1" is already defined/,
      );
      const config = await folderOf({
        'merge_domain_key1.yaml': MERGE_DOMAIN_KEY1,
        'merge_domain_key1-copy.yaml': MERGE_DOMAIN_KEY1,
      });
      await expect(startService({ config, env: { MERGE_DOMAIN_CONFIG: 'true' } })).rejects.toThrow(
        /descriptor "key1_value1" is already defined/,
      );
    });

    it('TestBadLimitUnit: unit foo (upstream: "invalid rate limit unit \'foo\'")', () => {
      expectNamed(
        refusal([['bad_limit_unit.yaml', BAD_LIMIT_UNIT]]),
        'bad_limit_unit.yaml',
        /rate_limit\.unit: must be one of .*\(got "foo"\)/,
      );
    });

    it('TestReplacesSelf: a limit replacing itself (upstream: "replaces should not contain name of same descriptor")', () => {
      expectNamed(
        refusal([['replaces_self.yaml', REPLACES_SELF]]),
        'replaces_self.yaml',
        /replaces\[0\].*cannot replace itself/,
      );
    });

    it('TestReplacesEmpty: a replaces entry without a name (upstream: "should not have an empty replaces entry")', () => {
      expectNamed(
        refusal([['replaces_empty.yaml', REPLACES_EMPTY]]),
        'replaces_empty.yaml',
        /rate_limit\.replaces\[0\]/,
      );
      // An empty string names nothing either.
      expectNamed(
        refusal([['replaces_empty.yaml', REPLACES_EMPTY.replace('- name:', '- name: ""')]]),
        'replaces_empty.yaml',
        /replaces\[0\].*must name the limit/,
      );
    });

    it('TestBadYaml: text that is not YAML (upstream: "error loading config file: yaml: ... unexpected end of stream")', () => {
      expectNamed(refusal([['bad_yaml.yaml', BAD_YAML]]), 'bad_yaml.yaml', /not valid YAML/);
    });

    it('TestMisspelledKey: ratelimit for rate_limit (upstream: "config error, unknown key \'ratelimit\'")', () => {
      expectNamed(refusal([['misspelled_key.yaml', MISSPELLED_KEY]]), 'misspelled_key.yaml', /unknown key "ratelimit"/);
    });

    it('TestMisspelledKey: requestsperunit for requests_per_unit (upstream: "config error, unknown key \'requestsperunit\'")', () => {
      expectNamed(
        refusal([['misspelled_key2.yaml', MISSPELLED_KEY2]]),
        'misspelled_key2.yaml',
        /unknown key "requestsperunit"/,
      );
    });

    it('TestNonStringKey: a number as a key (upstream: "config error, key is not of type string: 0.25")', () => {
      expectNamed(refusal([['non_string_key.yaml', NON_STRING_KEY]]), 'non_string_key.yaml', /"0\.25"/);
    });

    it('TestNonMapList: a list of strings for descriptors (upstream: "yaml file contains list of type other than map: a")', () => {
      expectNamed(
        refusal([['non_map_list.yaml', NON_MAP_LIST]]),
        'non_map_list.yaml',
        /descriptors\[0\]\).*must be object \(got "a"\)/,
      );
    });

    it('TestUnlimitedWithRateLimitUnit: unlimited with a unit (upstream: "should not specify rate limit unit when unlimited")', () => {
      expectNamed(
        refusal([['unlimited_with_unit.yaml', UNLIMITED_WITH_UNIT]]),
        'unlimited_with_unit.yaml',
        /rate_limit\.unit: must not be set when unlimited/,
      );
    });
  });
});
