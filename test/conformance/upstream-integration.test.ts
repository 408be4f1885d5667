// envoyproxy/ratelimit's own Memcached and integration tests, ported case by case: its
// test/memcached/cache_impl_test.go, the Memcached, reload, share_threshold and TLS cases of
// test/integration/integration_test.go, and what its integration-test/scripts/*.sh check through
// Envoy, asked here as Envoy's filter asks. memgate is started from upstream's environment
// (BACKEND_TYPE=memcache, MEMCACHE_HOST_PORT, RUNTIME_ROOT/RUNTIME_SUBDIRECTORY…) and counts in a
// real Memcached. Upstream's mocked counter values are reached here by counting first.
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import type {
  RlsClient,
  WireDescriptorIn,
  WireRequestIn,
  WireResponseOut,
  WireStatusOut,
} from '../../scripts/lib/rls-client.js';
import { oneDescriptor } from '../../scripts/lib/rls-client.js';
import { startMemcachedProcess, uniquePrefix, useMemcached } from '../helpers/memcached.js';
import {
  itemTtls,
  makeTlsMaterial,
  startRefused,
  startStatsd,
  tlsCall,
  tlsHandshake,
  upstreamRuntime,
  useStatsd,
  useUpstreamServices,
  type StatsdServer,
  type UpstreamService,
} from './helpers-integration.js';
import {
  awayFromWindowEnd as awayFromUnitEnd,
  inOneWindow as inOneUnitWindow,
  UNIT_SECONDS,
} from '../helpers/window.js';

const memcached = useMemcached();
// Before the services: they are closed first after a test (useStatsd).
const statsdServer = useStatsd();
const start = useUpstreamServices();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SECONDS = UNIT_SECONDS;
type Unit = keyof typeof SECONDS;

const awayFromWindowEnd = (unit: Unit) => awayFromUnitEnd(SECONDS[unit]);
/** Runs `attempt` in one `unit` window, once more if it ran into the window's end (see test/helpers/window.ts). */
const inOneWindow = (unit: Unit, attempt: () => Promise<void>, neededMs?: number) =>
  inOneUnitWindow(SECONDS[unit], attempt, neededMs);

/** upstream's utils.CalculateReset: the unit's length less the whole seconds its window has run. */
const resetOf = (unit: Unit) => SECONDS[unit] - (Math.floor(Date.now() / 1000) % SECONDS[unit]);

/** A status as upstream's tests write it: the limit, what is left, and some reset. */
const limited = (code: 'OK' | 'OVER_LIMIT', requestsPerUnit: number, unit: Unit, remaining: number) => ({
  code,
  current_limit: { name: '', requests_per_unit: requestsPerUnit, unit },
  limit_remaining: remaining,
  duration_until_reset: { seconds: expect.any(Number) as number, nanos: 0 },
});
/** A descriptor no limit matches: OK, no limit, nothing left, no reset. */
const NO_LIMIT = { code: 'OK', current_limit: null, limit_remaining: 0, duration_until_reset: null };

const entries = (...pairs: [string, string][]) => pairs.map(([key, value]) => ({ key, value }));
const descriptor = (pairs: [string, string][], hits?: number): WireDescriptorIn => ({
  entries: entries(...pairs),
  ...(hits === undefined ? {} : { hits_addend: { value: hits } }),
});
const call = (client: RlsClient, domain: string, descriptors: WireDescriptorIn[], hitsAddend?: number) =>
  client.shouldRateLimit({ domain, descriptors, ...(hitsAddend === undefined ? {} : { hits_addend: hitsAddend }) });
/** Counts `hits` under one descriptor, as the counter values upstream's mocks start from. */
async function countFirst(client: RlsClient, domain: string, pairs: [string, string][], hits: number): Promise<void> {
  const answer = await call(client, domain, [descriptor(pairs, hits)]);
  expect(answer.overall_code).toBe('OK');
}
const codes = (answer: WireResponseOut) => [answer.overall_code, ...answer.statuses.map((status) => status.code)];

// ---------------------------------------------------------------------------------------------
// upstream test/memcached/cache_impl_test.go: its limits, as a file. The limits upstream gives
// per second are per minute here, so that the counting before a check stays in its window.
const CACHE_IMPL = `
domain: domain
descriptors:
  - key: key
    value: value
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: key
    value: value1
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: key2
    value: value2
    descriptors:
      - key: subkey2
        value: subvalue2
        rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: key3
    value: value3
    rate_limit: { unit: hour, requests_per_unit: 10 }
    descriptors:
      - key: subkey3
        value: subvalue3
        rate_limit: { unit: day, requests_per_unit: 10 }
  - key: key4
    value: value4
    rate_limit: { unit: hour, requests_per_unit: 15 }
  - key: key5
    value: value5
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: key6
    value: value6
    rate_limit: { unit: minute, requests_per_unit: 8 }
  - key: key7
    value: value7
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: key8
    value: value8
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: key9
    value: value9
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: key10
    value: value10
    rate_limit: { unit: minute, requests_per_unit: 10 }
`;

/** memgate on upstream's Memcached settings, with CACHE_IMPL's limits, plus `env`. */
const startCacheImpl = (env: Record<string, string> = {}, servers = memcached().servers) =>
  start({ ...upstreamRuntime({ 'domain.yaml': CACHE_IMPL }).env, MEMCACHE_HOST_PORT: servers, ...env });

