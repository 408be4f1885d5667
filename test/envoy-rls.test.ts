// memgate as Envoy's rate limit service: a grpc-js client makes the calls Envoy's ratelimit
// filter makes, against the service as main.ts starts it, counting in a real Memcached.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { oneDescriptor, type RlsClient, type WireRequestIn, type WireResponseOut } from '../scripts/lib/rls-client.js';
import { calendarPeriod } from '../src/counting/algorithms/fixed/calendar.js';
import { envoyConfigFile, useEnvoyServices, type EnvoyServiceOptions } from './helpers/envoy-service.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { awayFromWindowEnd } from './helpers/window.js';

const memcached = useMemcached();

const CONFIG = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 3, name: per-address }
  - key: tenant
    value: acme
    descriptors:
      - key: route
        rate_limit: { unit: hour, requests_per_unit: 2 }
  - key: path
    value: /files/*
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: path
    value: /health
    rate_limit: { unlimited: true }
  - key: path
    rate_limit: { unit: minute, requests_per_unit: 100 }
  - key: shadow_client
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: tight
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: loose
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: quota_a
    quota_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: quota_b
    quota_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: closed
    rate_limit: { unit: minute, requests_per_unit: 0 }
  - key: sliding
    rate_limit: { window: 90s, algorithm: sliding, granularity: 10s, requests_per_unit: 2 }
  - key: plain_month
    rate_limit: { unit: month, requests_per_unit: 2 }
  - key: billed_month
    rate_limit: { unit: month, requests_per_unit: 2, calendar: { timezone: Pacific/Kiritimati, anchor: 3 } }
`;

const TOKEN = 'admin-token-for-the-envoy-tests-0123';
const startEnvoy = useEnvoyServices(memcached, CONFIG);
/** A service with the admin token, so that tests can reload. */
const start = (options: EnvoyServiceOptions = {}) =>
  startEnvoy({ ...options, env: { MEMGATE_ADMIN_TOKEN: TOKEN, ...options.env } });
const configFile = envoyConfigFile;

const codes = async (client: RlsClient, request: WireRequestIn, times: number) => {
  const answers: string[] = [];
  for (let i = 0; i < times; i++) answers.push((await client.shouldRateLimit(request)).overall_code);
  return answers;
};

const headerMap = (headers: { key: string; value: string }[]) =>
  Object.fromEntries(headers.map(({ key, value }) => [key, value]));

describe('months over gRPC', () => {
  it("keeps upstream's 30-day month, and counts a calendar month to local midnight when the file opts in", async () => {
    const { client } = await start();
    // A month turns on a minute's turn: away from one, every call below falls in one month.
    await awayFromWindowEnd(60);
    const plain = await client.shouldRateLimit(oneDescriptor('edge', ['plain_month', 'a']));
    const thirtyDays = 30 * 86_400;
    const untilEpochMonth = thirtyDays - (Math.floor(Date.now() / 1000) % thirtyDays);
    expect(Math.abs((plain.statuses[0]?.duration_until_reset?.seconds ?? -99) - untilEpochMonth)).toBeLessThanOrEqual(
      1,
    );
    const billed = await client.shouldRateLimit(oneDescriptor('edge', ['billed_month', 'a']));
    expect(billed.statuses[0]?.current_limit).toMatchObject({ requests_per_unit: 2, unit: 'MONTH' });
    const { endMs } = calendarPeriod(Date.now(), { unit: 'month', anchor: 3, timeZone: 'Pacific/Kiritimati' });
    const untilLocalMidnight = Math.round((endMs - Date.now()) / 1000);
    expect(
      Math.abs((billed.statuses[0]?.duration_until_reset?.seconds ?? -99) - untilLocalMidnight),
    ).toBeLessThanOrEqual(1);
    // Counted on counters of their own: two a month each.
    expect(await codes(client, oneDescriptor('edge', ['billed_month', 'a']), 2)).toEqual(['OK', 'OVER_LIMIT']);
  });
});

