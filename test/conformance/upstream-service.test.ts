// Conformance: envoyproxy/ratelimit's own tests of its service (test/service/ratelimit_test.go),
// of its limiter's base (test/limiter/base_limiter_test.go) and of its health checker
// (test/server/health_test.go), case by case, against memgate over gRPC on a real Memcached.
// Upstream drives a mocked cache to each state; here the state is made with real calls (a limit
// spent first), and every answer is read off the wire: overall_code, each status's code,
// current_limit, limit_remaining and duration_until_reset, headers and dynamic metadata.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import {
  oneDescriptor,
  type RlsClient,
  type WireRequestIn,
  type WireResponseOut,
  type WireStatusOut,
} from '../../scripts/lib/rls-client.js';
import {
  envoyConfigFile,
  useEnvoyServices,
  type EnvoyService,
  type EnvoyServiceOptions,
} from '../helpers/envoy-service.js';
import { startMemcachedProcess, uniquePrefix, useMemcached, type MemcachedProcess } from '../helpers/memcached.js';
import { awayFromWindowEnd } from '../helpers/window.js';

const memcached = useMemcached();
const TOKEN = 'conformance-upstream-service-token-0123';
const started = useEnvoyServices(
  memcached,
  'domain: unused\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true }\n',
);

/** A service on the run's Memcached with `config` (YAML text, or a file or folder already written). */
const serve = async (config: string, env: Record<string, string> = {}, options: EnvoyServiceOptions = {}) =>
  started({
    ...options,
    config: config.includes('\n') ? await envoyConfigFile(config) : config,
    env: { MEMGATE_ADMIN_TOKEN: TOKEN, ...env },
  });

/** A folder of upstream configuration files, as RUNTIME_ROOT/.../config holds them. */
async function configFolder(files: Record<string, string>): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'memgate-conformance-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(folder, name), text);
  return folder;
}