/** TestNearLimit's checks, each made after counting up to the value upstream's mock starts from, in one minute window. */
async function nearLimitAnswers(client: RlsClient): Promise<void> {
  const key = (n: number): [string, string][] => [[`key${n}`, `value${n}`]];
  const one = async (n: number, hits: number) => (await call(client, 'domain', [descriptor(key(n))], hits)).statuses;
  // 15 an hour: 10 counted, then 11 (OK, 4 left); 12, then 13 (OK, 2 left); 15, then 16 (over).
  await countFirst(client, 'domain', key(4), 10);
  expect(await one(4, 1)).toEqual([limited('OK', 15, 'HOUR', 4)]);
  await countFirst(client, 'domain', key(4), 1);
  expect(await one(4, 1)).toEqual([limited('OK', 15, 'HOUR', 2)]);
  await countFirst(client, 'domain', key(4), 2);
  expect(await one(4, 1)).toEqual([limited('OVER_LIMIT', 15, 'HOUR', 0)]);
  // hits_addend above 1: all of it under the limit, under the near-limit ratio (2 + 3 of 20).
  await countFirst(client, 'domain', key(5), 2);
  expect(await one(5, 3)).toEqual([limited('OK', 20, 'MINUTE', 15)]);
  // Under the limit, some of it over the ratio (5 + 2 of 8).
  await countFirst(client, 'domain', key(6), 5);
  expect(await one(6, 2)).toEqual([limited('OK', 8, 'MINUTE', 1)]);
  // Under the limit, all of it over the ratio (16 + 3 of 20).
  await countFirst(client, 'domain', key(7), 16);
  expect(await one(7, 3)).toEqual([limited('OK', 20, 'MINUTE', 1)]);
  // Some of it over the limit (19 + 3 of 20).
  await countFirst(client, 'domain', key(8), 19);
  expect(await one(8, 3)).toEqual([limited('OVER_LIMIT', 20, 'MINUTE', 0)]);
  // Some of it in all three places (15 + 7 of 20).
  await countFirst(client, 'domain', key(9), 15);
  expect(await one(9, 7)).toEqual([limited('OVER_LIMIT', 20, 'MINUTE', 0)]);
  // All of it over the limit (the limit of 10 reached, then 3 more).
  await countFirst(client, 'domain', key(10), 10);
  expect(await one(10, 3)).toEqual([limited('OVER_LIMIT', 10, 'MINUTE', 0)]);
}