describe("upstream's global settings", () => {
  it('SHADOW_MODE: every call OK, a descriptor over its limit still OVER_LIMIT, and counted as shadow', async () => {
    const { client, url } = await start({ env: { SHADOW_MODE: 'true' } });
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const request = oneDescriptor('edge', ['remote_address', '192.0.2.50']);
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await client.shouldRateLimit(request));
    expect(answers.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OK', 'OK', 'OK']);
    expect(answers.map((a) => a.statuses[0]?.code)).toEqual(['OK', 'OK', 'OK', 'OVER_LIMIT', 'OVER_LIMIT']);
    expect(answers.map((a) => a.statuses[0]?.limit_remaining)).toEqual([2, 1, 0, 0, 0]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/memgate_envoy_shadow_over_limit_total\{event="envoy:edge\.remote_address"\} 2\n/);
  });

  it('MERGE_DOMAIN_CONFIG: a domain in two files of the runtime directory is one domain', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'memgate-merge-'));
    await writeFile(
      join(folder, 'a.yaml'),
      'domain: split\ndescriptors:\n  - key: a\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
    );
    await writeFile(
      join(folder, 'b.yaml'),
      'domain: split\ndescriptors:\n  - key: b\n    rate_limit: { unit: minute, requests_per_unit: 2 }\n',
    );
    await expect(start({ config: folder })).rejects.toThrow(/domain "split" is already defined/);
    const { client } = await start({ config: folder, env: { MERGE_DOMAIN_CONFIG: 'true' } });
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const codes = async (key: string, times: number) => {
      const answers: string[] = [];
      for (let i = 0; i < times; i++)
        answers.push((await client.shouldRateLimit(oneDescriptor('split', [key, 'm1']))).overall_code);
      return answers;
    };
    expect(await codes('a', 2)).toEqual(['OK', 'OVER_LIMIT']);
    expect(await codes('b', 3)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
  });

  it('quota_mode: over only when every quota descriptor of the call is, each saying OVER_LIMIT when over', async () => {
    const { client } = await start();
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const call = (a: string, b: string) =>
      client.shouldRateLimit({
        domain: 'edge',
        descriptors: [{ entries: [{ key: 'quota_a', value: a }] }, { entries: [{ key: 'quota_b', value: b }] }],
      });
    expect((await call('q1', 'q1')).overall_code).toBe('OK');
    // quota_a of q1 is over, quota_b of q2 is not: the call passes, as upstream answers it.
    const one = await call('q1', 'q2');
    expect([one.overall_code, ...one.statuses.map((status) => status.code)]).toEqual(['OK', 'OVER_LIMIT', 'OK']);
    // Both over: the call is.
    const both = await call('q1', 'q2');
    expect([both.overall_code, ...both.statuses.map((status) => status.code)]).toEqual([
      'OVER_LIMIT',
      'OVER_LIMIT',
      'OVER_LIMIT',
    ]);
    // A descriptor enforced by itself still refuses alone.
    const mixed = await client.shouldRateLimit({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'quota_a', value: 'q3' }] }, { entries: [{ key: 'closed', value: 'q3' }] }],
    });
    expect(mixed.overall_code).toBe('OVER_LIMIT');
  });

  it('SHADOW_MODE with quota descriptors: every call OK, even when all quota descriptors are over', async () => {
    const { client } = await start({ env: { SHADOW_MODE: 'true' } });
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const call = () =>
      client.shouldRateLimit({
        domain: 'edge',
        descriptors: [{ entries: [{ key: 'quota_a', value: 'sq' }] }, { entries: [{ key: 'quota_b', value: 'sq' }] }],
      });
    await call();
    const over = await call();
    expect([over.overall_code, ...over.statuses.map((status) => status.code)]).toEqual([
      'OK',
      'OVER_LIMIT',
      'OVER_LIMIT',
    ]);
  });

  it("QUOTA_MODE applies to a descriptor's per-request limit too: one over of two lets the call through", async () => {
    const { client } = await start({ env: { QUOTA_MODE: 'true' } });
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const call = () =>
      client.shouldRateLimit({
        domain: 'edge',
        descriptors: [
          { entries: [{ key: 'loose', value: 'ov' }], limit: { requests_per_unit: 1, unit: 'MINUTE' } },
          { entries: [{ key: 'loose', value: 'ov2' }] },
        ],
      });
    expect((await call()).overall_code).toBe('OK');
    const second = await call();
    expect([second.overall_code, ...second.statuses.map((status) => status.code)]).toEqual(['OK', 'OVER_LIMIT', 'OK']);
  });

  it('QUOTA_MODE: every descriptor in quota mode, the call over only when all are', async () => {
    const { client } = await start({ env: { QUOTA_MODE: 'true' } });
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const both: WireRequestIn = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'tight', value: 'qm' }] }, { entries: [{ key: 'loose', value: 'qm' }] }],
    };
    expect((await client.shouldRateLimit(both)).overall_code).toBe('OK');
    const tightOver = await client.shouldRateLimit(both);
    expect([tightOver.overall_code, ...tightOver.statuses.map((status) => status.code)]).toEqual([
      'OK',
      'OVER_LIMIT',
      'OK',
    ]);
    const alone = await client.shouldRateLimit(oneDescriptor('edge', ['tight', 'qm']));
    expect(alone.overall_code).toBe('OVER_LIMIT');
  });

  it("LIMIT_RESPONSE_HEADERS_ENABLED: the closest descriptor's limit, remaining and reset, under the names given", async () => {
    const { client } = await start({
      env: { LIMIT_RESPONSE_HEADERS_ENABLED: 'true', LIMIT_REMAINING_HEADER: 'X-RateLimit-Remaining' },
    });
    const both: WireRequestIn = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'loose', value: 'lh' }] }, { entries: [{ key: 'tight', value: 'lh' }] }],
    };
    await awayFromWindowEnd(60);
    const first = headerMap((await client.shouldRateLimit(both)).response_headers_to_add);
    const untilMinute = 60 - (Math.floor(Date.now() / 1000) % 60);
    // The tight limit has 0 left of 1, the loose 4 of 5: the tight one is closest.
    expect(first).toMatchObject({ 'RateLimit-Limit': '1', 'X-RateLimit-Remaining': '0' });
    expect(Math.abs(Number(first['RateLimit-Reset']) - untilMinute)).toBeLessThanOrEqual(1);
    expect(Object.keys(first).sort()).toEqual(['RateLimit-Limit', 'RateLimit-Reset', 'X-RateLimit-Remaining']);
    const loose = headerMap(
      (await client.shouldRateLimit(oneDescriptor('edge', ['loose', 'lh2']))).response_headers_to_add,
    );
    expect(loose).toMatchObject({ 'RateLimit-Limit': '5', 'X-RateLimit-Remaining': '4' });
    const over = await client.shouldRateLimit(both);
    expect(over.overall_code).toBe('OVER_LIMIT');
    expect(headerMap(over.response_headers_to_add)).toMatchObject({
      'RateLimit-Limit': '1',
      'X-RateLimit-Remaining': '0',
    });
  });
});