const reload = (service: EnvoyService) =>
  fetch(`${service.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Away from a minute's edges, so that what a test spends and then reads is in one fixed window. */
const awayFromMinuteEnd = () => awayFromWindowEnd(60);

/** Upstream's utils.CalculateReset: the unit's length less the whole seconds it has run. */
const untilMinuteEnd = () => 60 - (Math.floor(Date.now() / 1000) % 60);

type Limit = { name: string; requests_per_unit: number; unit: string } | null;
interface Expected {
  code: 'OK' | 'OVER_LIMIT';
  limit: Limit;
  remaining: number;
}
const minute = (requests_per_unit: number, name = ''): Limit => ({ name, requests_per_unit, unit: 'MINUTE' });
const UNLIMITED = 4_294_967_295;

/** Each status as upstream builds it: its code, limit and remaining; a reset with a minute limit, none without. */
function expectStatuses(actual: readonly WireStatusOut[], expected: readonly Expected[]): void {
  expect(actual.map((s) => ({ code: s.code, limit: s.current_limit, remaining: s.limit_remaining }))).toEqual(
    expected.map(({ code, limit, remaining }) => ({ code, limit, remaining })),
  );
  expected.forEach(({ limit }, i) => {
    const reset = actual[i]?.duration_until_reset;
    if (limit === null) expect(reset ?? null).toBeNull();
    else expect(Math.abs((reset?.seconds ?? -99) - untilMinuteEnd())).toBeLessThanOrEqual(1);
  });
}

async function spend(client: RlsClient, request: WireRequestIn, times: number): Promise<void> {
  for (let i = 0; i < times; i++) expect((await client.shouldRateLimit(request)).overall_code).toBe('OK');
}

const descriptors = (domain: string, ...pairs: [string, string][]): WireRequestIn => ({
  domain,
  descriptors: pairs.map(([key, value]) => ({ entries: [{ key, value }] })),
});

/** The value of `name` whose labels include `labels`, from /metrics; undefined when absent. */
async function metric(service: EnvoyService, name: string, labels: Record<string, string> = {}) {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const got = new Map<string, string>();
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      got.set(key as string, value as string);
    }
    if (Object.entries(labels).every(([key, value]) => got.get(key) === value)) return Number(match[3]);
  }
  return undefined;
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as grpc.ServiceError,
  );

/** google.protobuf.Struct as the client decodes it (protobufjs names the well-known types' fields in camelCase). */
interface ValueOut {
  stringValue?: string;
  numberValue?: number;
  boolValue?: boolean;
  listValue?: { values: ValueOut[] };
  structValue?: StructOut;
}
interface StructOut {
  fields: Record<string, ValueOut>;
}
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
const dynamicMetadata = (answer: WireResponseOut) =>
  plainStruct((answer as WireResponseOut & { dynamic_metadata?: StructOut | null }).dynamic_metadata);

// ---------------------------------------------------------------------------------------------

/** Upstream's "different-domain": a limit of 10 a minute on foo=bar, and nothing on hello=world. */
const DIFFERENT_DOMAIN = (name = '', extra = '') => `
domain: different-domain
descriptors:
  - key: foo
    value: bar
    rate_limit: { unit: minute, requests_per_unit: 10${name === '' ? '' : `, name: ${name}`} }
${extra}`;
const FOO_HELLO = descriptors('different-domain', ['foo', 'bar'], ['hello', 'world']);

/** Upstream's "quota-domain" of the per-descriptor quota tests: regular=limit 5 a minute, quota=limit 3 in quota mode. */
const QUOTA_DOMAIN = `
domain: quota-domain
descriptors:
  - key: regular
    value: limit
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: quota
    value: limit
    quota_mode: true
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: quota1
    value: limit
    quota_mode: true
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: quota2
    value: limit
    quota_mode: true
    rate_limit: { unit: minute, requests_per_unit: 3 }
`;
const REGULAR_QUOTA = descriptors('quota-domain', ['regular', 'limit'], ['quota', 'limit']);
const QUOTA1_QUOTA2 = descriptors('quota-domain', ['quota1', 'limit'], ['quota2', 'limit']);

describe('upstream test/service/ratelimit_test.go', () => {
  it('TestService: no limit answers OK; a reloaded file applies; a bad reload keeps the limits in use, whatever the order', async () => {
    const folder = await configFolder({
      'test-domain.yaml':
        'domain: test-domain\ndescriptors:\n  - key: other\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
    });
    const service = await serve(folder, { MEMGATE_POLICY_WATCH: 'off' });
    const { client } = service;

    // First request: the domain is loaded, no limit matches hello=world.
    const first = await client.shouldRateLimit(oneDescriptor('test-domain', ['hello', 'world']));
    expect(first.overall_code).toBe('OK');
    expectStatuses(first.statuses, [{ code: 'OK', limit: null, remaining: 0 }]);
    expect(first.response_headers_to_add).toEqual([]);

    // A new configuration (upstream: a config update event) with different-domain.
    await writeFile(join(folder, 'different-domain.yaml'), DIFFERENT_DOMAIN('key_name'));
    expect((await reload(service)).status).toBe(200);
    await awayFromMinuteEnd();
    await spend(client, oneDescriptor('different-domain', ['foo', 'bar']), 10);
    const over = await client.shouldRateLimit(FOO_HELLO);
    expect(over.overall_code).toBe('OVER_LIMIT');
    expectStatuses(over.statuses, [
      { code: 'OVER_LIMIT', limit: minute(10, 'key_name'), remaining: 0 },
      { code: 'OK', limit: null, remaining: 0 },
    ]);
    // docs/envoy.md, Protocol behaviours, `response_headers_to_add`: memgate's RateLimit headers and Retry-After where upstream sends none.
    expect(over.response_headers_to_add.map(({ key }) => key.toLowerCase()).sort()).toEqual([
      'ratelimit',
      'ratelimit-policy',
      'retry-after',
    ]);

    // A configuration that fails to load (upstream: config_load_error) leaves the one in use.
    await writeFile(
      join(folder, 'different-domain.yaml'),
      'domain: different-domain\ndescriptors:\n  - key: foo\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n',
    );
    expect((await reload(service)).status).toBe(400);
    const swapped = await client.shouldRateLimit(descriptors('different-domain', ['hello', 'world'], ['foo', 'bar']));
    expect(swapped.overall_code).toBe('OVER_LIMIT');
    expectStatuses(swapped.statuses, [
      { code: 'OK', limit: null, remaining: 0 },
      { code: 'OVER_LIMIT', limit: minute(10, 'key_name'), remaining: 0 },
    ]);
    // Upstream's config_load_error 1 and global_shadow_mode 0, as memgate's metrics say them.
    expect(await metric(service, 'memgate_policy_reload_failures_total', { trigger: 'admin' })).toBe(1);
    expect(await metric(service, 'memgate_envoy_shadow_over_limit_total')).toBeUndefined();
  });

  it('TestServiceGlobalShadowMode: SHADOW_MODE answers OK overall while the over descriptor still says OVER_LIMIT', async () => {
    const service = await serve(DIFFERENT_DOMAIN(), { SHADOW_MODE: 'true' });
    await awayFromMinuteEnd();
    await spend(service.client, FOO_HELLO, 10);
    const answer = await service.client.shouldRateLimit(FOO_HELLO);
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [
      { code: 'OVER_LIMIT', limit: minute(10), remaining: 0 },
      { code: 'OK', limit: null, remaining: 0 },
    ]);
    expect(answer.response_headers_to_add).toEqual([]);
    // Upstream's global_shadow_mode counter, per descriptor event in memgate (docs/envoy.md, Shadow mode).
    expect(
      await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: 'envoy:different-domain.foo_bar' }),
    ).toBe(1);
  });

  it('TestRuleShadowMode: two shadow_mode descriptors over their limits answer OK, each OK with its limit', async () => {
    const config = `
domain: different-domain
descriptors:
  - key: foo
    value: bar
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: hello
    value: world
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 10 }
`;
    const service = await serve(config);
    await awayFromMinuteEnd();
    await spend(service.client, FOO_HELLO, 10);
    const answer = await service.client.shouldRateLimit(FOO_HELLO);
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [
      { code: 'OK', limit: minute(10), remaining: 0 },
      { code: 'OK', limit: minute(10), remaining: 0 },
    ]);
    expect(answer.response_headers_to_add).toEqual([]);
    expect(
      await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: 'envoy:different-domain.foo_bar' }),
    ).toBe(1);
    expect(
      await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: 'envoy:different-domain.hello_world' }),
    ).toBe(1);
  });

  it('TestMixedRuleShadowMode: a shadow descriptor over says OK, an enforced one over makes the call OVER_LIMIT', async () => {
    const config = `
domain: different-domain
descriptors:
  - key: foo
    value: bar
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: hello
    value: world
    rate_limit: { unit: minute, requests_per_unit: 10 }