describe('upstream test/memcached/cache_impl_test.go', () => {
  it('TestMemcached: a descriptor with 4 of 10 counted answers OK with 5 left, reset at the end of its window', async () => {
    const { client } = await startCacheImpl();
    await awayFromWindowEnd('MINUTE');
    await countFirst(client, 'domain', [['key', 'value']], 4);
    const answer = await call(client, 'domain', [descriptor([['key', 'value']])]);
    expect(answer).toMatchObject({ overall_code: 'OK', statuses: [limited('OK', 10, 'MINUTE', 5)] });
    expect(Math.abs((answer.statuses[0]?.duration_until_reset?.seconds ?? 0) - resetOf('MINUTE'))).toBeLessThanOrEqual(
      2,
    );
  });

  it('TestMemcached: a nested descriptor at its limit is OVER_LIMIT, its parent without a limit OK with none', async () => {
    const { client } = await startCacheImpl();
    const nested: [string, string][] = [
      ['key2', 'value2'],
      ['subkey2', 'subvalue2'],
    ];
    await awayFromWindowEnd('MINUTE');
    await countFirst(client, 'domain', nested, 10);
    const answer = await call(client, 'domain', [descriptor([['key2', 'value2']]), descriptor(nested)]);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expect(answer.statuses).toEqual([NO_LIMIT, limited('OVER_LIMIT', 10, 'MINUTE', 0)]);
  });

  it("TestMemcached: each descriptor's own hits_addend (1 and 2) on an hour and a day limit, both full: both OVER_LIMIT", async () => {
    const { client } = await startCacheImpl();
    const outer: [string, string][] = [['key3', 'value3']];
    const inner: [string, string][] = [...outer, ['subkey3', 'subvalue3']];
    await awayFromWindowEnd('HOUR');
    await countFirst(client, 'domain', outer, 10);
    await countFirst(client, 'domain', inner, 10);
    const answer = await call(client, 'domain', [descriptor(outer, 1), descriptor(inner, 2)]);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expect(answer.statuses).toEqual([limited('OVER_LIMIT', 10, 'HOUR', 0), limited('OVER_LIMIT', 10, 'DAY', 0)]);
    const [hour, day] = answer.statuses.map((status) => status.duration_until_reset?.seconds ?? 0);
    expect(Math.abs((hour ?? 0) - resetOf('HOUR'))).toBeLessThanOrEqual(2);
    expect(Math.abs((day ?? 0) - resetOf('DAY'))).toBeLessThanOrEqual(2);
  });

  it('TestMemcachedGetError: a key not in Memcached is a first hit (9 of 10 left); Memcached failing, the call is answered OK', async () => {
    const own = await startMemcachedProcess();
    try {
      const { client } = await startCacheImpl({}, own.servers);
      expect((await call(client, 'domain', [descriptor([['key', 'value1']])])).statuses).toEqual([
        limited('OK', 10, 'MINUTE', 9),
      ]);
      await own.stop();
      // docs/envoy.md, Protocol behaviours, "Memcached fails or is late": onStoreError decides, allow by default.
      const answer = await call(client, 'domain', [descriptor([['key', 'value']])]);
      expect(answer.overall_code).toBe('OK');
      // Its status names the limit; upstream's also says 9 left and when the window resets, as if
      // the counter were 0, where memgate says 0 left and no reset.
      expect(answer.statuses).toMatchObject([{ code: 'OK', current_limit: { requests_per_unit: 10, unit: 'MINUTE' } }]);
    } finally {
      await own.stop();
    }
  });

  it('TestOverLimitWithLocalCache: 11, 13 then 16 of 15 counted; the next denial comes from memory without Memcached, counted over_limit_with_local_cache', async () => {
    const statsd = await statsdServer();
    const service = await startCacheImpl({
      LOCAL_CACHE_SIZE_IN_BYTES: '100',
      // memgate repeats a denial for a second by default; the next check here may come later on a busy machine.
      MEMGATE_MAX_DENIAL_CACHE_MS: '30000',

      USE_STATSD: 'true',
      STATSD_HOST: '127.0.0.1',
      STATSD_PORT: String(statsd.port),
      // Sent every 100 ms (the least), so the sums arrive soon after the checks.
      STATS_FLUSH_INTERVAL: '100ms',
    });
    const key: [string, string][] = [['key4', 'value4']];
    const check = async () => (await call(service.client, 'domain', [descriptor(key)])).statuses;
    await awayFromWindowEnd('HOUR');
    await countFirst(service.client, 'domain', key, 10);
    expect(await check()).toEqual([limited('OK', 15, 'HOUR', 4)]);
    await countFirst(service.client, 'domain', key, 1);
    expect(await check()).toEqual([limited('OK', 15, 'HOUR', 2)]);
    await countFirst(service.client, 'domain', key, 2);
    expect(await check()).toEqual([limited('OVER_LIMIT', 15, 'HOUR', 0)]);
    expect(await service.metric('memgate_local_cache_total', { cache: 'denial', result: 'hit' })).toBe(0);
    expect(await check()).toEqual([limited('OVER_LIMIT', 15, 'HOUR', 0)]);
    // docs/envoy.md, upstream environment, LOCAL_CACHE_SIZE_IN_BYTES: a fresh denial is repeated from memory
    // (upstream's over_limit_with_local_cache).
    expect(await service.metric('memgate_local_cache_total', { cache: 'denial', result: 'hit' })).toBe(1);
    expect(
      await service.metric('memgate_decisions_total', { event: 'envoy:domain.key4_value4', outcome: 'denied' }),
    ).toBe(2);
    // Upstream's stats of the four checks (total 4, within 2, near 1, over 2, over_limit_with_local_cache 1),
    // plus the 13 hits counted first (all within, 2 of them near): the denial from memory is over_limit and
    // over_limit_with_local_cache, as upstream's local cache counts it (base_limiter.go).
    const stat = (name: string) => statsd.counter(`ratelimit.service.rate_limit.domain.key4_value4.${name}`);
    const names = ['total_hits', 'within_limit', 'near_limit', 'over_limit', 'over_limit_with_local_cache'];
    const expected = [17, 15, 3, 2, 1];
    for (let waited = 0; waited < 5_000 && stat('total_hits') < 17; waited += 50) await sleep(50);
    expect(names.map(stat)).toEqual(expected);
  });

  it('TestNearLimit: the answers around the near-limit ratio and the limit, hits_addend 1 and above', async () => {
    // A service of its own each run: upstream's keys are fixed, memgate's prefix is not.
    await inOneWindow('MINUTE', async () => nearLimitAnswers((await startCacheImpl()).client));
  });

  it("TestNearLimit: NEAR_LIMIT_RATIO=0.8's near_limit, over_limit and within_limit statistics, sent to statsd", async () => {
    // A statsd and a service of their own each run.
    await inOneWindow('MINUTE', async () => {
      const statsd = await startStatsd();
      try {
        const { client } = await startCacheImpl({
          NEAR_LIMIT_RATIO: '0.8',
          USE_STATSD: 'true',
          STATSD_HOST: '127.0.0.1',
          STATSD_PORT: String(statsd.port),
          STATS_FLUSH_INTERVAL: '100ms',
        });
        await nearLimitAnswers(client);
        // Totals of the counting before each check and of the check, by upstream's rules: hits past
        // floor(limit × 0.8) and within the limit are near_limit, hits past the limit over_limit.
        const expected: Record<string, [near: number, over: number, within: number]> = {
          key4_value4: [3, 1, 15],
          key5_value5: [0, 0, 5],
          key6_value6: [1, 0, 7],
          key7_value7: [3, 0, 19],
          key8_value8: [4, 2, 19],
          key9_value9: [4, 2, 15],
          key10_value10: [2, 3, 10],
        };
        const stat = (key: string, name: string) =>
          statsd.counter(`ratelimit.service.rate_limit.domain.${key}.${name}`);
        const seen = () =>
          Object.fromEntries(
            Object.keys(expected).map((key) => [
              key,
              [stat(key, 'near_limit'), stat(key, 'over_limit'), stat(key, 'within_limit')],
            ]),
          );
        for (let waited = 0; waited < 5_000 && JSON.stringify(seen()) !== JSON.stringify(expected); waited += 50)
          await sleep(50);
        expect(seen()).toEqual(expected);
      } finally {
        await statsd.close();
      }
    });
  });

  it("TestMemcacheWithJitter: EXPIRATION_JITTER_MAX_SECONDS=3600 lengthens each new counter's life by a random whole number of seconds below 3600", async () => {
    const prefix = uniquePrefix();
    const { client } = await startCacheImpl({ MEMGATE_KEY_PREFIX: prefix, EXPIRATION_JITTER_MAX_SECONDS: '3600' });
    // CACHE_IMPL's minute limits, each its own counters: a crowd of keys made at once.
    const minuteDescriptors: [string, string][][] = [
      [['key', 'value']],
      [['key', 'value1']],
      [
        ['key2', 'value2'],
        ['subkey2', 'subvalue2'],
      ],
      ...[5, 6, 7, 8, 9, 10].map((n): [string, string][] => [[`key${n}`, `value${n}`]]),
    ];
    await awayFromWindowEnd('MINUTE');
    for (const pairs of minuteDescriptors)
      expect((await call(client, 'domain', [descriptor(pairs)])).overall_code).toBe('OK');
    const left = resetOf('MINUTE');
    const ttls = [...(await itemTtls(memcached().servers, `${prefix}:`)).values()];
    expect(ttls.length).toBeGreaterThanOrEqual(minuteDescriptors.length);
    // docs/envoy.md, upstream environment, EXPIRATION_JITTER_MAX_SECONDS: read as MEMCACHED_EXPIRATION_JITTER_S.
    // Each counter lives as long as its window can read it, plus 2 s (see the test below), plus 0 to 3599 s.
    const unjittered = SECONDS.MINUTE + 2;
    for (const ttl of ttls) {
      expect(ttl).toBeGreaterThanOrEqual(left - 1);
      expect(ttl).toBeLessThanOrEqual(unjittered + 3600);
    }
    // Upstream's test pins rand; here the draws are real. With this many keys, the chance that
    // none drew more than 60 s is below (61/3600)^9, about 1e-16.
    expect(Math.max(...ttls)).toBeGreaterThan(unjittered + 60);
  });

  it('TestMemcacheAdd: the first hits of a key, at once from two instances, are each counted once', async () => {
    const prefix = uniquePrefix();
    const [one, two] = await Promise.all([
      startCacheImpl({ MEMGATE_KEY_PREFIX: prefix }),
      startCacheImpl({ MEMGATE_KEY_PREFIX: prefix }),
    ]);
    const request = oneDescriptor('domain', ['key', 'value']);
    await awayFromWindowEnd('MINUTE');
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? one : two).client.shouldRateLimit(request)),
    );
    expect(answers.map((answer) => answer.overall_code)).toEqual(Array<string>(10).fill('OK'));
    // docs/envoy.md, "Exact limits across instances": each of the ten saw a count of its own.
    expect(answers.map((answer) => answer.statuses[0]?.limit_remaining).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
    expect((await one.client.shouldRateLimit(request)).overall_code).toBe('OVER_LIMIT');
  });

  it("TestMemcacheAdd: a minute limit's first hit adds its counter, which lives as long as its window", async () => {
    const prefix = uniquePrefix();
    const { client } = await startCacheImpl({ MEMGATE_KEY_PREFIX: prefix });
    await awayFromWindowEnd('MINUTE');
    expect(
      (
        await call(client, 'domain', [
          descriptor([
            ['key2', 'value2'],
            ['subkey2', 'subvalue2'],
          ]),
        ])
      ).statuses,
    ).toEqual([limited('OK', 10, 'MINUTE', 9)]);
    const left = resetOf('MINUTE');
    const ttls = [...(await itemTtls(memcached().servers, `${prefix}:`)).values()];
    expect(ttls.length).toBeGreaterThan(0);
    // docs/envoy.md, "Counting: counter lifetime": without EXPIRATION_JITTER_MAX_SECONDS, a bucket lives as
    // long as a window can read it, plus 2 s (upstream: the unit's 60 s from the first hit, plus its default 300 s jitter).
    for (const ttl of ttls) {
      expect(ttl).toBeGreaterThanOrEqual(left - 1);
      expect(ttl).toBeLessThanOrEqual(SECONDS.MINUTE + 2);
    }
  });

  it('TestNewRateLimitCacheImplFromSettingsWhenSrvCannotBeResolved: a MEMCACHE_SRV that does not resolve stops the start', () => {
    const run = startRefused({
      ...upstreamRuntime({ 'domain.yaml': CACHE_IMPL }).env,
      USE_STATSD: 'false',
      BACKEND_TYPE: 'memcache',
      MEMCACHE_SRV: '_something._tcp.example.invalid',
    });
    expect(run.status).not.toBe(0);
    expect(run.status).not.toBeNull();
    expect(run.stdout).not.toContain('listening');
    expect(run.stderr).toContain('_something._tcp.example.invalid');
  });

  it('TestNewRateLimitCacheImplFromSettingsWhenHostAndPortAndSrvAreBothSet: MEMCACHE_SRV beside MEMCACHE_HOST_PORT stops the start', () => {
    const run = startRefused({
      ...upstreamRuntime({ 'domain.yaml': CACHE_IMPL }).env,
      USE_STATSD: 'false',
      BACKEND_TYPE: 'memcache',
      MEMCACHE_SRV: '_something._tcp.example.invalid',
      MEMCACHE_HOST_PORT: memcached().servers,
    });
    expect(run.status).not.toBe(0);
    expect(run.status).not.toBeNull();
    expect(run.stdout).not.toContain('listening');
    expect(run.stderr).toContain('MEMCACHE_SRV');
    expect(run.stderr).toContain('MEMCACHE_HOST_PORT');
  });
});