/** google.protobuf.Value as the client decodes it: protobufjs names the well-known types' fields in camelCase. */
interface ValueOut {
  stringValue?: string;
  numberValue?: number;
  boolValue?: boolean;
  nullValue?: string;
  listValue?: { values: ValueOut[] };
  structValue?: StructOut;
}
interface StructOut {
  fields: Record<string, ValueOut>;
}
const plainValue = (value: ValueOut): unknown => {
  if (value.structValue) return plainStruct(value.structValue);
  if (value.listValue) return value.listValue.values.map(plainValue);
  if (value.nullValue !== undefined && value.nullValue !== '') return null;
  return value.stringValue ?? value.numberValue ?? value.boolValue;
};
const plainStruct = (struct: StructOut | null | undefined): Record<string, unknown> | undefined =>
  struct
    ? Object.fromEntries(Object.entries(struct.fields).map(([key, value]) => [key, plainValue(value)]))
    : undefined;

// Ported from envoyproxy/ratelimit's test/service/ratelimit_test.go (TestMetadataReturnedForPassedDescriptors,
// TestMetadataReturnedForAllPassedDescriptors, TestOverlappingMetadataReturnsTheFirstValue), against the
// service over gRPC, the over-limit statuses made by real counts rather than a mocked cache.
describe("upstream's RESPONSE_DYNAMIC_METADATA", () => {
  const META = `
domain: meta
descriptors:
  - key: regular
    rate_limit: { unit: minute, requests_per_unit: 10 }
    metadata: { name: service_1, labels: { tier: gold } }
  - key: quota
    rate_limit: { unit: minute, requests_per_unit: 1 }
    metadata: { name: service_2 }
  - key: other
    rate_limit: { unit: minute, requests_per_unit: 10 }
    metadata: { some_other_name: service_2, labels: { tier: silver, zone: eu }, weight: 3, flags: [a, b] }
  - key: free
    rate_limit: { unlimited: true }
    metadata: { name: free }
`;
  const call = (client: RlsClient, keys: string[], value: string, extra: Partial<WireRequestIn> = {}) =>
    client.shouldRateLimit({
      domain: 'meta',
      descriptors: keys.map((key) => ({ entries: [{ key, value }] })),
      ...extra,
    }) as Promise<WireResponseOut & { dynamic_metadata: StructOut | null }>;

  it('takes the metadata of the descriptors that passed only, the first value of a key kept', async () => {
    const { client } = await start({
      config: await configFile(META),
      env: { QUOTA_MODE: 'true', RESPONSE_DYNAMIC_METADATA: 'true' },
    });
    // Its limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const first = await call(client, ['quota', 'regular'], 'p1');
    expect(first.overall_code).toBe('OK');
    // Both passed: the quota descriptor's name, first in the request, is kept.
    expect(plainStruct(first.dynamic_metadata)?.metadata).toEqual({ name: 'service_2', labels: { tier: 'gold' } });
    const second = await call(client, ['quota', 'regular'], 'p1');
    // One quota descriptor over of two: the call passes, and only the regular one's metadata is there.
    expect([second.overall_code, ...second.statuses.map((status) => status.code)]).toEqual(['OK', 'OVER_LIMIT', 'OK']);
    expect(plainStruct(second.dynamic_metadata)).toEqual({
      domain: 'meta',
      descriptors: [{ entries: ['quota=p1'] }, { entries: ['regular=p1'] }],
      metadata: { name: 'service_1', labels: { tier: 'gold' } },
    });
  });

  it('merges the metadata of every passed descriptor, nested mappings too, and describes each descriptor', async () => {
    const { client } = await start({
      config: await configFile(META),
      env: { RESPONSE_DYNAMIC_METADATA: 'true' },
    });
    const answer = await client.shouldRateLimit({
      domain: 'meta',
      hits_addend: 2,
      descriptors: [
        { entries: [{ key: 'regular', value: 'm1' }] },
        { entries: [{ key: 'other', value: 'm1' }], hits_addend: { value: 1 } },
        { entries: [{ key: 'free', value: 'm1' }] },
        { entries: [{ key: 'unknown', value: 'm1' }], limit: { requests_per_unit: 7, unit: 'HOUR' } },
      ],
    });
    expect(answer.overall_code).toBe('OK');
    expect(plainStruct((answer as { dynamic_metadata?: StructOut }).dynamic_metadata)).toEqual({
      domain: 'meta',
      hitsAddend: 2,
      descriptors: [
        { entries: ['regular=m1'] },
        { entries: ['other=m1'], hitsAddend: 1 },
        { entries: ['free=m1'] },
        { entries: ['unknown=m1'], limit: 'requests_per_unit:7 unit:HOUR' },
      ],
      // The unlimited descriptor's is not there: it neither passed nor was refused.
      metadata: {
        name: 'service_1',
        labels: { tier: 'gold', zone: 'eu' },
        some_other_name: 'service_2',
        weight: 3,
        flags: ['a', 'b'],
      },
    });
  });

  it('sends no dynamic metadata when it is off', async () => {
    const { client } = await start({ config: await configFile(META) });
    const answer = await call(client, ['regular'], 'off1');
    expect(answer.dynamic_metadata ?? null).toBeNull();
  });
});

