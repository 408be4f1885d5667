// Per-client rules through the service (issue 26, parts 1, 2 and 5): two processes on one
// memcached apply an override written to the policy file within 2 s, exactly, mid-window;
// tiers come from /check's caller or from the header the gateway section trusts; allow and
// deny lists answer without counting; bad tiers are 400s that count nothing.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { loadPolicies } from '../src/policy-reload.js';
import { uniquePrefix } from './helpers/memcached.js';
import { saveAsEditor as save } from './helpers/policy-files.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const folder = mkdtempSync(join(tmpdir(), 'memgate-client-rules-'));
const services: ServiceProcess[] = [];
afterAll(async () => {
  await Promise.all(services.map((service) => service.stop()));
  rmSync(folder, { recursive: true, force: true });
});

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const service = await startServiceProcess({ MEMCACHED_SERVERS: inject('sharedMemcached'), ...env });
  services.push(service);
  return service;
}

async function get(service: ServiceProcess, path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${service.url}${path}`, { headers });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

const allowed = async (service: ServiceProcess, query: string) =>
  (await get(service, `/check?${query}`)).status === 200;

const API = `events:
  api:
    limits: [{ limit: 3, window: 1m }]
    tiers:
      pro: { limits: [{ name: pro-1m, limit: 6, window: 1m }] }
`;

describe('per-client limits through the service', () => {
  it('applies an override written to the file on two instances within 2 s, exactly, counting what the client had', async () => {
    const path = join(folder, 'override.yaml');
    writeFileSync(path, API);
    const shared = { MEMGATE_CONFIG: path, MEMGATE_KEY_PREFIX: uniquePrefix() };
    const [a, b] = [await start(shared), await start(shared)];
    const checks = (feature: string, count: number) =>
      Promise.all(
        Array.from({ length: count }, (_, i) => allowed(i % 2 === 0 ? a : b, `event=api&feature=${feature}`)),
      );
    // acme at its limit of 3 across both, another client at 2.
    expect((await checks('acme', 5)).filter(Boolean)).toHaveLength(3);
    expect((await checks('zed', 2)).filter(Boolean)).toHaveLength(2);

    save(path, `${API}    overrides:\n      - { match: { feature: acme }, limits: [{ limit: 8, window: 1m }] }\n`);
    const { version } = await loadPolicies({ policies: path });
    const started = performance.now();
    await expect
      .poll(
        async () =>
          (await Promise.all([a, b].map(async (s) => (await get(s, '/policies')).body.version))).every(
            (v) => v === version,
          ),
        {
          interval: 20,
          timeout: 2000,
        },
      )
      .toBe(true);
    expect(performance.now() - started).toBeLessThan(2000);
    // 3 counted, 8 now: exactly 5 more, from both instances at once; others keep 3.
    expect((await checks('acme', 12)).filter(Boolean)).toHaveLength(5);
    expect((await checks('zed', 3)).filter(Boolean)).toHaveLength(1);
    const decision = await get(a, '/peek?event=api&feature=acme');
    expect(decision.body.limits).toEqual([expect.objectContaining({ name: 'api-1m', limit: 8, remaining: 0 })]);
    await expect
      .poll(() => a.logs.find((line) => String(line.msg).startsWith('policies reloaded (watch)'))?.msg)
      .toBe(`policies reloaded (watch), version ${version}: api: override feature "acme" added (8/60s by 1s)`);
  });

  it('takes a tier from the caller of /check, and refuses an unknown one with 400, counting nothing', async () => {
    const path = join(folder, 'tiers.yaml');
    writeFileSync(path, API);
    const service = await start({ MEMGATE_CONFIG: path });
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await get(service, '/check?event=api&feature=u1&tier=pro')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    const post = await fetch(`${service.url}/check`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event: 'api', feature: 'u2', tier: 'pro' }),
    });
    expect(post.status).toBe(200);
    expect(post.headers.get('ratelimit-policy')).toContain('pro-1m');

    // Each client's own limits in its RateLimit-Policy, whichever came first.
    expect((await get(service, '/check?event=api&feature=u5')).headers.get('ratelimit-policy')).toBe(
      '"api-1m";q=3;w=60',
    );
    expect((await get(service, '/check?event=api&feature=u6&tier=pro')).headers.get('ratelimit-policy')).toBe(
      '"pro-1m";q=6;w=60',
    );
    const unknown = await get(service, '/check?event=api&feature=u3&tier=gold');
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({
      error: { code: 'unknown_tier', message: 'unknown tier "gold" for event api; its tiers are pro' },
    });
    expect((await get(service, '/check?event=api&feature=u3&tier=%FF')).body).toMatchObject({
      error: { code: 'invalid_tier' },
    });
    expect((await get(service, '/check?event=api&feature=u3&tier=')).body).toMatchObject({
      error: { code: 'invalid_tier' },
    });
    // Nothing was counted for u3.
    expect((await get(service, '/peek?event=api&feature=u3')).body.limits).toEqual([
      expect.objectContaining({ remaining: 3 }),
    ]);
    // A batch refuses the item alone.
    const batch = await fetch(`${service.url}/check/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { event: 'api', feature: 'u4', tier: 'gold' },
        { event: 'api', feature: 'u4', tier: 'pro' },
      ]),
    });
    const items = (await batch.json()) as Record<string, unknown>[];
    expect(items[0]).toMatchObject({ status: 400, error: { code: 'unknown_tier' } });
    expect(items[1]).toMatchObject({
      allowed: true,
      limits: [expect.objectContaining({ name: 'pro-1m', remaining: 5 })],
    });
  });

  it('answers listed clients without counting: allowed, or refused for good without Retry-After', async () => {
    const path = join(folder, 'lists.yaml');
    writeFileSync(
      path,
      `events:
  api:
    limits: [{ limit: 1, window: 1m }]
    allow: [{ feature: monitor }]
    deny: [{ cidr: 192.0.2.0/24 }]
`,
    );
    const service = await start({ MEMGATE_CONFIG: path });
    for (let i = 0; i < 3; i++) expect(await allowed(service, 'event=api&feature=monitor')).toBe(true);
    const denied = await get(service, '/check?event=api&feature=192.0.2.9');
    expect(denied.status).toBe(429);
    expect(denied.body).toEqual({
      allowed: false,
      limits: [],
      listed: 'deny',
      policyVersion: expect.any(String) as string,
    });
    expect(denied.headers.get('retry-after')).toBeNull();
    expect((await get(service, '/check?event=api&feature=monitor')).body).toEqual({
      allowed: true,
      limits: [],
      listed: 'allow',
      policyVersion: expect.any(String) as string,
    });
  });
});