// ---------------------------------------------------------------------------------------------
// upstream test/integration/runtime/current/ratelimit: its config/ files, and reload.yaml beside them.
const INTEGRATION_CONFIG = {
  'another.yaml': `domain: another
descriptors:
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20

  - key: key3
    rate_limit:
      unit: hour
      requests_per_unit: 10

  - key: key2_local
    rate_limit:
      unit: minute
      requests_per_unit: 20

  - key: key3_local
    rate_limit:
      unit: hour
      requests_per_unit: 10

  - key: key4
    rate_limit:
      unit: day
      requests_per_unit: 20

  - key: key4_local
    rate_limit:
      unit: day
      requests_per_unit: 20
`,
  'basic.yaml': `domain: basic
descriptors:
  - key: key1
    rate_limit:
      unit: second
      requests_per_unit: 50

  - key: key1_local
    rate_limit:
      unit: second
      requests_per_unit: 50

  - key: one_per_minute
    rate_limit:
      unit: minute
      requests_per_unit: 1
`,
  'share_threshold.yaml': `domain: share-threshold-test
descriptors:
  # Test case 1: share_threshold: true - files/* should share threshold
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 10

  - key: files_no_share
    value: files_no_share/*
    rate_limit:
      unit: hour
      requests_per_unit: 10
`,
};
const RELOAD_YAML = `domain: reload
descriptors:
  - key: key1
    rate_limit:
      unit: second
      requests_per_unit: 50

  - key: block
    rate_limit:
      unit: second
      requests_per_unit: 0

  - key: one_per_minute
    rate_limit:
      unit: minute
      requests_per_unit: 1
`;

/** upstream's makeSimpleMemcacheSettings: its runtime directory, BACKEND_TYPE=memcache and the servers. */
const memcacheSettings = (servers: string, env: Record<string, string> = {}) => ({
  ...upstreamRuntime(INTEGRATION_CONFIG, { 'reload.yaml': RELOAD_YAML }).env,
  BACKEND_TYPE: 'memcache',
  MEMCACHE_HOST_PORT: servers,
  ...env,
});

/**
 * upstream's testBasicBaseConfig, its answers (its statsd and local cache statistics are not
 * memgate's): `local` names the keys `…_local`, as upstream does when the local cache is on.
 */