describe('ShouldRateLimit against the service', () => {
  it('admits exactly requests_per_unit per address and reports the limit as envoyproxy/ratelimit does', async () => {
    const { client } = await start();
    const request = oneDescriptor('edge', ['remote_address', '192.0.2.1']);
    const answers = [];
    await awayFromWindowEnd(60);
    for (let i = 0; i < 4; i++) answers.push(await client.shouldRateLimit(request));
    expect(answers.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OK', 'OVER_LIMIT']);
    expect(answers.map((a) => a.statuses[0]?.limit_remaining)).toEqual([2, 1, 0, 0]);
    const first = answers[0]?.statuses[0];
    expect(first?.current_limit).toEqual({ name: 'per-address', requests_per_unit: 3, unit: 'MINUTE' });
    // Fixed windows end at the next whole minute since the epoch.
    const untilMinute = 60 - (Math.floor(Date.now() / 1000) % 60);
    expect(Math.abs((first?.duration_until_reset?.seconds ?? -99) - untilMinute)).toBeLessThanOrEqual(1);
    // Whole seconds, as upstream computes them from its clock's whole seconds.
    expect(first?.duration_until_reset?.nanos ?? 0).toBe(0);
    const over = headerMap(answers[3]?.response_headers_to_add ?? []);
    expect(over['ratelimit-policy']).toBe('"per-address";q=3;w=60');
    expect(over.ratelimit).toMatch(/^"per-address";r=0;t=\d+$/);
    expect(Number(over['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(over['retry-after'])).toBeLessThanOrEqual(61);
    expect(headerMap(answers[0]?.response_headers_to_add ?? [])['retry-after']).toBeUndefined();
    // Another address has a counter of its own.
    expect(await codes(client, oneDescriptor('edge', ['remote_address', '192.0.2.2']), 1)).toEqual(['OK']);
  });

  it('walks nested descriptors, prefers an exact value to a wildcard and a wildcard to the key alone', async () => {
    const { client } = await start();
    // Its limits are fixed windows: every call below must fall in one (an hour turns on a minute's turn).
    await awayFromWindowEnd(60);
    expect(await codes(client, oneDescriptor('edge', ['tenant', 'acme'], ['route', 'search']), 3)).toEqual([
      'OK',
      'OK',
      'OVER_LIMIT',
    ]);
    expect(await codes(client, oneDescriptor('edge', ['tenant', 'acme'], ['route', 'cart']), 1)).toEqual(['OK']);
    // No limit for another tenant, nor for the tenant alone: the limit is on the route below it.
    expect(await codes(client, oneDescriptor('edge', ['tenant', 'other'], ['route', 'search']), 3)).toEqual([
      'OK',
      'OK',
      'OK',
    ]);
    const tenantOnly = await client.shouldRateLimit(oneDescriptor('edge', ['tenant', 'acme']));
    expect(tenantOnly.statuses[0]).toMatchObject({ code: 'OK', current_limit: null, limit_remaining: 0 });
    // /files/* values share the wildcard's limit per value; other paths get the key-only limit of 100.
    expect(await codes(client, oneDescriptor('edge', ['path', '/files/a']), 3)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(await codes(client, oneDescriptor('edge', ['path', '/files/b']), 1)).toEqual(['OK']);
    const other = await client.shouldRateLimit(oneDescriptor('edge', ['path', '/other']));
    expect(other.statuses[0]).toMatchObject({
      code: 'OK',
      limit_remaining: 99,
      current_limit: { requests_per_unit: 100 },
    });
  });

  it('answers unlimited descriptors OK with nothing counted, and an unknown domain OK with no limit', async () => {
    const { client } = await start();
    const health = await client.shouldRateLimit(oneDescriptor('edge', ['path', '/health']));
    expect(health.statuses[0]).toMatchObject({ code: 'OK', current_limit: null, limit_remaining: 4_294_967_295 });
    const unknown = await client.shouldRateLimit(oneDescriptor('nowhere', ['remote_address', '192.0.2.1']));
    expect(unknown).toMatchObject({
      overall_code: 'OK',
      statuses: [{ code: 'OK', current_limit: null, limit_remaining: 0 }],
    });
  });

  it('answers shadow_mode descriptors OK past their limit and counts what enforcing them would refuse', async () => {
    const { client, url } = await start();
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const request = oneDescriptor('edge', ['shadow_client', 'c1']);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await client.shouldRateLimit(request));
    expect(answers.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OK']);
    expect(answers.map((a) => a.statuses[0]?.code)).toEqual(['OK', 'OK', 'OK']);
    expect(answers.map((a) => a.statuses[0]?.limit_remaining)).toEqual([0, 0, 0]);
    // Its client is not told of a limit that does not apply to it.
    expect(answers.flatMap((a) => a.response_headers_to_add)).toEqual([]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('memgate_envoy_shadow_over_limit_total{event="envoy:edge.shadow_client"} 2');
    // The counter holds what enforcement would: the one request within the limit.
    expect(metrics).toMatch(
      /memgate_decisions_total\{event="envoy:edge.shadow_client",kind="check",outcome="allowed"\} 1\n/,
    );
  });

  it('counts several descriptors of one request together: a request over one limit counts under none', async () => {
    const { client } = await start();
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const both: WireRequestIn = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'loose', value: 'u1' }] }, { entries: [{ key: 'tight', value: 'u1' }] }],
    };
    const first = await client.shouldRateLimit(both);
    expect(first.overall_code).toBe('OK');
    expect(first.statuses.map((s) => s.limit_remaining)).toEqual([4, 0]);
    const second = await client.shouldRateLimit(both);
    expect(second.overall_code).toBe('OVER_LIMIT');
    // The loose limit had room and says so, but nothing of the refused request was counted.
    expect(second.statuses.map((s) => s.code)).toEqual(['OK', 'OVER_LIMIT']);
    expect(second.statuses[0]?.limit_remaining).toBe(4);
    const alone = await client.shouldRateLimit(oneDescriptor('edge', ['loose', 'u1']));
    expect(alone.statuses[0]?.limit_remaining).toBe(3);
  });

  it('reads hits_addend as Envoy means it: 0 is 1, a descriptor may override it, and its own 0 only asks', async () => {
    const { client } = await start();
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const request = oneDescriptor('edge', ['loose', 'h1']);
    expect((await client.shouldRateLimit({ ...request, hits_addend: 0 })).statuses[0]?.limit_remaining).toBe(4);
    expect((await client.shouldRateLimit({ ...request, hits_addend: 3 })).statuses[0]?.limit_remaining).toBe(1);
    const peek = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'loose', value: 'h1' }], hits_addend: { value: 0 } }],
    };
    expect((await client.shouldRateLimit(peek)).statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 1 });
    expect((await client.shouldRateLimit(peek)).statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 1 });
    // More than the room left: over, and 0 left as upstream reports (Envoy's X-RateLimit-Remaining), nothing counted.
    expect((await client.shouldRateLimit({ ...request, hits_addend: 3 })).statuses[0]).toMatchObject({
      code: 'OVER_LIMIT',
      limit_remaining: 0,
    });
    expect((await client.shouldRateLimit(peek)).statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 1 });
    // More than the limit can ever hold: over, and nothing counted.
    expect((await client.shouldRateLimit({ ...request, hits_addend: 6 })).overall_code).toBe('OVER_LIMIT');
    expect((await client.shouldRateLimit(request)).statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 0 });
    expect((await client.shouldRateLimit(peek)).statuses[0]).toMatchObject({ code: 'OVER_LIMIT', limit_remaining: 0 });
  });

  it("applies a descriptor's per-request limit as envoyproxy/ratelimit does, on the descriptor's own counters", async () => {
    const { client } = await start();
    // Its minute limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    // Not within 2 s of a minute's end: the fixed window must hold every request below.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 57_000) await new Promise((resolve) => setTimeout(resolve, 60_500 - intoMinute));
    const plain = oneDescriptor('edge', ['remote_address', '198.51.100.1']);
    const withLimit = (requests_per_unit: number, unit = 'MINUTE'): WireRequestIn => ({
      domain: 'edge',
      descriptors: [
        { entries: [{ key: 'remote_address', value: '198.51.100.1' }], limit: { requests_per_unit, unit } },
      ],
    });
    // 3 of the configured 3, then an override of 5 in the same minute counts on them: 2 more.
    expect(await codes(client, plain, 3)).toEqual(['OK', 'OK', 'OK']);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await client.shouldRateLimit(withLimit(5)));
    expect(answers.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(answers[0]?.statuses[0]).toMatchObject({
      limit_remaining: 1,
      current_limit: { name: '', requests_per_unit: 5, unit: 'MINUTE' },
    });
    // A descriptor no configured limit matches is limited by its override, per domain and entries.
    const unknown = (value: string): WireRequestIn => ({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'plan_key', value }], limit: { requests_per_unit: 2, unit: 'HOUR' } }],
    });
    expect(await codes(client, unknown('k1'), 3)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(await codes(client, unknown('k2'), 1)).toEqual(['OK']);
    // An override of 0 refuses; in a domain the configuration does not name, nothing is limited.
    expect(await codes(client, withLimit(0), 1)).toEqual(['OVER_LIMIT']);
    const elsewhere: WireRequestIn = {
      domain: 'nowhere',
      descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: { requests_per_unit: 1, unit: 'SECOND' } }],
    };
    expect(await codes(client, elsewhere, 3)).toEqual(['OK', 'OK', 'OK']);
  });

  it('refuses every request of a limit of 0 and counts nothing of the request', async () => {
    const { client } = await start();
    const request: WireRequestIn = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'loose', value: 'z1' }] }, { entries: [{ key: 'closed', value: 'z1' }] }],
    };
    const answer = await client.shouldRateLimit(request);
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expect(answer.statuses.map((s) => s.code)).toEqual(['OK', 'OVER_LIMIT']);
    expect(answer.statuses[1]?.current_limit).toEqual({ name: '', requests_per_unit: 0, unit: 'MINUTE' });
    expect((await client.shouldRateLimit(oneDescriptor('edge', ['loose', 'z1']))).statuses[0]?.limit_remaining).toBe(4);
  });

  it('counts a sliding window of 90 s, which no Envoy unit names, and reports no current_limit', async () => {
    const { client } = await start();
    const request = oneDescriptor('edge', ['sliding', 's1']);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await client.shouldRateLimit(request));
    expect(answers.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(answers[0]?.statuses[0]?.current_limit).toBeNull();
    const headers = headerMap(answers[2]?.response_headers_to_add ?? []);
    expect(headers['ratelimit-policy']).toBe('"edge.sliding";q=2;w=90');
    // The oldest request counts until its whole 10 s bucket is out of the 90 s window: 90 to 99 s from now.
    expect(Number(headers['retry-after'])).toBeGreaterThanOrEqual(90);
    expect(Number(headers['retry-after'])).toBeLessThanOrEqual(100);
  });

  it('refuses malformed requests with INVALID_ARGUMENT, counting nothing, and keeps serving', async () => {
    const { client } = await start();
    const refused = async (request: WireRequestIn) => {
      const error = await client.shouldRateLimit(request).then(
        () => undefined,
        (e: unknown) => e as grpc.ServiceError,
      );
      return error ? { code: error.code, details: error.details } : undefined;
    };
    expect(await refused({ domain: '', descriptors: [{ entries: [{ key: 'remote_address', value: 'x' }] }] })).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'domain must not be empty',
    });
    expect((await refused({ domain: 'edge', descriptors: [] }))?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await refused({ domain: 'edge', descriptors: [{ entries: [] }] }))?.code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    const huge = oneDescriptor('edge', ['remote_address', 'x'.repeat(1025)]);
    expect((await refused(huge))?.code).toBe(grpc.status.INVALID_ARGUMENT);
    // A refused descriptor beside a good one counted nothing under the good one either.
    const mixed: WireRequestIn = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'loose', value: 'm1' }] }, { entries: [{ key: '', value: 'v' }] }],
    };
    expect((await refused(mixed))?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await client.shouldRateLimit(oneDescriptor('edge', ['loose', 'm1']))).statuses[0]?.limit_remaining).toBe(4);
  });

  it('admits exactly the limit over two instances sharing Memcached, at any concurrency', async () => {
    const prefix = uniquePrefix();
    const config = await configFile(CONFIG);
    const a = await start({ config, prefix });
    const b = await start({ config, prefix });
    // Its limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const request = oneDescriptor('edge', ['path', '/busy']);
    const answers = await Promise.all(
      Array.from({ length: 240 }, (_, i) => (i % 2 === 0 ? a : b).client.shouldRateLimit(request)),
    );
    expect(answers.filter((answer) => answer.overall_code === 'OK')).toHaveLength(100);
  });

  it("decides by each limit's onStoreError when Memcached cannot answer, and says so in health", async () => {
    const config = await configFile(
      `${CONFIG}  - key: strict\n    rate_limit: { unit: minute, requests_per_unit: 5, onStoreError: deny }\n`,
    );
    // A port nothing listens on: every call fails, and the service serves anyway.
    const { client, lines } = await start({
      config,
      env: { MEMCACHED_SERVERS: '127.0.0.1:1', MEMCACHED_TIMEOUT_MS: '100' },
    });
    const lenient = await client.shouldRateLimit(oneDescriptor('edge', ['remote_address', '192.0.2.9']));
    expect(lenient.overall_code).toBe('OK');
    const strict = await client.shouldRateLimit(oneDescriptor('edge', ['strict', 'u1']));
    expect(strict.overall_code).toBe('OVER_LIMIT');
    expect(headerMap(strict.response_headers_to_add)['retry-after']).toBe('1');
    // Together: the strict limit's rule refuses the request.
    const both: WireRequestIn = {
      domain: 'edge',
      descriptors: [
        { entries: [{ key: 'remote_address', value: '192.0.2.9' }] },
        { entries: [{ key: 'strict', value: 'u1' }] },
      ],
    };
    expect((await client.shouldRateLimit(both)).statuses.map((s) => s.code)).toEqual(['OK', 'OVER_LIMIT']);
    expect(await client.health()).toBe('NOT_SERVING');
    expect(lines.join('')).toContain('1 Envoy limit is denied with 429');
  });

  it('answers the gRPC health service SERVING while ready, NOT_FOUND for another service', async () => {
    const { client } = await start();
    expect(await client.health()).toBe('SERVING');
    expect(await client.health('envoy.service.ratelimit.v3.RateLimitService')).toBe('SERVING');
    expect(await client.health('ratelimit')).toBe('SERVING');
    const error = await client.health('some.Other').then(
      () => undefined,
      (e: unknown) => e as grpc.ServiceError,
    );
    expect(error?.code).toBe(grpc.status.NOT_FOUND);
  });

  it('reloads the Envoy configuration with /admin/reload, and keeps it when the new file is bad', async () => {
    const config = await configFile(CONFIG);
    const { client, url } = await start({ config });
    // Its limits are fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    const reload = () =>
      fetch(`${url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    await writeFile(
      config,
      CONFIG.replace('requests_per_unit: 3, name: per-address', 'requests_per_unit: 1, name: per-address'),
    );
    expect((await reload()).status).toBe(200);
    expect(await codes(client, oneDescriptor('edge', ['remote_address', '198.51.100.1']), 2)).toEqual([
      'OK',
      'OVER_LIMIT',
    ]);
    await writeFile(
      config,
      'domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n',
    );
    const refused = await reload();
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain(
      'must be one of second, minute, hour, day, week, month, year (got \\"fortnight\\")',
    );
    expect(await codes(client, oneDescriptor('edge', ['remote_address', '198.51.100.2']), 2)).toEqual([
      'OK',
      'OVER_LIMIT',
    ]);
  });

  it('says at start what it serves, and refuses to start on a bad Envoy file, naming every problem', async () => {
    const { lines } = await start();
    const started = JSON.parse(lines[0] ?? '{}') as { msg: string; envoy: { domains: string[]; limits: number } };
    expect(started.msg).toMatch(/gRPC on 127\.0\.0\.1:\d+/);
    expect(started.envoy).toMatchObject({ domains: ['edge'], limits: 12 });
    const bad = await configFile(
      'domain: edge\ndescriptors:\n  - key: a\n    rate_limit: { unit: minute }\n  - key: b\n    rate_limit: { unit: day, requests_per_unit: -1 }\n',
    );
    await expect(start({ config: bad })).rejects.toThrow(/requests_per_unit: missing[\s\S]*requests_per_unit/);
  });
});
