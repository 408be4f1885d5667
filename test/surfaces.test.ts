// The same answer on every surface: one service (HTTP, gRPC, metrics and usage history, on a
// real memcached) asked the same question about the same client by each way it can be asked:
// /check, /peek, a batch's item, /lease, a reserving /check and its settle, /gate, Envoy's
// descriptors, and the library's checkTogether. Each answer resolves the client the same way
// (lists, then overrides and the event's limits, shadow limits included), and each decision
// reaches the metrics and usage history exactly once.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePolicyText } from '../src/config/policies.js';
import type { Decision } from '../src/counting/decision.js';
import { createLimiter, type ObservedDecision } from '../src/counting/limiter.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { envoyConfigFile, startEnvoyService, type EnvoyService } from './helpers/envoy-service.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { awayFromWindowEnd } from './helpers/window.js';

const POLICIES = `
events:
  api:
    limits:
      - { limit: 5, window: 1m }
      - { name: api-trial, limit: 2, window: 1m, mode: shadow }
    overrides:
      - { match: { prefix: tight- }, limits: [{ name: api-tight, limit: 1, window: 1m }] }
    allow: [{ feature: monitor }]
    deny: [{ prefix: bot- }]
  llm:
    limits: [{ limit: 100, window: 1m }]
    overrides:
      - { match: { prefix: tight- }, limits: [{ name: llm-tight, limit: 1, window: 1m }] }
    allow: [{ feature: monitor }]
    deny: [{ prefix: bot- }]
    lease: { maxUnits: 10, life: 5s }
    reservations: { life: 30s }
gateway:
  feature: header:x-client
  uri: header:x-original-uri
  routes:
    - { prefix: /api/, event: api }
  allow: [{ feature: gate-friend }]
  deny: [{ feature: gate-foe }]
`;

const ENVOY = `
domain: edge
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: trial
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: blocked
    rate_limit: { unit: minute, requests_per_unit: 0 }
`;

const memcached = useMemcached();
let memgate: EnvoyService;

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-surfaces-'));
  const policies = join(dir, 'policies.yaml');
  await writeFile(policies, POLICIES);
  memgate = await startEnvoyService(memcached(), {
    config: await envoyConfigFile(ENVOY),
    env: { MEMGATE_CONFIG: policies, MEMGATE_USAGE_DB: join(dir, 'usage.db') },
  });
});

afterAll(async () => {
  memgate.client.close();
  await memgate.service.close();
});

/** What an answer says of how its client was resolved: its list, its limits, its shadow limits. */
function resolution(decision: Decision) {
  return {
    allowed: decision.allowed,
    listed: decision.listed,
    limits: decision.limits.map(({ name, limit }) => `${name}/${limit}`),
    shadowLimits: decision.shadowLimits?.map(({ name, limit }) => `${name}/${limit}`),
    shadowDenied: decision.shadowDenied,
    policyVersion: typeof decision.policyVersion,
  };
}