`;
    const service = await serve(config);
    await awayFromMinuteEnd();
    await spend(service.client, FOO_HELLO, 10);
    const answer = await service.client.shouldRateLimit(FOO_HELLO);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expectStatuses(answer.statuses, [
      { code: 'OK', limit: minute(10), remaining: 0 },
      { code: 'OVER_LIMIT', limit: minute(10), remaining: 0 },
    ]);
  });

  it('TestServiceWithCustomRatelimitHeaders: the closest limit in the headers LIMIT_*_HEADER name', async () => {
    const service = await serve(DIFFERENT_DOMAIN(), {
      LIMIT_RESPONSE_HEADERS_ENABLED: 'true',
      LIMIT_LIMIT_HEADER: 'A-Ratelimit-Limit',
      LIMIT_REMAINING_HEADER: 'A-Ratelimit-Remaining',
      LIMIT_RESET_HEADER: 'A-Ratelimit-Reset',
    });
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('different-domain', ['foo', 'bar']), 10);
    const answer = await service.client.shouldRateLimit(FOO_HELLO);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expectStatuses(answer.statuses, [
      { code: 'OVER_LIMIT', limit: minute(10), remaining: 0 },
      { code: 'OK', limit: null, remaining: 0 },
    ]);
    expect(answer.response_headers_to_add.map(({ key }) => key)).toEqual([
      'A-Ratelimit-Limit',
      'A-Ratelimit-Remaining',
      'A-Ratelimit-Reset',
    ]);
    const [limit, remaining, reset] = answer.response_headers_to_add.map(({ value }) => value);
    expect([limit, remaining]).toEqual(['10', '0']);
    expect(Math.abs(Number(reset) - untilMinuteEnd())).toBeLessThanOrEqual(1);
  });

  it("TestServiceWithDefaultRatelimitHeaders: upstream's default header names RateLimit-Limit, -Remaining, -Reset", async () => {
    const service = await serve(DIFFERENT_DOMAIN(), { LIMIT_RESPONSE_HEADERS_ENABLED: 'true' });
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('different-domain', ['foo', 'bar']), 10);
    const answer = await service.client.shouldRateLimit(FOO_HELLO);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expectStatuses(answer.statuses, [
      { code: 'OVER_LIMIT', limit: minute(10), remaining: 0 },
      { code: 'OK', limit: null, remaining: 0 },
    ]);
    expect(answer.response_headers_to_add.map(({ key }) => key)).toEqual([
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
    ]);
    const [limit, remaining, reset] = answer.response_headers_to_add.map(({ value }) => value);
    expect([limit, remaining]).toEqual(['10', '0']);
    expect(Math.abs(Number(reset) - untilMinuteEnd())).toBeLessThanOrEqual(1);
  });

  it('TestEmptyDomain: a call with an empty domain is an error, not an answer', async () => {
    const service = await serve(DIFFERENT_DOMAIN());
    const error = await refusal(service.client.shouldRateLimit(oneDescriptor('', ['hello', 'world'])));
    // docs/envoy.md, Protocol behaviours, "empty `domain`, no descriptors": INVALID_ARGUMENT where upstream says UNKNOWN.
    expect({ code: error?.code, details: error?.details }).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'domain must not be empty',
    });
  });

  it('TestEmptyDescriptors: a call with no descriptors is an error, not an answer', async () => {
    const service = await serve(DIFFERENT_DOMAIN());
    const error = await refusal(service.client.shouldRateLimit({ domain: 'test-domain', descriptors: [] }));
    // docs/envoy.md, Protocol behaviours, "empty `domain`, no descriptors": INVALID_ARGUMENT where upstream says UNKNOWN.
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.details).toMatch(/descriptors must not be empty/);
  });

  it('TestCacheError: a call whose counters cannot be reached', async () => {
    const service = await serve(DIFFERENT_DOMAIN(), { MEMCACHED_SERVERS: '127.0.0.1:1', MEMCACHED_TIMEOUT_MS: '100' });
    // docs/envoy.md, Protocol behaviours, "Memcached fails or is late": onStoreError decides (allow by default),
    // where upstream's service returns the cache's error (its Memcached backend answers as if the count were 0).
    const answer = await service.client.shouldRateLimit(oneDescriptor('different-domain', ['foo', 'bar']));
    expect(answer.overall_code).toBe('OK');
    expect(answer.statuses.map(({ code }) => code)).toEqual(['OK']);
    // Upstream's redis_error counter, as memgate counts failed store calls.
    expect(await metric(service, 'memgate_store_operations_total', { outcome: 'unavailable' })).toBeGreaterThan(0);
  });

  it('TestInitialLoadError: a configuration that does not load at start serves no call', async () => {
    const bad = await envoyConfigFile(
      'domain: test-domain\ndescriptors:\n  - key: hello\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n',
    );
    // docs/envoy.md, upstream environment, FORCE_START_WITHOUT_INITIAL_CONFIG: memgate does not start (exit 2)
    // where upstream serves and answers each call "no rate limit configuration loaded".
    await expect(serve(bad)).rejects.toThrow(/fortnight/);
  });

  it('TestUnlimited: an unlimited descriptor answers OK with 4294967295 left and is not counted', async () => {
    const config = `
domain: some-domain
descriptors:
  - key: foo
    value: bar
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: baz
    value: qux
    rate_limit: { unlimited: true }