describe('/gate with tiers and lists', () => {
  const GATE = `gateway:
  feature: header:x-user
  tier: header:x-memgate-tier
  routes: [{ prefix: /login, event: login }, { prefix: /, event: api }]
  allow: [{ feature: ops }]
  deny: [{ prefix: banned- }]
${API}  login:
    limits: [{ limit: 2, window: 1m }]
`;

  it('takes the tier from the header the gateway section names, and applies its lists to every path', async () => {
    const path = join(folder, 'gate.yaml');
    writeFileSync(path, GATE);
    const service = await start({ MEMGATE_CONFIG: path });
    const gate = (user: string, tier?: string) =>
      get(service, '/gate/v1/x', { 'x-user': user, ...(tier === undefined ? {} : { 'x-memgate-tier': tier }) });
    const pro: number[] = [];
    for (let i = 0; i < 7; i++) pro.push((await gate('p1', 'pro')).status);
    expect(pro).toEqual([200, 200, 200, 200, 200, 200, 429]);
    const plain: number[] = [];
    for (let i = 0; i < 4; i++) plain.push((await gate('p2')).status);
    expect(plain).toEqual([200, 200, 200, 429]);
    const unknown = await gate('p3', 'gold');
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get('memgate-error')).toBe('unknown_tier');
    for (let i = 0; i < 5; i++) expect((await gate('ops')).status).toBe(200);
    // An event without tiers takes the gateway's tier header as no tier at all.
    const login: number[] = [];
    for (let i = 0; i < 3; i++)
      login.push((await get(service, '/gate/login', { 'x-user': 'p1', 'x-memgate-tier': 'pro' })).status);
    expect(login).toEqual([200, 200, 429]);
    const banned = await gate('banned-1');
    expect([banned.status, banned.body.listed, banned.headers.get('retry-after')]).toEqual([429, 'deny', null]);
  });
});