async function basicBaseConfig(client: RlsClient, local: boolean): Promise<void> {
  const key = (name: string) => (local ? `${name}_local` : name);
  const unique = uniquePrefix();
  expect(await client.shouldRateLimit(oneDescriptor('foo', [key('hello'), 'world']))).toMatchObject({
    overall_code: 'OK',
    statuses: [NO_LIMIT],
  });
  expect(await client.shouldRateLimit(oneDescriptor('basic', [key('key1'), `foo-${unique}`]))).toMatchObject({
    overall_code: 'OK',
    statuses: [limited('OK', 50, 'SECOND', 49)],
  });

  // duration_until_reset ticks down: the same key of a day limit asked twice, over a second apart
  // (it is whole seconds, rounded up, by a clock that never goes back), the loops below between.
  // Away from a day's end by more than the minute loops can take, waiting for their window included.
  await awayFromUnitEnd(SECONDS.DAY, 30_000);
  const durationTest = oneDescriptor('another', [key('key4'), `durTest-${uniquePrefix()}`]);
  const first = await client.shouldRateLimit(durationTest);
  const aSecondLater = sleep(1_100);

  // One minute window holds both loops; keys of their own each run. A few dozen calls: 3 s of
  // the window is plenty, and a run the window's end cut short runs again.
  await inOneWindow(
    'MINUTE',
    async () => {
      const unique = uniquePrefix();
      // A random key over a minute limit of 20: 25 calls.
      for (let i = 0; i < 25; i++) {
        const answer = await client.shouldRateLimit(oneDescriptor('another', [key('key2'), `a-${unique}`]));
        const over = i >= 20;
        expect(answer).toMatchObject({
          overall_code: over ? 'OVER_LIMIT' : 'OK',
          statuses: [limited(over ? 'OVER_LIMIT' : 'OK', 20, 'MINUTE', over ? 0 : 20 - (i + 1))],
        });
      }

      // Two keys of the domain, 20 a minute and 10 an hour: 15 calls.
      for (let i = 0; i < 15; i++) {
        const answer = await client.shouldRateLimit({
          domain: 'another',
          descriptors: [
            { entries: entries([key('key2'), `b-${unique}`]) },
            { entries: entries([key('key3'), `b-${unique}`]) },
          ],
        });
        const over = i >= 10;
        // docs/envoy.md, "Refused requests are not counted": from the 11th call on, key2 stays at its 10
        // (upstream's Memcached counts on: 20 - (i + 1) left).
        expect(answer).toMatchObject({
          overall_code: over ? 'OVER_LIMIT' : 'OK',
          statuses: [
            limited('OK', 20, 'MINUTE', over ? 10 : 20 - (i + 1)),
            limited(over ? 'OVER_LIMIT' : 'OK', 10, 'HOUR', over ? 0 : 10 - (i + 1)),
          ],
        });
      }
    },
    3_000,
  );

  await aSecondLater;
  const second = await client.shouldRateLimit(durationTest);
  expect(second.statuses[0]?.duration_until_reset?.seconds).toBeLessThan(
    first.statuses[0]?.duration_until_reset?.seconds ?? 0,
  );
}

/**
 * Polls memgate's /readyz until its policy version is not `before` (upstream waits for
 * config_load_success). Past 10 s, the error quotes what the service logged of its policies
 * and their watch, to tell a change not seen from a reload refused or still running.
 */
async function policyVersion({ url, lines }: Pick<UpstreamService, 'url' | 'lines'>, before?: string): Promise<string> {
  const version = async () =>
    ((await (await fetch(`${url}/readyz`)).json()) as { policyVersion: string }).policyVersion;
  for (let waited = 0; waited < 10_000; waited += 100) {
    const now = await version();
    if (now !== before) return now;
    await sleep(100);
  }
  const said = lines.filter((line) => /polic|watch/i.test(line));
  throw new Error(
    `the policies did not reload within 10 s (still ${String(before)}); the service said:\n${said.join('')}`,
  );
}