`;
    const service = await serve(config);
    const answer = await service.client.shouldRateLimit(
      descriptors('some-domain', ['foo', 'bar'], ['hello', 'world'], ['baz', 'qux']),
    );
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [
      { code: 'OK', limit: minute(10), remaining: 9 },
      { code: 'OK', limit: null, remaining: 0 },
      { code: 'OK', limit: null, remaining: UNLIMITED },
    ]);
    // "Unlimited descriptors should not hit the cache": the limited one was decided, the unlimited one not.
    const decided = (event: string) =>
      metric(service, 'memgate_decisions_total', { event, kind: 'check', outcome: 'allowed' });
    expect(await decided('envoy:some-domain.foo_bar')).toBe(1);
    expect(await decided('envoy:some-domain.baz_qux')).toBeUndefined();
  });

  it('TestServiceHealthStatus: a started service reports SERVING', async () => {
    const { client } = await serve(DIFFERENT_DOMAIN());
    expect(await client.health('ratelimit')).toBe('SERVING');
  });

  it('TestServiceHealthStatusAtLeastOneConfigLoaded: SERVING with a configuration; a reload that finds no file is refused and keeps it (a listed difference)', async () => {
    const folder = await configFolder({ 'different-domain.yaml': DIFFERENT_DOMAIN() });
    const service = await serve(folder, {
      HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true',
      MEMGATE_POLICY_WATCH: 'off',
    });
    // Upstream's NOT_SERVING before the first load has no counterpart: memgate serves once its files are loaded.
    expect(await service.client.health('ratelimit')).toBe('SERVING');
    // Upstream loads a folder left without files as a configuration of no domain, and answers
    // NOT_SERVING; memgate refuses the reload and keeps the files it had (docs/envoy.md,
    // "Differences from upstream": an emptied folder is likelier a sync caught midway than limits lifted).
    await rm(join(folder, 'different-domain.yaml'));
    const refused = await reload(service);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/holds no \.yaml or \.yml file/);
    expect(await service.client.health('ratelimit')).toBe('SERVING');
  });

  it('TestServiceGlobalQuotaMode: QUOTA_MODE makes a call OVER_LIMIT when all of its descriptors are over', async () => {
    const config = `
domain: quota-domain
descriptors:
  - key: foo
    value: bar
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: hello
    value: world
    rate_limit: { unit: minute, requests_per_unit: 5 }
`;
    const service = await serve(config, { QUOTA_MODE: 'true' });
    const request = descriptors('quota-domain', ['foo', 'bar'], ['hello', 'world']);
    await awayFromMinuteEnd();
    // 10 calls: hello=world is over from the 6th, alone of two, so each call passes.
    await spend(service.client, request, 10);
    const answer = await service.client.shouldRateLimit(request);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expectStatuses(answer.statuses, [
      { code: 'OVER_LIMIT', limit: minute(10), remaining: 0 },
      { code: 'OVER_LIMIT', limit: minute(5), remaining: 0 },
    ]);
  });

  const META_DOMAIN = (regular: string, quota: string, quotaOnRegular: boolean) => `
domain: quota-domain
descriptors:
  - key: regular
    value: limit
    quota_mode: ${String(quotaOnRegular)}
    rate_limit: { unit: minute, requests_per_unit: 10 }
    metadata: { ${regular} }
  - key: quota
    value: limit
    quota_mode: true
    rate_limit: { unit: minute, requests_per_unit: 5 }
    metadata: { ${quota} }
