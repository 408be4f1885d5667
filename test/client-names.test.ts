// One client, one name (issue 38, point 4): an IP address is one client however it is written
// (`::ffff:10.9.9.9` is `10.9.9.9`, `2001:DB8::7` is `2001:db8::7`), on every surface of a
// running service (HTTP, /gate, Envoy's gRPC, usage history, what-if) counting in a real
// memcached, and every rule of the file matches it however the file writes it. A rule that can
// never match is refused, or warned of, when the file is loaded, by the service and by
// `memgate policies`. And a reservation settles under the plan it was reserved under, whatever
// tier the settle names.
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterKeyBase, tokenBucketKey } from '../src/counting/keys.js';
import type { Decision } from '../src/counting/decision.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { envoyConfigFile, startEnvoyService, useEnvoyServices, type EnvoyService } from './helpers/envoy-service.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { awayFromWindowEnd } from './helpers/window.js';

const POLICIES = `
events:
  api:
    limits: [{ name: api-1m, limit: 3, window: 1m }]
    tiers:
      free: { limits: [{ name: free-1m, limit: 1, window: 1m }] }
      pro: { limits: [{ name: pro-1m, limit: 100, window: 1m }] }
    overrides:
      - { match: { feature: 10.9.9.8 }, tier: free }
    deny: [{ feature: 10.9.9.9 }]
  llm:
    limits: [{ limit: 100, window: 1m }]
    deny: [{ feature: "::FFFF:10.9.9.9" }]
    lease: { maxUnits: 10, life: 5s }
    reservations: { life: 30s }
  tokens:
    algorithm: token-bucket
    limits: [{ rate: 10/1m, burst: 10 }]
    tiers:
      fast: { limits: [{ rate: 100/1m, burst: 100 }] }
    reservations: { life: 30s }
gateway:
  feature: header:x-client
  uri: header:x-original-uri
  routes: [{ prefix: /api/, event: api }]
`;