describe('upstream test/integration/integration_test.go', () => {
  it('TestBasicConfigMemcache: Memcache', async () => {
    const { client } = await start(memcacheSettings(memcached().servers));
    await basicBaseConfig(client, false);
  });

  it('TestBasicConfigMemcache: MemcacheWithLocalCache (LOCAL_CACHE_SIZE_IN_BYTES=1000)', async () => {
    const { client } = await start(memcacheSettings(memcached().servers, { LOCAL_CACHE_SIZE_IN_BYTES: '1000' }));
    await basicBaseConfig(client, true);
  });

  it('TestBasicConfigMemcache: MemcacheWithPrefix (CACHE_KEY_PREFIX=prefix:), its counters under the prefix', async () => {
    const { client } = await start(memcacheSettings(memcached().servers, { CACHE_KEY_PREFIX: 'prefix:' }));
    await basicBaseConfig(client, false);
    const keys = [...(await itemTtls(memcached().servers, 'prefix:')).keys()];
    expect(keys.length).toBeGreaterThan(0);
  });

  it('TestConfigMemcacheWithMaxIdleConns: MemcacheWithDefaultMaxIdleConns (MEMCACHE_MAX_IDLE_CONNS unset)', async () => {
    const { client } = await start(memcacheSettings(memcached().servers));
    await basicBaseConfig(client, false);
  });

  it('TestConfigMemcacheWithMaxIdleConns: MemcacheWithSpecifiedMaxIdleConns (MEMCACHE_MAX_IDLE_CONNS=100)', async () => {
    const { client } = await start(memcacheSettings(memcached().servers, { MEMCACHE_MAX_IDLE_CONNS: '100' }));
    await basicBaseConfig(client, false);
  });

  it('TestMultiNodeMemcache: MemcacheMultipleNodes (two servers in MEMCACHE_HOST_PORT)', async () => {
    const nodes = await Promise.all([startMemcachedProcess(), startMemcachedProcess()]);
    try {
      const { client } = await start(memcacheSettings(nodes.map((node) => node.servers).join(',')));
      await basicBaseConfig(client, false);
    } finally {
      await Promise.all(nodes.map((node) => node.stop()));
    }
  });

  it('TestBasicReloadConfig: BasicWithoutWatchRoot (RUNTIME_WATCH_ROOT=false)', async () => {
    const { client } = await start(memcacheSettings(memcached().servers, { RUNTIME_WATCH_ROOT: 'false' }));
    await basicBaseConfig(client, false);
  });

  it('TestBasicReloadConfig: ReloadWithoutWatchRoot: a file copied into config/ is loaded, and its removal reloads', async () => {
    const runtime = upstreamRuntime(INTEGRATION_CONFIG, { 'reload.yaml': RELOAD_YAML });
    const service = await start({
      ...runtime.env,
      BACKEND_TYPE: 'memcache',
      MEMCACHE_HOST_PORT: memcached().servers,
      RUNTIME_WATCH_ROOT: 'false',
    });
    const { client } = service;
    expect(await client.shouldRateLimit(oneDescriptor('reload', ['block', 'foo']))).toMatchObject({
      overall_code: 'OK',
      statuses: [NO_LIMIT],
    });
    const before = await policyVersion(service);
    writeFileSync(join(runtime.config, 'reload.yaml'), readFileSync(join(runtime.subdirectory, 'reload.yaml')));
    const loaded = await policyVersion(service, before);
    expect(await client.shouldRateLimit(oneDescriptor('reload', ['key1', 'foo']))).toMatchObject({
      overall_code: 'OK',
      statuses: [limited('OK', 50, 'SECOND', 49)],
    });
    rmSync(join(runtime.config, 'reload.yaml'));
    await policyVersion(service, loaded);
    expect((await client.shouldRateLimit(oneDescriptor('reload', ['key1', 'foo']))).statuses).toEqual([NO_LIMIT]);
  });

  it('TestShareThreshold: values matching files/* share one threshold; files_no_share/* values each have their own', async () => {
    const { client } = await start(memcacheSettings(memcached().servers));
    const domain = 'share-threshold-test';
    // Its limit is an hour's fixed window: every call below must fall in one.
    await awayFromWindowEnd('HOUR');
    for (let i = 0; i < 10; i++) {
      const answer = await client.shouldRateLimit(oneDescriptor(domain, ['files', 'files/a.pdf']));
      expect(['OK', 'OVER_LIMIT']).toContain(answer.overall_code);
    }
    expect(await client.shouldRateLimit(oneDescriptor(domain, ['files', 'files/b.csv']))).toMatchObject({
      overall_code: 'OVER_LIMIT',
      statuses: [limited('OVER_LIMIT', 10, 'HOUR', 0)],
    });
    const base = uniquePrefix();
    for (let i = 0; i < 10; i++) {
      expect(
        await client.shouldRateLimit(oneDescriptor(domain, ['files_no_share', `files_no_share/${base}-${i}`])),
      ).toMatchObject({
        overall_code: 'OK',
        statuses: [limited('OK', 10, 'HOUR', 9)],
      });
    }
  });

  it('Test_mTLS: GRPC_SERVER_USE_TLS with a client CA and SAN: a client with a certificate of that CA is answered, one without is not', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'memgate-upstream-tls-'));
    const server = makeTlsMaterial(folder, 'server', 'serverAuth');
    const clientCerts = makeTlsMaterial(folder, 'client', 'clientAuth');
    const { address } = await start(
      memcacheSettings(memcached().servers, {
        GRPC_SERVER_USE_TLS: 'true',
        GRPC_SERVER_TLS_CERT: server.cert,
        GRPC_SERVER_TLS_KEY: server.key,
        GRPC_CLIENT_TLS_CACERT: clientCerts.ca,
        GRPC_CLIENT_TLS_SAN: 'localhost',
      }),
    );
    const request = oneDescriptor('basic', ['key1', `tls-${uniquePrefix()}`]);
    const answer = await tlsCall(address, readFileSync(server.ca), request, {
      key: readFileSync(clientCerts.key),
      cert: readFileSync(clientCerts.cert),
    });
    expect(answer).toMatchObject({ overall_code: 'OK', statuses: [limited('OK', 50, 'SECOND', 49)] });
    await expect(tlsCall(address, readFileSync(server.ca), request)).rejects.toThrow();
  });

  it("TestReloadGRPCServerCerts: the server's certificate files replaced, new handshakes use the new one", async () => {
    const folder = mkdtempSync(join(tmpdir(), 'memgate-upstream-tls-'));
    const initial = makeTlsMaterial(folder, 'initial', 'serverAuth');
    const next = makeTlsMaterial(folder, 'new', 'serverAuth');
    const { address } = await start(
      memcacheSettings(memcached().servers, {
        GRPC_SERVER_USE_TLS: 'true',
        GRPC_SERVER_TLS_CERT: initial.cert,
        GRPC_SERVER_TLS_KEY: initial.key,
        // Read again every second (the least; 5 s by default), so the renewal is seen soon.
        MEMGATE_TLS_REFRESH_S: '1',
      }),
    );
    const port = Number(address.split(':')[1]);
    const [initialCa, newCa] = [readFileSync(initial.ca), readFileSync(next.ca)];
    expect(await tlsHandshake(port, initialCa)).toBe(true);
    expect(await tlsHandshake(port, newCa)).toBe(false);
    renameSync(next.cert, initial.cert);
    renameSync(next.key, initial.key);
    let renewed = false;
    for (let waited = 0; waited < 8_000 && !renewed; waited += 100) {
      renewed = await tlsHandshake(port, newCa);
      if (!renewed) await sleep(100);
    }
    expect(renewed).toBe(true);
    expect(await tlsHandshake(port, initialCa)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// upstream's examples/ratelimit/config, which its integration-test/docker-compose mounts as
// RUNTIME_ROOT=/data, RUNTIME_SUBDIRECTORY=ratelimit: examples/envoy/upstream/ holds it as upstream
// ships it, with that compose file's environment in ratelimit.env (its README).
const EXAMPLE_ENV = parseEnv(readFileSync('examples/envoy/upstream/ratelimit.env', 'utf8')) as Record<string, string>;

/**
 * The ratelimit service of upstream's docker-compose-integration-test.yml: memgate started with
 * examples/envoy/upstream/ratelimit.env as it is, but for the test's ports (gRPC, HTTP, its own
 * statsd) and Memcached, plus `env`.
 */
async function startExample(env: Record<string, string> = {}): Promise<UpstreamService & { statsd: StatsdServer }> {
  const statsd = await statsdServer();
  const service = await start({
    ...EXAMPLE_ENV,
    MEMCACHE_HOST_PORT: memcached().servers,
    STATSD_PORT: String(statsd.port),
    ...env,
  });
  return { ...service, statsd };
}

/** The action lists of examples/envoy/proxy.yaml's routes, each a descriptor of request headers. */
const ROUTES = {
  twoheader: [
    ['foo', 'bar'],
    ['foo', 'baz'],
  ],
  fourheader: [
    ['foo', 'bar'],
    ['source_cluster', 'destination_cluster'],
  ],
  fiveheader: [['foo', 'bar'], ['source_cluster', 'destination_cluster'], ['category']],
  unspec: [['unspec']],
} as const;

/** The call Envoy's filter makes for a request to `route` with `headers`: an action list missing a header makes no descriptor. */
function routeCall(route: keyof typeof ROUTES, headers: Record<string, string>): WireRequestIn {
  const descriptors = ROUTES[route]
    .filter((names) => names.every((name) => headers[name] !== undefined))
    .map((names) => ({ entries: names.map((name) => ({ key: name, value: headers[name] as string })) }));
  return { domain: 'rl', descriptors };
}

interface StructValue {
  stringValue?: string;
  structValue?: { fields: Record<string, StructValue> };
}
/** The service Envoy's proxy routes to: dynamic metadata's service_with_quota.name (examples/envoy/proxy.yaml). */
function routedService(answer: WireResponseOut): string | undefined {
  const metadata = (answer as { dynamic_metadata?: { fields: Record<string, StructValue> } | null }).dynamic_metadata;
  return metadata?.fields.metadata?.structValue?.fields.service_with_quota?.structValue?.fields.name?.stringValue;
}

describe('upstream integration-test/scripts/simple-get.sh', () => {
  it('simple-get.sh: the happy path, (foo: test), (baz: shady), is OK', async () => {
    const { client } = await startExample();
    const answer = await client.shouldRateLimit(routeCall('twoheader', { foo: 'test', baz: 'shady' }));
    expect(answer.overall_code).toBe('OK');
  });
});

describe('upstream integration-test/scripts/trigger-ratelimit.sh', () => {
  it('trigger-ratelimit.sh: (foo: *), (baz: not-so-shady), 3 a minute: three OK, then refused', async () => {
    const { client } = await startExample();
    await awayFromWindowEnd('MINUTE');
    const answers: string[] = [];
    for (let i = 0; i < 5; i++) {
      answers.push(
        (await client.shouldRateLimit(routeCall('twoheader', { foo: 'pelle', baz: 'not-so-shady' }))).overall_code,
      );
    }
    expect(answers).toEqual(['OK', 'OK', 'OK', 'OVER_LIMIT', 'OVER_LIMIT']);
  });
});

describe('upstream integration-test/scripts/trigger-shadow-mode-key.sh', () => {
  it('trigger-shadow-mode-key.sh: (foo: *), (baz: shady) in shadow_mode, 3 a minute: never refused', async () => {
    const service = await startExample();
    await awayFromWindowEnd('MINUTE');
    const answers: WireResponseOut[] = [];
    for (let i = 0; i < 6; i++)
      answers.push(await service.client.shouldRateLimit(routeCall('twoheader', { foo: 'pelle', baz: 'shady' })));
    expect(answers.map((answer) => answer.overall_code)).toEqual(Array<string>(6).fill('OK'));
    expect(answers.map((answer) => (answer.statuses[0] as WireStatusOut).code)).toEqual(Array<string>(6).fill('OK'));
    expect(answers.map((answer) => answer.statuses[0]?.limit_remaining)).toEqual([2, 1, 0, 0, 0, 0]);
    // docs/envoy.md, Shadow mode: what would have been refused is counted in memgate_envoy_shadow_over_limit_total.
    expect(await service.metric('memgate_envoy_shadow_over_limit_total', { event: 'envoy:rl.foo.baz_shady' })).toBe(3);
  });
});

describe('upstream integration-test/scripts/replaces.sh', () => {
  it('replaces.sh: replaces raises a limit, leaves the replaced limit alone, and can replace several', async () => {
    const { client } = await startExample();
    const steps: [keyof typeof ROUTES, Record<string, string>, 'OK' | 'OVER_LIMIT'][] = [];
    const step = (
      route: keyof typeof ROUTES,
      headers: Record<string, string>,
      ...expected: ('OK' | 'OVER_LIMIT')[]
    ) => {
      for (const one of expected) steps.push([route, headers, one]);
    };
    const banned = { foo: 'bkthomps', bar: 'banned' };
    const bkthomps = { foo: 'my_foo', bar: 'bkthomps' };
    // replaces raises the limit: banned_limit (0 a minute), replaced by override (2 a minute).
    step('twoheader', banned, 'OVER_LIMIT');
    step('fourheader', { ...banned, source_cluster: 'proxy', destination_cluster: 'mock' }, 'OVER_LIMIT');
    step(
      'fourheader',
      { ...banned, source_cluster: 'proxy', destination_cluster: 'override' },
      'OK',
      'OK',
      'OVER_LIMIT',
    );
    // replaces leaves the original limit alone: bkthomps (1 a minute), replaced by (proxy, bkthomps) (2 a minute).
    step(
      'fourheader',
      { ...bkthomps, source_cluster: 'proxy', destination_cluster: 'bkthomps' },
      'OK',
      'OK',
      'OVER_LIMIT',
    );
    step(
      'fourheader',
      { ...bkthomps, source_cluster: 'proxy', destination_cluster: 'not_bkthomps' },
      'OK',
      'OVER_LIMIT',
    );
    step('fourheader', { ...bkthomps, source_cluster: 'proxy', destination_cluster: 'bkthomps' }, 'OVER_LIMIT');
    // replaces several: (category: account), 4 a minute, replaces bkthomps and fake_name.
    const five = { ...bkthomps, source_cluster: 'proxy', destination_cluster: 'fake', category: 'account' };
    step('fiveheader', five, 'OK', 'OK', 'OK', 'OK', 'OVER_LIMIT');
    step('twoheader', { foo: 'foo_2', bar: 'bkthomps' }, 'OK', 'OVER_LIMIT');
    step(
      'fourheader',
      { foo: 'foo_3', bar: 'bar_3', source_cluster: 'proxy', destination_cluster: 'fake' },
      'OK',
      'OK',
      'OVER_LIMIT',
    );
    step('fiveheader', five, 'OVER_LIMIT');
    await awayFromWindowEnd('MINUTE');
    const got: string[] = [];
    for (const [route, headers] of steps)
      got.push((await client.shouldRateLimit(routeCall(route, headers))).overall_code);
    expect(got).toEqual(steps.map(([, , expected]) => expected));
  });
});

describe('upstream integration-test/scripts/value-included-in-stats-key-when-unspecified.sh', () => {
  it('value-included-in-stats-key-when-unspecified.sh: (unspec: *) 2 a minute: two OK, the third refused and counted', async () => {
    const service = await startExample();
    await awayFromWindowEnd('MINUTE');
    const answers: string[] = [];
    for (let i = 0; i < 3; i++) {
      answers.push(
        (await service.client.shouldRateLimit(routeCall('unspec', { unspec: 'unspecified_value' }))).overall_code,
      );
    }
    expect(answers).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    // docs/envoy.md, Configuration file, detailed_metric: Prometheus counts per descriptor event; statsd names the value (below).
    expect(await service.metric('memgate_decisions_total', { event: 'envoy:rl.unspec', outcome: 'denied' })).toBe(1);
  });

  it('value-included-in-stats-key-when-unspecified.sh: statsd (ratelimit.env sends it) counts over_limit of rl.unspec_unspecified_value: 1', async () => {
    // Sent every 100 ms (the least; ratelimit.env leaves upstream's default), so the sums arrive soon.
    const { client, statsd } = await startExample({ STATS_FLUSH_INTERVAL: '100ms' });
    await awayFromWindowEnd('MINUTE');
    for (let i = 0; i < 3; i++) await client.shouldRateLimit(routeCall('unspec', { unspec: 'unspecified_value' }));
    const name = 'ratelimit.service.rate_limit.rl.unspec_unspecified_value.over_limit';
    for (let waited = 0; waited < 5_000 && statsd.counter(name) < 1; waited += 50) await sleep(50);
    // Five more flushes: a second over_limit would have been sent by then.
    await sleep(500);
    expect(statsd.counter(name)).toBe(1);
  });

  it("value-included-in-stats-key-when-unspecified.sh with an address and port as the value: the name upstream's SanitizeStatName makes", async () => {
    // No upstream test covers utils.SanitizeStatName (stats/manager_impl.go's NewStats): `:` and `|`
    // become `_`, and so do the dots of an IPv4 address, so the address is one node of the name.
    const { client, statsd } = await startExample({ STATS_FLUSH_INTERVAL: '100ms' });
    await client.shouldRateLimit(routeCall('unspec', { unspec: '10.0.0.1:8080|a.b' }));
    const name = 'ratelimit.service.rate_limit.rl.unspec_10_0_0_1_8080_a.b.total_hits';
    for (let waited = 0; waited < 5_000 && statsd.counter(name) < 1; waited += 50) await sleep(50);
    expect([...statsd.counters().keys()].filter((stat) => stat.includes('unspec'))).toEqual([
      name,
      name.replace('total_hits', 'within_limit'),
    ]);
  });
});

describe('upstream integration-test/scripts/quota.sh', () => {
  it('quota.sh: (service: service_1) 1 and (service: service_2) 2 a minute in quota_mode: the third request is refused', async () => {
    const { client } = await startExample();
    const quota = {
      domain: 'rl',
      descriptors: [descriptor([['service', 'service_1']]), descriptor([['service', 'service_2']])],
    };
    await awayFromWindowEnd('MINUTE');
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await client.shouldRateLimit(quota));
    expect(answers.map(codes)).toEqual([
      ['OK', 'OK', 'OK'],
      ['OK', 'OVER_LIMIT', 'OK'],
      ['OVER_LIMIT', 'OVER_LIMIT', 'OVER_LIMIT'],
    ]);
    // The buckets refresh with the minute (upstream waits 60 s and asks again).
    for (const status of answers[2]?.statuses ?? [])
      expect(status.duration_until_reset?.seconds).toBeLessThanOrEqual(60);
  });
});

describe('upstream integration-test/scripts/token-quota.sh', () => {
  it('token-quota.sh: (service: service_2) checked with hits_addend 0, debited 1 when the stream is done', async () => {
    const { client } = await startExample();
    const request = (hits: number) => ({ domain: 'rl', descriptors: [descriptor([['service', 'service_2']], hits)] });
    await awayFromWindowEnd('MINUTE');
    const passed: boolean[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await client.shouldRateLimit(request(0));
      passed.push(answer.overall_code === 'OK');
      // Envoy's apply_on_stream_done call, for a request that went through.
      if (answer.overall_code === 'OK') expect((await client.shouldRateLimit(request(1))).overall_code).toBe('OK');
    }
    // docs/envoy.md, hits_addend, "a descriptor's hits_addend of exactly 0": OVER_LIMIT once the limit has no
    // room for one more, so the third request is refused (upstream: the fourth, once one was counted over).
    expect(passed).toEqual([true, true, false]);
  });
});

describe('upstream integration-test/scripts/multiservice-tokenquota.sh', () => {
  it('multiservice-tokenquota.sh: requests go to the service whose quota passed, named in dynamic metadata, until both are spent', async () => {
    const { client } = await startExample();
    const check = {
      domain: 'rl',
      descriptors: [descriptor([['service', 'service_1']], 0), descriptor([['service', 'service_2']], 0)],
    };
    await awayFromWindowEnd('MINUTE');
    const served: string[] = [];
    for (let i = 0; i < 4; i++) {
      const answer = await client.shouldRateLimit(check);
      const service = routedService(answer);
      served.push(answer.overall_code === 'OK' ? (service ?? 'any') : 'refused');
      // Envoy's apply_on_stream_done call: the locality name of the host that served the request, 1 hit.
      if (answer.overall_code === 'OK' && service !== undefined) {
        await client.shouldRateLimit({ domain: 'rl', descriptors: [descriptor([['service', service]], 1)] });
      }
    }
    // docs/envoy.md, hits_addend, "a descriptor's hits_addend of exactly 0": service_1 (1 a minute) is full after one
    // request, service_2 (2) after two more (upstream: service_1 twice, service_2 three times, then refused).
    expect(served).toEqual(['service_1', 'service_2', 'service_2', 'refused']);
  });
});