`;
  const META_ENV = { QUOTA_MODE: 'true', RESPONSE_DYNAMIC_METADATA: 'true' };

  it('TestMetadataReturnedForPassedDescriptors: only the passed descriptor gives its metadata', async () => {
    const service = await serve(META_DOMAIN('name: service_1', 'name: service_2', false), META_ENV);
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['regular', 'limit']), 4);
    await spend(service.client, oneDescriptor('quota-domain', ['quota', 'limit']), 5);
    const answer = await service.client.shouldRateLimit(REGULAR_QUOTA);
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [
      { code: 'OK', limit: minute(10), remaining: 5 },
      { code: 'OVER_LIMIT', limit: minute(5), remaining: 0 },
    ]);
    expect(dynamicMetadata(answer)?.metadata).toEqual({ name: 'service_1' });
  });

  it('TestMetadataReturnedForAllPassedDescriptors: the metadata of every passed descriptor, merged', async () => {
    const service = await serve(META_DOMAIN('name: service_1', 'some_other_name: service_2', true), META_ENV);
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['regular', 'limit']), 4);
    const answer = await service.client.shouldRateLimit(REGULAR_QUOTA);
    expect(answer.overall_code).toBe('OK');
    // Upstream's mock has 6 left of 5 on the second; a real count of one leaves 4.
    expectStatuses(answer.statuses, [
      { code: 'OK', limit: minute(10), remaining: 5 },
      { code: 'OK', limit: minute(5), remaining: 4 },
    ]);
    expect(dynamicMetadata(answer)?.metadata).toEqual({ name: 'service_1', some_other_name: 'service_2' });
  });

  it('TestOverlappingMetadataReturnsTheFirstValue: a key two passed descriptors give keeps the first one', async () => {
    const service = await serve(META_DOMAIN('name: service_1', 'name: service_2', true), META_ENV);
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['regular', 'limit']), 4);
    const answer = await service.client.shouldRateLimit(REGULAR_QUOTA);
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [
      { code: 'OK', limit: minute(10), remaining: 5 },
      { code: 'OK', limit: minute(5), remaining: 4 },
    ]);
    expect(dynamicMetadata(answer)?.metadata).toEqual({ name: 'service_1' });
  });

  it('TestServicePerDescriptorQuotaMode: an enforced descriptor over makes the call OVER_LIMIT beside a quota one under', async () => {
    const service = await serve(QUOTA_DOMAIN);
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['regular', 'limit']), 5);
    await spend(service.client, oneDescriptor('quota-domain', ['quota', 'limit']), 2);
    const answer = await service.client.shouldRateLimit(REGULAR_QUOTA);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    // docs/envoy.md, "Refused requests are not counted": the quota descriptor keeps the 1 it had left, which
    // upstream's count of this call takes (upstream answers 0).
    expectStatuses(answer.statuses, [
      { code: 'OVER_LIMIT', limit: minute(5), remaining: 0 },
      { code: 'OK', limit: minute(3), remaining: 1 },
    ]);
  });

  it('TestServiceMixedPerDescriptorModes: the only quota descriptor over makes the call OVER_LIMIT', async () => {
    const service = await serve(QUOTA_DOMAIN);
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['quota', 'limit']), 3);
    const answer = await service.client.shouldRateLimit(REGULAR_QUOTA);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expectStatuses(answer.statuses, [
      { code: 'OK', limit: minute(5), remaining: 4 },
      { code: 'OVER_LIMIT', limit: minute(3), remaining: 0 },
    ]);
  });

  it('TestServiceMixedPerDescriptorModesUnderLimit: both under, the call is OK', async () => {
    const service = await serve(QUOTA_DOMAIN);
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['regular', 'limit']), 4);
    await spend(service.client, oneDescriptor('quota-domain', ['quota', 'limit']), 2);
    const answer = await service.client.shouldRateLimit(REGULAR_QUOTA);
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [
      { code: 'OK', limit: minute(5), remaining: 0 },
      { code: 'OK', limit: minute(3), remaining: 0 },
    ]);
  });

  it('TestServiceQuotaModeOnlyAllOverTheLimit: every quota descriptor over makes the call OVER_LIMIT', async () => {
    const service = await serve(QUOTA_DOMAIN);
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['quota1', 'limit']), 5);
    await spend(service.client, oneDescriptor('quota-domain', ['quota2', 'limit']), 3);
    const answer = await service.client.shouldRateLimit(QUOTA1_QUOTA2);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expectStatuses(answer.statuses, [
      { code: 'OVER_LIMIT', limit: minute(5), remaining: 0 },
      { code: 'OVER_LIMIT', limit: minute(3), remaining: 0 },
    ]);
  });

  it('TestServiceQuotaModeOnlySomeOverTheLimit: one quota descriptor over of two, the call is OK', async () => {
    const service = await serve(QUOTA_DOMAIN);
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['quota1', 'limit']), 5);
    await spend(service.client, oneDescriptor('quota-domain', ['quota2', 'limit']), 2);
    const answer = await service.client.shouldRateLimit(QUOTA1_QUOTA2);
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [
      { code: 'OVER_LIMIT', limit: minute(5), remaining: 0 },
      { code: 'OK', limit: minute(3), remaining: 0 },
    ]);
  });

  it('TestServiceQuotaModeWithShadowMode: SHADOW_MODE answers OK though every quota descriptor is over', async () => {
    const config = QUOTA_DOMAIN.replace(
      '  - key: regular\n    value: limit\n',
      '  - key: regular\n    value: limit\n    quota_mode: true\n',
    );
    const service = await serve(config, { SHADOW_MODE: 'true' });
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['regular', 'limit']), 5);
    await spend(service.client, oneDescriptor('quota-domain', ['quota', 'limit']), 3);
    const answer = await service.client.shouldRateLimit(REGULAR_QUOTA);
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [
      { code: 'OVER_LIMIT', limit: minute(5), remaining: 0 },
      { code: 'OVER_LIMIT', limit: minute(3), remaining: 0 },
    ]);
    expect(
      await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: 'envoy:quota-domain.regular_limit' }),
    ).toBe(1);
  });

  it('TestServiceMixedModeWithShadowMode: SHADOW_MODE answers OK though an enforced and a quota descriptor are over', async () => {
    const service = await serve(QUOTA_DOMAIN, { SHADOW_MODE: 'true' });
    await awayFromMinuteEnd();
    await spend(service.client, oneDescriptor('quota-domain', ['regular', 'limit']), 5);
    await spend(service.client, oneDescriptor('quota-domain', ['quota', 'limit']), 3);
    const answer = await service.client.shouldRateLimit(REGULAR_QUOTA);
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [
      { code: 'OVER_LIMIT', limit: minute(5), remaining: 0 },
      { code: 'OVER_LIMIT', limit: minute(3), remaining: 0 },
    ]);
    expect(
      await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: 'envoy:quota-domain.regular_limit' }),
    ).toBe(1);
  });
});

// ---------------------------------------------------------------------------------------------

/** Upstream's base limiter cases: a limit on key=value of domain "domain" (upstream's are per second; a minute here, so that spending and reading share one window). */
const KEY_VALUE = (limit: number, shadow = false) => `
domain: domain
descriptors:
  - key: key
    value: value
    shadow_mode: ${String(shadow)}
    rate_limit: { unit: minute, requests_per_unit: ${limit} }