const ENVOY = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 1 }
`;

const memcached = useMemcached();
const services = useEnvoyServices(memcached, ENVOY);
const run = promisify(execFile);
let folder: string;
let memgate: EnvoyService;
const prefix = uniquePrefix();

async function file(name: string, text: string): Promise<string> {
  const path = join(folder, name);
  await writeFile(path, text);
  return path;
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'memgate-client-names-'));
  memgate = await startEnvoyService(memcached(), {
    config: await envoyConfigFile(ENVOY),
    prefix,
    env: { MEMGATE_CONFIG: await file('policies.yaml', POLICIES), MEMGATE_USAGE_DB: join(folder, 'usage.db') },
  });
});

afterAll(async () => {
  memgate.client.close();
  await memgate.service.close();
});

async function ask(
  url: string,
  path: string,
  { body, headers = {} }: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Decision & Record<string, unknown> }> {
  const answer = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: answer.status, body: (await answer.json()) as Decision & Record<string, unknown> };
}

const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

/** `memgate policies FILE`, as an operator runs it. */
async function policiesCommand(path: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['dist/main.js', 'policies', path]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('every spelling of an address is one client, on every surface', () => {
  it('a deny list naming an address refuses every spelling of it: /check, /peek, a batch, /lease, a reservation, /gate; counting nothing', async () => {
    const { url } = memgate;
    for (const feature of ['::ffff:10.9.9.9', '::FFFF:10.9.9.9', '0:0:0:0:0:ffff:a09:909', '10.9.9.9']) {
      const answers = [
        await ask(url, `/check?${query({ event: 'api', feature })}`),
        await ask(url, '/check', { body: { event: 'api', feature } }),
        await ask(url, `/peek?${query({ event: 'api', feature })}`),
        await ask(url, '/lease', { body: { event: 'llm', feature, units: 5 } }),
        await ask(url, '/check', { body: { event: 'llm', feature, reserve: 5 } }),
        await ask(url, '/gate', { headers: { 'x-client': feature, 'x-original-uri': '/api/x' } }),
      ];
      for (const { status, body } of answers) {
        expect({ feature, status, listed: body.listed }).toEqual({ feature, status: 429, listed: 'deny' });
        expect(body).not.toHaveProperty('lease');
        expect(body).not.toHaveProperty('reservation');
      }
      const batch = await ask(url, '/check/batch', {
        body: [
          { event: 'api', feature },
          { event: 'llm', feature },
        ],
      });
      expect((batch.body as unknown as Decision[]).map((decision) => decision.listed)).toEqual(['deny', 'deny']);
    }
  });

  it('an override naming an address holds every spelling of it to its tier, whatever tier the caller names', async () => {
    const first = await ask(memgate.url, `/check?${query({ event: 'api', feature: '::ffff:10.9.9.8', tier: 'pro' })}`);
    expect(first.status).toBe(200);
    expect(first.body.limits.map(({ name, limit }) => `${name}/${limit}`)).toEqual(['free-1m/1']);
    const again = await ask(memgate.url, '/check', { body: { event: 'api', feature: '10.9.9.8', tier: 'pro' } });
    expect(again.status).toBe(429);
  });

  it('counts every spelling of an IPv6 address as one client, under the key of its one spelling', async () => {
    const spellings = ['2001:DB8::7', '2001:db8:0:0:0:0:0:7', '2001:0db8::0007'];
    const remaining: number[] = [];
    for (const feature of spellings) {
      const { status, body } = await ask(memgate.url, '/check', { body: { event: 'api', feature } });
      expect(status).toBe(200);
      remaining.push(body.limits[0]?.remaining ?? -1);
    }
    expect(remaining).toEqual([2, 1, 0]);
    expect((await ask(memgate.url, `/check?${query({ event: 'api', feature: '2001:db8::7' })}`)).status).toBe(429);
    // What Memcached holds: a token bucket's one value, under the address's one spelling only.
    expect((await ask(memgate.url, '/check', { body: { event: 'tokens', feature: '::FFFF:10.9.9.7' } })).status).toBe(
      200,
    );
    const store = createMemcachedStore({ servers: memcached().servers });
    try {
      const keyOf = (feature: string) => tokenBucketKey(counterKeyBase(prefix, 'tokens', feature));
      expect((await store.readVersioned(keyOf('10.9.9.7'))).value).toBeGreaterThan(0);
      expect((await store.readVersioned(keyOf('::FFFF:10.9.9.7'))).value).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('Envoy’s descriptors (gRPC): a remote_address is one client however Envoy writes it', async () => {
    const descriptor = (value: string) => ({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'remote_address', value }] }],
    });
    // A minute's fixed window: each pair below must fall in one.
    await awayFromWindowEnd(60);
    expect((await memgate.client.shouldRateLimit(descriptor('::ffff:10.7.7.7'))).overall_code).toBe('OK');
    expect((await memgate.client.shouldRateLimit(descriptor('10.7.7.7'))).overall_code).toBe('OVER_LIMIT');
    expect((await memgate.client.shouldRateLimit(descriptor('2001:DB8::77'))).overall_code).toBe('OK');
    expect((await memgate.client.shouldRateLimit(descriptor('2001:db8:0::77'))).overall_code).toBe('OVER_LIMIT');
  });

  it('usage history answers for an address asked for in any spelling', async () => {
    const feature = '10.6.6.6';
    for (const spelling of ['::ffff:10.6.6.6', '10.6.6.6', '::FFFF:a06:606', '10.6.6.6'])
      await ask(memgate.url, `/check?${query({ event: 'api', feature: spelling })}`);
    for (const asked of [feature, '::ffff:10.6.6.6']) {
      const { body } = await ask(memgate.url, `/usage?${query({ event: 'api', feature: asked, from: '-1h' })}`);
      const points = body.points as { allowed: number; denied: number }[];
      const total = points.reduce(
        (sum, point) => ({ allowed: sum.allowed + point.allowed, denied: sum.denied + point.denied }),
        {
          allowed: 0,
          denied: 0,
        },
      );
      expect({ asked, ...total }).toEqual({ asked, allowed: 3, denied: 1 });
    }
  });

  it('memgate what-if places a logged client by the file’s rules, however either writes the address', async () => {
    const line = (host: string, second: number) =>
      `${host} - - [26/Nov/2026:12:00:0${second} +0000] "GET /api/x HTTP/1.1" 200 10`;
    const log = await file(
      'spellings.log',
      `${[0, 1, 2].flatMap((second) => [line('10.0.0.1', second), line('2001:db8:0:12ab::1', second)]).join('\n')}\n`,
    );
    const rules = (deny: string, override: string) =>
      file(
        `what-if-${uniquePrefix()}.yaml`,
        `gateway:\n  routes: [{ prefix: /api/, event: api }]\n  deny: [${deny}]\nevents:\n  api:\n    limits: [{ limit: 10, window: 1m }]\n    overrides: [${override}]\n`,
      );
    const current = await rules(
      '{ feature: "192.0.2.1" }',
      '{ match: { feature: "2001:db8::1" }, limits: [{ limit: 1, window: 1m }] }',
    );
    const next = await rules(
      '{ feature: "::FFFF:10.0.0.1" }',
      '{ match: { feature: "2001:DB8:0:1200::/56" }, limits: [{ limit: 1, window: 1m }] }',
    );
    const { stdout } = await run(process.execPath, [
      'dist/main.js',
      'what-if',
      '--policies',
      next,
      '--current',
      current,
      '--trace',
      log,
      '--json',
    ]);
    const report = JSON.parse(stdout) as { events: { event: string; denied: { current: number; new: number } }[] };
    const denied = Object.fromEntries(report.events.map((event) => [event.event, event.denied]));
    expect(denied['(gateway deny list)']).toEqual({ current: 0, new: 3 });
    expect(denied.api).toEqual({ current: 0, new: 2 });
  });
});

describe('/gate and the rules of a file', () => {
  const gatewayFile = (gateway: string, eventRules = '') =>
    file(
      `gateway-${uniquePrefix()}.yaml`,
      `events:\n  api:\n    limits: [{ limit: 5, window: 1m }]\n${eventRules}gateway:\n  trustedProxies: 1\n  uri: header:x-original-uri\n  routes: [{ prefix: /api/, event: api }]\n${gateway}`,
    );
  const gate = (service: EnvoyService, client: string) =>
    ask(service.url, '/gate', { headers: { 'x-forwarded-for': client, 'x-original-uri': '/api/x' } });

  it('matches a gateway list entry however the file writes the address: IPv6 clients by their /56, or each alone', async () => {
    const grouped = await services({
      env: {
        MEMGATE_CONFIG: await gatewayFile(
          '  deny: [{ feature: "2001:DB8:BAD::/56" }, { feature: "::ffff:203.0.113.9" }]\n',
        ),
      },
    });
    for (const client of ['2001:db8:bad::2', '2001:DB8:BAD:FF::1', '203.0.113.9', '::ffff:203.0.113.9']) {
      const { status, body } = await gate(grouped, client);
      expect({ client, status, listed: body.listed }).toEqual({ client, status: 429, listed: 'deny' });
    }
    expect((await gate(grouped, '2001:db8:bad:100::1')).status).toBe(200);
    const alone = await services({
      env: { MEMGATE_CONFIG: await gatewayFile('  ipv6Subnet: false\n  deny: [{ feature: "2001:DB8:BAD::2" }]\n') },
    });
    expect((await gate(alone, '2001:db8:bad::2')).body.listed).toBe('deny');
    expect((await gate(alone, '2001:db8:bad:0:0:0:0:2')).body.listed).toBe('deny');
    expect((await gate(alone, '2001:db8:bad::3')).status).toBe(200);
  });

  it('refuses, at start and in memgate policies, a rule that can never match: an address inside a grouped network, an address written twice', async () => {
    const inside = await gatewayFile('  deny: [{ feature: "2001:db8:bad::2" }]\n');
    await expect(services({ env: { MEMGATE_CONFIG: inside } })).rejects.toThrow(
      /gateway, field deny\[0\]: 2001:db8:bad::2 is one IPv6 address, but \/gate counts IPv6 clients by their \/56/,
    );
    const checked = await policiesCommand(inside);
    expect(checked.code).toBe(1);
    expect(checked.stderr).toContain(
      'gateway, field deny[0]: 2001:db8:bad::2 is one IPv6 address, but /gate counts IPv6 clients by their /56 (gateway.ipv6Subnet), so it never holds one; match { cidr: 2001:db8:bad::/56 }',
    );
    const twice = await gatewayFile('', '    deny: [{ feature: 10.9.9.9 }, { feature: "::ffff:10.9.9.9" }]\n');
    await expect(services({ env: { MEMGATE_CONFIG: twice } })).rejects.toThrow(
      /feature "10\.9\.9\.9" is listed more than once/,
    );
    const twiceChecked = await policiesCommand(twice);
    expect(twiceChecked.code).toBe(1);
    expect(twiceChecked.stderr).toContain('event "api", field deny: feature "10.9.9.9" is listed more than once');
  });

  it('warns, at start and in memgate policies, of an event’s rule /gate never matches, and loads it: /check still matches it', async () => {
    const warned = await gatewayFile('', '    deny: [{ feature: "2001:db8:bad::2" }]\n');
    const warning =
      'event "api", field deny[0].feature: 2001:db8:bad::2 is one IPv6 address, but /gate counts IPv6 clients by their /56 (gateway.ipv6Subnet), so it never holds one';
    const checked = await policiesCommand(warned);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain('1 events, valid, with 1 warning');
    expect(checked.stderr).toContain(warning);
    const service = await services({ env: { MEMGATE_CONFIG: warned } });
    const logged = service.lines.map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(logged.filter((line) => line.level === 40 && line.msg.includes(warning))).toHaveLength(1);
    expect((await ask(service.url, `/check?${query({ event: 'api', feature: '2001:DB8:BAD::2' })}`)).body.listed).toBe(
      'deny',
    );
    expect((await gate(service, '2001:db8:bad::2')).body.listed).toBeUndefined();
  });
});

describe('a reservation settles under the plan it was reserved under', () => {
  /** What a token bucket's client has left, counting nothing. */
  const remaining = async (feature: string, tier?: string) =>
    (await ask(memgate.url, `/peek?${query({ event: 'tokens', feature, ...(tier ? { tier } : {}) })}`)).body.limits[0]
      ?.remaining;

  it('reserved with no tier and settled naming a faster one: the bucket stays where the reservation left it', async () => {
    const feature = `slow-${uniquePrefix()}`;
    const reserved = await ask(memgate.url, '/check', { body: { event: 'tokens', feature, reserve: 5 } });
    expect(reserved.body.limits[0]?.remaining).toBe(5);
    const id = (reserved.body.reservation as { id: string }).id;
    const settled = await ask(memgate.url, '/settle', {
      body: { event: 'tokens', feature, id, cost: 5, tier: 'fast' },
    });
    expect(settled.body).toEqual({ reserved: 5, cost: 5, counted: 0 });
    // 10 a minute: a token every 6 s, so none comes back while the test runs.
    expect(await remaining(feature)).toBe(5);
  });

  it('reserved under a tier and settled naming none: counted at that tier’s rate', async () => {
    const feature = `fast-${uniquePrefix()}`;
    const reserved = await ask(memgate.url, '/check', {
      body: { event: 'tokens', feature, reserve: 5, tier: 'fast' },
    });
    expect(reserved.body.limits[0]?.remaining).toBe(95);
    const id = (reserved.body.reservation as { id: string }).id;
    await ask(memgate.url, '/settle', { body: { event: 'tokens', feature, id, cost: 6 } });
    // One more token at the tier's 0.6 s each, not at the event's own 6 s (which would leave 45).
    expect(await remaining(feature, 'fast')).toBeGreaterThanOrEqual(94);
    expect(await remaining(feature, 'fast')).toBeLessThanOrEqual(95);
  });

  it('refuses a settle naming a tier the event does not have, settling nothing', async () => {
    const feature = `none-${uniquePrefix()}`;
    const reserved = await ask(memgate.url, '/check', { body: { event: 'tokens', feature, reserve: 5 } });
    const id = (reserved.body.reservation as { id: string }).id;
    const refused = await ask(memgate.url, '/settle', {
      body: { event: 'tokens', feature, id, cost: 0, tier: 'gold' },
    });
    expect(refused.status).toBe(400);
    expect(await remaining(feature)).toBe(5);
    expect((await ask(memgate.url, '/settle', { body: { event: 'tokens', feature, id, cost: 0 } })).body).toEqual({
      reserved: 5,
      cost: 0,
      counted: -5,
    });
    expect(await remaining(feature)).toBe(10);
  });
});