async function post(path: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const answer = await fetch(`${memgate.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: answer.status, body: await answer.json() };
}

async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
  const answer = await fetch(`${memgate.url}${path}`, { headers });
  return { status: answer.status, body: await answer.json() };
}

/** memgate_decisions_total of an event, by kind and outcome. */
async function decisionCounts(event: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${memgate.url}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const match = /^memgate_decisions_total\{event="([^"]+)",kind="(\w+)",outcome="(\w+)"\} (\d+)$/.exec(line);
    if (match?.[1] === event) counts[`${match[2]}/${match[3]}`] = Number(match[4]);
  }
  return counts;
}

/** What usage history holds of one client of an event over the last hour. */
async function usageOf(event: string, feature: string): Promise<{ allowed: number; denied: number }> {
  const query = new URLSearchParams({ event, feature, from: '-1h' });
  const body = (await get(`/usage?${query.toString()}`)).body as {
    points: { allowed: number; denied: number; shadow_denied: number }[];
  };
  const totals = { allowed: 0, denied: 0 };
  for (const point of body.points) {
    totals.allowed += point.allowed;
    totals.denied += point.denied;
  }
  return totals;
}

/** What asking did to the metrics of `event`: the counts that moved, by how much. */
async function movedBy(event: string, ask: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await decisionCounts(event);
  await ask();
  const after = await decisionCounts(event);
  const moved: Record<string, number> = {};
  for (const [key, count] of Object.entries(after)) {
    const delta = count - (before[key] ?? 0);
    if (delta !== 0) moved[key] = delta;
  }
  return moved;
}

/** The clients every surface is asked about, each a fresh counter: listed, over an override's limit, past a shadow limit. */
function clients() {
  const run = uniquePrefix();
  return {
    allowed: 'monitor',
    denied: `bot-${run}`,
    tight: `tight-${run}`,
    fresh: `fresh-${run}`,
  };
}

describe('the same client, the same question, on every surface', () => {
  it('/check, /peek and a batch’s item resolve a client alike, each reported once', async () => {
    const { allowed, denied, tight } = clients();
    for (const feature of [allowed, denied, tight]) {
      const query = `event=api&feature=${feature}`;
      let check: { body: unknown } = { body: undefined };
      expect(await movedBy('api', async () => (check = await get(`/check?${query}`)))).toEqual({
        [`check/${feature === denied ? 'denied' : 'allowed'}`]: 1,
      });
      // The second check of the tight client is over its override's limit of 1.
      const again = await get(`/check?${query}`);
      const peek = await get(`/peek?${query}`);
      const batch = await post('/check/batch', [{ event: 'api', feature }]);
      const [item] = batch.body as Decision[];
      expect(resolution(peek.body as Decision)).toEqual(resolution(again.body as Decision));
      expect(resolution(item as Decision)).toEqual(resolution(again.body as Decision));
      if (feature === tight) {
        expect(resolution(check.body as Decision).limits).toEqual(['api-tight/1']);
        expect((again.body as Decision).allowed).toBe(false);
      }
    }
    // Listed clients: decided by their lists, counting nothing, on every surface.
    expect(resolution((await get(`/peek?event=api&feature=${allowed}`)).body as Decision)).toMatchObject({
      allowed: true,
      listed: 'allow',
      limits: [],
    });
    expect(await movedBy('api', () => post('/check/batch', [{ event: 'api', feature: denied }]))).toEqual({
      'check/denied': 1,
    });
  });

  it('a lease take and a reservation resolve lists and overrides as a check does', async () => {
    const { allowed, denied, tight } = clients();
    for (const feature of [allowed, denied]) {
      const check = (await get(`/check?event=llm&feature=${feature}`)).body as Decision;
      const lease = await post('/lease', { event: 'llm', feature, units: 5 });
      const reserve = await post('/check', { event: 'llm', feature, reserve: 5 });
      expect(resolution(lease.body as Decision)).toEqual(resolution(check));
      expect(resolution(reserve.body as Decision)).toEqual(resolution(check));
      // A listed client counts nothing: it has no lease to return and no reservation to settle.
      expect(lease.body).not.toHaveProperty('lease');
      expect(reserve.body).not.toHaveProperty('reservation');
      expect(await movedBy('llm', () => post('/lease', { event: 'llm', feature, units: 1 }))).toEqual({
        [`check/${feature === denied ? 'denied' : 'allowed'}`]: 1,
      });
      expect(await movedBy('llm', () => post('/check', { event: 'llm', feature, reserve: 1 }))).toEqual({
        [`check/${feature === denied ? 'denied' : 'allowed'}`]: 1,
      });
    }
    // The override's limit of 1, on each surface alike.
    const lease = await post('/lease', { event: 'llm', feature: tight, units: 5 });
    expect(lease.body).toMatchObject({ allowed: true, limits: [{ name: 'llm-tight', limit: 1 }], lease: { units: 1 } });
    const reserve = await post('/check', { event: 'llm', feature: tight, reserve: 1 });
    expect(resolution(reserve.body as Decision)).toMatchObject({ allowed: false, limits: ['llm-tight/1'] });
    // Usage history holds each decision of the listed clients once: 4 asks each above.
    expect(await usageOf('llm', denied)).toEqual({ allowed: 0, denied: 5 });
  });

  it('/gate resolves the gateway’s lists first, then the event’s, as /check does, each reported once', async () => {
    const { allowed, denied, tight } = clients();
    const gate = (feature: string, uri = '/api/x') => get('/gate', { 'x-client': feature, 'x-original-uri': uri });
    for (const feature of [allowed, denied, tight]) {
      await get(`/check?event=api&feature=${feature}`);
      // What a check would answer now (the tight client is at its override's limit of 1).
      const peek = (await get(`/peek?event=api&feature=${feature}`)).body as Decision;
      const before = await decisionCounts('api');
      const gated = await gate(feature);
      const after = await decisionCounts('api');
      expect(resolution(gated.body as Decision)).toEqual(resolution(peek));
      const moved = Object.values(after).reduce((a, b) => a + b, 0) - Object.values(before).reduce((a, b) => a + b, 0);
      expect(moved).toBe(1);
    }
    // The gateway's own lists, on a routed path and on one no route counts.
    let foe: { body: unknown } = { body: undefined };
    expect(await movedBy('api', async () => (foe = await gate('gate-foe')))).toEqual({ 'check/denied': 1 });
    expect(foe.body).toMatchObject({ listed: 'deny' });
    expect(await movedBy('gateway:unrouted', async () => (foe = await gate('gate-foe', '/static/app.js')))).toEqual({
      'check/denied': 1,
    });
    expect(foe.body).toMatchObject({ listed: 'deny' });
    expect((await gate('gate-friend', '/static/app.js')).body).toMatchObject({ allowed: true, listed: 'allow' });
  });

  it('Envoy’s descriptors are decided as a check of their event is, zero limits and shadow_mode included, each reported once', async () => {
    const feature = `u-${uniquePrefix()}`;
    const ask = (key: string) =>
      memgate.client.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key, value: feature }] }] });
    // Its limits are a minute's fixed windows: every call below must fall in one.
    await awayFromWindowEnd(60);
    // A limit of 0: over, counting nothing, reported once under its event.
    let answer = await ask('blocked');
    expect(await movedBy('envoy:edge.blocked', async () => (answer = await ask('blocked')))).toEqual({
      'check/denied': 1,
    });
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expect(resolution((await get(`/peek?event=envoy:edge.blocked&feature=${feature}`)).body as Decision)).toMatchObject(
      {
        allowed: false,
        limits: ['edge.blocked/0'],
      },
    );
    // shadow_mode past its limit: OK, reported as what enforcing would refuse.
    await ask('trial');
    expect(await movedBy('envoy:edge.trial', async () => (answer = await ask('trial')))).toEqual({
      'check/shadow_denied': 1,
    });
    expect(answer.overall_code).toBe('OK');
    // An enforced limit: the gRPC answer and a /check of its event agree.
    expect((await ask('user')).overall_code).toBe('OK');
    const over = await ask('user');
    const check = (await get(`/check?event=envoy:edge.user&feature=${feature}`)).body as Decision;
    expect(over.overall_code).toBe('OVER_LIMIT');
    expect(check.allowed).toBe(false);
    expect(over.statuses[0]?.limit_remaining).toBe(check.limits[0]?.remaining);
  });
});

describe('checks decided together', () => {
  it('resolve each check as a lone check does: lists, overrides, shadow limits; each reported once', async () => {
    const observed: ObservedDecision[] = [];
    const limiter = createLimiter({
      policies: parsePolicyText(POLICIES, 'surfaces.yaml'),
      store: createEmbeddedStore(),
      onDecision: (o) => observed.push(o),
    });
    const { allowed, denied, tight, fresh } = clients();
    for (const feature of [allowed, denied, tight, tight, fresh, fresh, fresh]) {
      const lone = await limiter.peek({ event: 'api', feature });
      const together = await limiter.checkTogether([{ event: 'api', feature }]);
      expect(resolution(together.checks[0] as Decision)).toMatchObject({
        ...resolution(lone),
        // A peek counts nothing; what the check then counted shows in its shadow limits' denials only.
        shadowDenied: (together.checks[0] as Decision).shadowDenied,
      });
    }
    // The shadow limit of 2 beside the limit of 5: past it, the check is allowed and names it.
    expect((await limiter.checkTogether([{ event: 'api', feature: fresh }])).checks[0]).toMatchObject({
      allowed: true,
      shadowDenied: ['api-trial'],
    });
    // A listed client among others: answered by its list, not holding the others back.
    const mixed = await limiter.checkTogether([
      { event: 'api', feature: allowed },
      { event: 'api', feature: `other-${fresh}` },
    ]);
    expect(mixed.allowed).toBe(true);
    expect(mixed.checks[0]).toMatchObject({ allowed: true, listed: 'allow' });
    // Each check of each request reported once: 7 peeks, 7 + 1 + 2 checks.
    expect(observed.filter((o) => o.kind === 'peek')).toHaveLength(7);
    expect(observed.filter((o) => o.kind === 'check')).toHaveLength(10);
  });
});