`;
const KEY_VALUE_REQUEST = oneDescriptor('domain', ['key', 'value']);
const withHits = (request: WireRequestIn, hits: number): WireRequestIn => ({ ...request, hits_addend: hits });
const EVENT = 'envoy:domain.key_value';
const decisions = (service: EnvoyService, outcome: string) =>
  metric(service, 'memgate_decisions_total', { event: EVENT, kind: 'check', outcome });
const denialsFromMemory = (service: EnvoyService) =>
  metric(service, 'memgate_local_cache_total', { cache: 'denial', result: 'hit' });

describe('upstream test/limiter/base_limiter_test.go', () => {
  it('TestGenerateCacheKeys: one counter per domain and descriptor, hit once per call', async () => {
    const folder = await configFolder({
      'domain.yaml': KEY_VALUE(10),
      'other.yaml': KEY_VALUE(10).replace('domain: domain', 'domain: other-domain'),
    });
    const service = await serve(folder);
    await awayFromMinuteEnd();
    const first = await service.client.shouldRateLimit(KEY_VALUE_REQUEST);
    expectStatuses(first.statuses, [{ code: 'OK', limit: minute(10), remaining: 9 }]);
    // Upstream's total_hits 1, as memgate counts decisions.
    expect(await decisions(service, 'allowed')).toBe(1);
    const again = await service.client.shouldRateLimit(KEY_VALUE_REQUEST);
    expectStatuses(again.statuses, [{ code: 'OK', limit: minute(10), remaining: 8 }]);
    // The domain is part of the counter: the same descriptor elsewhere starts afresh.
    const elsewhere = await service.client.shouldRateLimit(oneDescriptor('other-domain', ['key', 'value']));
    expectStatuses(elsewhere.statuses, [{ code: 'OK', limit: minute(10), remaining: 9 }]);
  });

  it('TestGenerateCacheKeysPrefix: CACHE_KEY_PREFIX separates the counters of services sharing Memcached', async () => {
    const config = await envoyConfigFile(KEY_VALUE(2));
    const shared = uniquePrefix();
    const own = (prefix: string) => serve(config, { CACHE_KEY_PREFIX: prefix, MEMGATE_KEY_PREFIX: '' });
    const [a, b, c] = await Promise.all([own(shared), own(shared), own(uniquePrefix())]);
    await awayFromMinuteEnd();
    await spend(a.client, KEY_VALUE_REQUEST, 1);
    // The same prefix shares the counter...
    expectStatuses((await b.client.shouldRateLimit(KEY_VALUE_REQUEST)).statuses, [
      { code: 'OK', limit: minute(2), remaining: 0 },
    ]);
    // ...another keeps its own.
    expectStatuses((await c.client.shouldRateLimit(KEY_VALUE_REQUEST)).statuses, [
      { code: 'OK', limit: minute(2), remaining: 1 },
    ]);
  });

  it('TestGenerateCacheKeysPrefix: a prefix such as upstream\'s "prefix:" is taken as it is', async () => {
    const config = await envoyConfigFile(KEY_VALUE(2));
    // Upstream's test prefix is "prefix:"; a unique head keeps this run's counters apart.
    const service = await serve(config, { CACHE_KEY_PREFIX: `${uniquePrefix()}:`, MEMGATE_KEY_PREFIX: '' });
    const answer = await service.client.shouldRateLimit(KEY_VALUE_REQUEST);
    expectStatuses(answer.statuses, [{ code: 'OK', limit: minute(2), remaining: 1 }]);
  });

  it('TestGenerateCacheKeysWithShareThreshold: values under a share_threshold wildcard share one counter, at any level', async () => {
    const config = `
domain: domain
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: { unit: minute, requests_per_unit: 6 }
  - key: parent
    value: value1
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: files
    value: top/*
    share_threshold: true
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit: { unit: minute, requests_per_unit: 2 }
`;
    const { client } = await serve(config);
    await awayFromMinuteEnd();
    const remaining = async (...pairs: [string, string][]) => {
      const answer = await client.shouldRateLimit(oneDescriptor('domain', ...pairs));
      return answer.overall_code === 'OK' ? answer.statuses[0]?.limit_remaining : answer.overall_code;
    };
    // Tests 1 and 2: six values of files/*, one counter of 6.
    const files = [];
    for (const value of [
      'files/a.pdf',
      'files/b.csv',
      'files/c.txt',
      'files/d.json',
      'files/e.xml',
      'files/subdir/f.txt',
    ])
      files.push(await remaining(['files', value]));
    expect(files).toEqual([5, 4, 3, 2, 1, 0]);
    expect(await remaining(['files', 'files/g.txt'])).toBe('OVER_LIMIT');
    // Test 3: the share at the second level, under an exact first entry.
    expect(await remaining(['parent', 'value1'], ['files', 'nested/file1.txt'])).toBe(1);
    expect(await remaining(['parent', 'value1'], ['files', 'nested/file2.csv'])).toBe(0);
    expect(await remaining(['parent', 'value1'], ['files', 'nested/file3.xml'])).toBe('OVER_LIMIT');
    // Test 4: shares at both levels.
    expect(await remaining(['files', 'top/file1.txt'], ['files', 'nested/sub1.txt'])).toBe(1);
    expect(await remaining(['files', 'top/file2.pdf'], ['files', 'nested/sub2.csv'])).toBe(0);
    expect(await remaining(['files', 'top/file3.json'], ['files', 'nested/sub3.xml'])).toBe('OVER_LIMIT');
  });

  it('TestOverLimitWithLocalCache: a counter found over is refused again from memory', async () => {
    const service = await serve(KEY_VALUE(1), { LOCAL_CACHE_SIZE_IN_BYTES: '1048576' });
    await awayFromMinuteEnd();
    await spend(service.client, KEY_VALUE_REQUEST, 1);
    expect((await service.client.shouldRateLimit(KEY_VALUE_REQUEST)).overall_code).toBe('OVER_LIMIT');
    expect((await service.client.shouldRateLimit(KEY_VALUE_REQUEST)).overall_code).toBe('OVER_LIMIT');
    expect(await denialsFromMemory(service)).toBeGreaterThanOrEqual(1);
  });

  it('TestNoOverLimitWithLocalCache: a counter never found over is not refused from memory, with or without a local cache', async () => {
    const services = await Promise.all(
      ['0', '1048576'].map((size) => serve(KEY_VALUE(1), { LOCAL_CACHE_SIZE_IN_BYTES: size })),
    );
    for (const service of services) {
      const answer = await service.client.shouldRateLimit(KEY_VALUE_REQUEST);
      expect(answer.overall_code).toBe('OK');
      expect(await denialsFromMemory(service)).toBeUndefined();
    }
  });

  it('TestGetResponseStatusEmptyKey: a descriptor with no limit is OK with nothing left and no limit', async () => {
    const service = await serve(KEY_VALUE(1));
    const answer = await service.client.shouldRateLimit(oneDescriptor('domain', ['key', 'another']));
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [{ code: 'OK', limit: null, remaining: 0 }]);
  });

  it('TestGetResponseStatusOverLimitWithLocalCache: a denial repeated from memory is OVER_LIMIT with the limit and 0 left', async () => {
    const service = await serve(KEY_VALUE(5));
    await awayFromMinuteEnd();
    await spend(service.client, KEY_VALUE_REQUEST, 5);
    expect((await service.client.shouldRateLimit(withHits(KEY_VALUE_REQUEST, 2))).overall_code).toBe('OVER_LIMIT');
    const repeated = await service.client.shouldRateLimit(withHits(KEY_VALUE_REQUEST, 2));
    expect(repeated.overall_code).toBe('OVER_LIMIT');
    expectStatuses(repeated.statuses, [{ code: 'OVER_LIMIT', limit: minute(5), remaining: 0 }]);
    expect(await denialsFromMemory(service)).toBeGreaterThanOrEqual(1);
    // Upstream's over_limit, per call in memgate's decisions; and no shadow_mode count.
    expect(await decisions(service, 'denied')).toBe(2);
    expect(await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: EVENT })).toBeUndefined();
  });

  it('TestGetResponseStatusOverLimitWithLocalCacheShadowMode: a shadow limit over answers OK with the limit and 0 left', async () => {
    const service = await serve(KEY_VALUE(5, true));
    await awayFromMinuteEnd();
    await spend(service.client, KEY_VALUE_REQUEST, 5);
    const answer = await service.client.shouldRateLimit(withHits(KEY_VALUE_REQUEST, 2));
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [{ code: 'OK', limit: minute(5), remaining: 0 }]);
    // docs/envoy.md, Shadow mode: 1 per shadow descriptor over, "the call's hits_addend is not weighed" (upstream adds 2).
    expect(await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: EVENT })).toBe(1);
  });

  it('TestGetResponseStatusOverLimit: hits past the limit are OVER_LIMIT with 0 left, and the denial is kept in memory', async () => {
    const service = await serve(KEY_VALUE(5));
    await awayFromMinuteEnd();
    await spend(service.client, withHits(KEY_VALUE_REQUEST, 2), 1);
    const over = await service.client.shouldRateLimit(withHits(KEY_VALUE_REQUEST, 5));
    expect(over.overall_code).toBe('OVER_LIMIT');
    expectStatuses(over.statuses, [{ code: 'OVER_LIMIT', limit: minute(5), remaining: 0 }]);
    // The local cache holds the denial: the same call again is refused from memory.
    expect((await service.client.shouldRateLimit(withHits(KEY_VALUE_REQUEST, 5))).overall_code).toBe('OVER_LIMIT');
    expect(await denialsFromMemory(service)).toBe(1);
    expect(await decisions(service, 'denied')).toBe(2);
    // docs/envoy.md, "Refused requests are not counted": the 3 left after the 2 still admit 3 (upstream's counter is at 7).
    const rest = await service.client.shouldRateLimit(withHits(KEY_VALUE_REQUEST, 3));
    expectStatuses(rest.statuses, [{ code: 'OK', limit: minute(5), remaining: 0 }]);
  });

  it('TestGetResponseStatusOverLimitShadowMode: a shadow limit passed by a call answers OK with 0 left', async () => {
    const service = await serve(KEY_VALUE(5, true));
    await awayFromMinuteEnd();
    await spend(service.client, withHits(KEY_VALUE_REQUEST, 2), 1);
    const answer = await service.client.shouldRateLimit(withHits(KEY_VALUE_REQUEST, 5));
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [{ code: 'OK', limit: minute(5), remaining: 0 }]);
    expect(await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: EVENT })).toBe(1);
    expect(await decisions(service, 'shadow_denied')).toBe(1);
  });

  it('TestGetResponseStatusBelowLimit: a call within the limit is OK with what is left', async () => {
    const service = await serve(KEY_VALUE(10));
    await awayFromMinuteEnd();
    await spend(service.client, withHits(KEY_VALUE_REQUEST, 2), 1);
    const answer = await service.client.shouldRateLimit(withHits(KEY_VALUE_REQUEST, 4));
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [{ code: 'OK', limit: minute(10), remaining: 4 }]);
    // Upstream's within_limit, per call in memgate's decisions; no shadow_mode count.
    expect(await decisions(service, 'allowed')).toBe(2);
    expect(await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: EVENT })).toBeUndefined();
  });

  it('TestGetResponseStatusBelowLimitShadowMode: a shadow limit within the limit is OK with what is left, no shadow count', async () => {
    const service = await serve(KEY_VALUE(10, true));
    await awayFromMinuteEnd();
    await spend(service.client, withHits(KEY_VALUE_REQUEST, 2), 1);
    const answer = await service.client.shouldRateLimit(withHits(KEY_VALUE_REQUEST, 4));
    expect(answer.overall_code).toBe('OK');
    expectStatuses(answer.statuses, [{ code: 'OK', limit: minute(10), remaining: 4 }]);
    expect(await decisions(service, 'allowed')).toBe(2);
    expect(await metric(service, 'memgate_envoy_shadow_over_limit_total', { event: EVENT })).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------

/** The three names a health check may ask: the server's, upstream's "ratelimit", and the service's full name. */
const HEALTH_NAMES = ['', 'ratelimit', 'envoy.service.ratelimit.v3.RateLimitService'];

/** A Memcached of the test's own on `port`, started and stopped as upstream's tests mark Redis ok and failed. */
const memcachedOn = (port: number): Promise<MemcachedProcess> => startMemcachedProcess({ port });

/** What `read` answers once it settles on `want`, within `ms`, or its last answer. */
async function settlesOn<T>(read: () => Promise<T>, want: T, ms = 8_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last = await read();
  while (JSON.stringify(last) !== JSON.stringify(want) && Date.now() < deadline) {
    await sleep(100);
    last = await read();
  }
  return last;
}

const healthcheck = async (service: EnvoyService) => {
  const response = await fetch(`${service.url}/healthcheck`);
  return { status: response.status, body: await response.text() };
};
const grpcHealth = (service: EnvoyService) => Promise.all(HEALTH_NAMES.map((name) => service.client.health(name)));
const all = (status: string) => HEALTH_NAMES.map(() => status);

describe('upstream test/server/health_test.go', () => {
  /**
   * A service whose only Memcached is on a port where nothing answers yet: unhealthy until it
   * is confirmed. The port is held meanwhile by a listener that hangs up on every connection:
   * left free, another worker's process listening on port 0 could take it before memcached
   * does, and the service would be tested against that stranger.
   */
  const unconfirmed = async (env: Record<string, string> = {}) => {
    const holder = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    const service = await serve(DIFFERENT_DOMAIN(), {
      MEMCACHED_SERVERS: `127.0.0.1:${port}`,
      MEMCACHED_TIMEOUT_MS: '200',
      ...env,
    });
    /** Lets the port go: before memcached takes it, or when the test ends without that. */
    const release = async () => {
      if (holder.listening) await new Promise((resolve) => holder.close(resolve));
    };
    /** Memcached on the port, taken from the holder. */
    const memcachedNow = async () => {
      await release();
      return memcachedOn(port);
    };
    return { service, port, memcachedNow, release };
  };

  const httpCycle = async (env: Record<string, string>) => {
    const { service, port, memcachedNow, release } = await unconfirmed(env);
    let server: MemcachedProcess | undefined;
    // What the service says of its store, so that a cycle that does not settle says why.
    const readiness = async () => `/readyz: ${await (await fetch(`${service.url}/readyz`)).text()}`;
    try {
      // The store starts unhealthy until the connection is confirmed.
      expect(await healthcheck(service)).toEqual({ status: 500, body: '' });
      server = await memcachedNow();
      const up = { status: 200, body: 'OK' };
      expect(await settlesOn(() => healthcheck(service), up), await readiness()).toEqual(up);
      await server.stop();
      const down = { status: 500, body: '' };
      expect(await settlesOn(() => healthcheck(service), down), await readiness()).toEqual(down);
      server = await memcachedOn(port);
      expect(await settlesOn(() => healthcheck(service), up), await readiness()).toEqual(up);
    } finally {
      await server?.stop();
      await release();
    }
  };

  const grpcCycle = async (env: Record<string, string>) => {
    const { service, memcachedNow, release } = await unconfirmed(env);
    let server: MemcachedProcess | undefined;
    try {
      // docs/envoy.md, Health: "", ratelimit and the full name all follow readiness (upstream's "" stays SERVING, the full name is not registered).
      expect(await grpcHealth(service)).toEqual(all('NOT_SERVING'));
      server = await memcachedNow();
      expect(await settlesOn(() => grpcHealth(service), all('SERVING'))).toEqual(all('SERVING'));
      await server.stop();
      expect(await settlesOn(() => grpcHealth(service), all('NOT_SERVING'))).toEqual(all('NOT_SERVING'));
    } finally {
      await server?.stop();
      await release();
    }
  };

  it('TestHealthCheck: /healthcheck answers 500 until the store is confirmed, 200 while it answers, 500 when it fails', async () => {
    await httpCycle({});
  });

  it('TestHealthyWithAtLeastOneConfigLoaded: with HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED, /healthcheck still follows the store', async () => {
    // Its configuration loaded (memgate serves only once it is), the store decides, as upstream's second component.
    await httpCycle({ HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true' });
  });

  it('TestGrpcHealthCheck: gRPC health NOT_SERVING until the store is confirmed, SERVING while it answers, NOT_SERVING when it fails', async () => {
    await grpcCycle({});
  });

  it('TestGrpcHealthyWithAtLeastOneConfigLoaded: with HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED, gRPC health follows config and store', async () => {
    await grpcCycle({ HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true' });
  });
});
