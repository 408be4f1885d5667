// Usage history in the real service: exact counts (and settled costs, /settle's and Envoy's)
// before any flush, after SIGTERM writes what was left, and across a restart on the same
// file; hostile /usage questions get a 4xx and change nothing; a file it cannot open stops
// the start with a clear line.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import Database from 'libsql';
import { afterAll, describe, expect, it } from 'vitest';
import type { WireResponseOut } from '../scripts/lib/rls-client.js';
import { useEnvoyServices } from './helpers/envoy-service.js';
import { useMemcached } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const memcached = useMemcached();
/** Envoy's LLM route: a tenant's tokens, reserved on the request and settled at its stream's end. */
const startEnvoy = useEnvoyServices(
  memcached,
  'domain: llm\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: day, requests_per_unit: 100000, reservations: { life: 5m } }\n',
);
const folder = mkdtempSync(join(tmpdir(), 'memgate-usage-test-'));
afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

const POLICIES = join(folder, 'policies.yaml');
writeFileSync(
  POLICIES,
  [
    'events:',
    '  login:',
    '    limits:',
    '      - { limit: 5, window: 1m }',
    '  search:',
    '    limits:',
    '      - { limit: 1000, window: 1m }',
    // Never refuses beyond 2 an hour, but says which it would have.
    '  signup:',
    '    limits:',
    '      - { limit: 1000, window: 1m }',
    '      - { limit: 2, window: 1h, mode: shadow }',
    // Tokens, reserved before an answer and settled at what it cost.
    '  llm:',
    '    reservations: { life: 30s }',
    '    limits:',
    '      - { limit: 100000, window: 1m }',
    '',
  ].join('\n'),
);

interface Totals {
  allowed: number;
  denied: number;
  degraded: number;
}

async function check(service: ServiceProcess, event: string, feature: string): Promise<number> {
  const answer = await fetch(`${service.url}/check?event=${event}&feature=${encodeURIComponent(feature)}`);
  const body = await answer.text();
  // A 5xx fails the test further on; its body says why.
  if (answer.status >= 500) process.stderr.write(`/check answered ${answer.status}: ${body}\n`);
  return answer.status;
}

/** Totals of /usage over the last hour, summed over its points. */
async function usageTotals(service: ServiceProcess, event: string, feature?: string): Promise<Totals> {
  const query = new URLSearchParams({ event, from: '-1h', ...(feature ? { feature } : {}) });
  const answer = await fetch(`${service.url}/usage?${query.toString()}`);
  expect(answer.status).toBe(200);
  const { points } = (await answer.json()) as { points: Totals[] };
  return points.reduce(
    (sum, p) => ({
      allowed: sum.allowed + p.allowed,
      denied: sum.denied + p.denied,
      degraded: sum.degraded + p.degraded,
    }),
    {
      allowed: 0,
      denied: 0,
      degraded: 0,
    },
  );
}

/** What the file holds for an event, in its finest archive, read with the driver directly. */
function fileTotals(path: string, event: string): Totals {
  const db = new Database(path, { readonly: true });
  try {
    const row = db
      .prepare(
        'SELECT sum(allowed) AS allowed, sum(denied) AS denied, sum(degraded) AS degraded FROM usage_points WHERE resolution = 1 AND event = ?',
      )
      .get(event) as Record<keyof Totals, number | null>;
    return { allowed: row.allowed ?? 0, denied: row.denied ?? 0, degraded: row.degraded ?? 0 };
  } finally {
    db.close();
  }
}

/** `127.0.0.1:port` where nothing listens. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

function start(env: Record<string, string>): Promise<ServiceProcess> {
  return startServiceProcess({
    MEMCACHED_SERVERS: memcached().servers,
    MEMGATE_CONFIG: POLICIES,
    ...env,
  });
}

describe('usage history in the service', () => {
  it('answers exact counts before any flush, writes them all at SIGTERM, and adds a restart on the same file', async () => {
    const db = join(folder, 'restart.db');
    // No flush while the test runs: everything the first process counts is written at SIGTERM.
    const first = await start({ MEMGATE_USAGE_DB: db, MEMGATE_USAGE_FLUSH_S: '3600' });
    const made: Totals = { allowed: 0, denied: 0, degraded: 0 };
    const tally = (status: number) => {
      if (status === 200) made.allowed++;
      else if (status === 429) made.denied++;
      else throw new Error(`unexpected status ${status}`);
    };
    for (let i = 0; i < 9; i++) tally(await check(first, 'login', '203.0.113.7'));
    for (let i = 0; i < 3; i++) tally(await check(first, 'login', 'alice@example.com'));
    expect(made).toEqual({ allowed: 8, denied: 4, degraded: 0 });
    expect(await usageTotals(first, 'login')).toEqual(made);
    expect(await usageTotals(first, 'login', '203.0.113.7')).toEqual({ allowed: 5, denied: 4, degraded: 0 });
    const top = (await (await fetch(`${first.url}/usage/top?event=login`)).json()) as {
      denied: { feature: string; count: number }[];
    };
    expect(top.denied).toEqual([{ feature: '203.0.113.7', count: 4 }]);
    expect(await first.stop()).toBe(0);
    expect(fileTotals(db, 'login')).toEqual(made);

    const second = await start({ MEMGATE_USAGE_DB: db, MEMGATE_USAGE_FLUSH_S: '1' });
    for (let i = 0; i < 4; i++) tally(await check(second, 'login', 'bob'));
    expect(await usageTotals(second, 'login')).toEqual(made);
    const events = (await (await fetch(`${second.url}/usage/events`)).json()) as { events: { event: string }[] };
    expect(events.events.map(({ event }) => event)).toEqual(['login']);
    // Flushed every second: the file catches up without a shutdown.
    await expect.poll(() => fileTotals(db, 'login'), { timeout: 5000 }).toEqual(made);
    expect(await second.stop()).toBe(0);
  });

  it('keeps writing the file, once per decision, while Graphite refuses every flush', async () => {
    const db = join(folder, 'carbon-down.db');
    const carbon = await closedPort();
    const service = await start({ MEMGATE_USAGE_DB: db, MEMGATE_USAGE_FLUSH_S: '1', MEMGATE_GRAPHITE: carbon });
    const made: Totals = { allowed: 0, denied: 0, degraded: 0 };
    for (let i = 0; i < 3; i++) if ((await check(service, 'login', 'dup')) === 200) made.allowed++;
    await expect.poll(() => fileTotals(db, 'login'), { timeout: 5000 }).toEqual(made);
    for (let i = 0; i < 4; i++) if ((await check(service, 'search', 'erin')) === 200) made.allowed++;
    // Flushes keep failing for carbon: the answer counts each decision once all the same.
    await sleep(2500);
    expect(await usageTotals(service, 'login')).toEqual({ allowed: 3, denied: 0, degraded: 0 });
    expect(await usageTotals(service, 'search')).toEqual({ allowed: 4, denied: 0, degraded: 0 });
    expect(
      service.logs.some(
        (line) =>
          line.store === 'graphite' &&
          typeof line.msg === 'string' &&
          line.msg.startsWith('writing usage history to graphite failed'),
      ),
    ).toBe(true);
    expect(await service.stop()).toBe(0);
    expect(fileTotals(db, 'search')).toEqual({ allowed: 4, denied: 0, degraded: 0 });
  });

  it('counts the allowed checks a shadow limit would have refused as shadow_denied, in /usage and the file', async () => {
    const db = join(folder, 'shadow.db');
    const service = await start({ MEMGATE_USAGE_DB: db, MEMGATE_USAGE_FLUSH_S: '3600' });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push(await check(service, 'signup', 'mallory'));
    for (let i = 0; i < 2; i++) statuses.push(await check(service, 'search', 'mallory'));
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200]);
    type Point = Totals & { shadow_denied: number };
    const points = async (query: string) => {
      const answer = await fetch(`${service.url}/usage?from=-1h&${query}`);
      expect(answer.status).toBe(200);
      return ((await answer.json()) as { points: Point[] }).points;
    };
    const sum = (all: Point[]) =>
      all.reduce(
        (total, point) => ({
          allowed: total.allowed + point.allowed,
          denied: total.denied + point.denied,
          degraded: total.degraded + point.degraded,
          shadow_denied: total.shadow_denied + point.shadow_denied,
        }),
        { allowed: 0, denied: 0, degraded: 0, shadow_denied: 0 },
      );
    // The 3 past the shadow limit's 2 were served: in allowed too.
    expect(sum(await points('event=signup'))).toEqual({ allowed: 5, denied: 0, degraded: 0, shadow_denied: 3 });
    // Every point says it, 0 where there are none: the answer's schema keeps the field.
    const search = await points('event=search');
    expect(search.every((point) => point.shadow_denied === 0)).toBe(true);
    expect(sum(search)).toEqual({ allowed: 2, denied: 0, degraded: 0, shadow_denied: 0 });
    // Counted per event only: a client's curve has none.
    const mallory = await points('event=signup&feature=mallory');
    expect(sum(mallory)).toEqual({ allowed: 5, denied: 0, degraded: 0, shadow_denied: 0 });
    expect(await service.stop()).toBe(0);
    const file = new Database(db, { readonly: true });
    const archives = file
      .prepare(
        "SELECT resolution, sum(allowed) AS allowed, sum(shadow_denied) AS shadow_denied FROM usage_points WHERE event = 'signup' GROUP BY resolution",
      )
      .all();
    file.close();
    expect(archives).toEqual([1, 60, 3600].map((resolution) => ({ resolution, allowed: 5, shadow_denied: 3 })));
  });

  it('counts each settled reservation and its actual cost at the settle, in /usage and every archive of the file', async () => {
    const db = join(folder, 'settled.db');
    const service = await start({ MEMGATE_USAGE_DB: db, MEMGATE_USAGE_FLUSH_S: '3600' });
    const post = async (path: string, body: object) => {
      const answer = await fetch(`${service.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
    };
    const tenant = { event: 'llm', feature: 'tenant-7' };
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const reserved = await post('/check', { ...tenant, reserve: 4096 });
      expect(reserved.status).toBe(200);
      ids.push((reserved.body.reservation as { id: string }).id);
    }
    // Two settled (one at a cost of 0: the request failed before any token), one never is.
    expect(await post('/settle', { ...tenant, id: ids[0], cost: 1700 })).toMatchObject({ status: 200 });
    expect(await post('/settle', { ...tenant, id: ids[1], cost: 0 })).toMatchObject({ status: 200 });
    // Refused settles count nothing: settled twice, and a reservation this client never got.
    expect((await post('/settle', { ...tenant, id: ids[0], cost: 9000 })).status).toBe(409);
    expect((await post('/settle', { event: 'llm', feature: 'tenant-8', id: ids[2], cost: 9000 })).status).toBe(404);
    type Point = Totals & { t: number; settled: number; settled_cost: number };
    const points = async (query: string, from = '-1h') => {
      const answer = await fetch(`${service.url}/usage?from=${from}&${query}`);
      expect(answer.status).toBe(200);
      return ((await answer.json()) as { points: Point[] }).points;
    };
    const sum = (all: Point[]) =>
      all.reduce(
        (total, point) => ({
          allowed: total.allowed + point.allowed,
          settled: total.settled + point.settled,
          settled_cost: total.settled_cost + point.settled_cost,
        }),
        { allowed: 0, settled: 0, settled_cost: 0 },
      );
    // Before any flush, from memory: the three reserving checks are decisions, the two settles settles.
    const llm = await points('event=llm');
    expect(sum(llm)).toEqual({ allowed: 3, settled: 2, settled_cost: 1700 });
    // In the minute they were settled in.
    const minute = await points('event=llm&step=60', '-5min');
    const settledIn = minute.filter((point) => point.settled > 0);
    expect(sum(settledIn)).toMatchObject({ settled: 2, settled_cost: 1700 });
    const now = Date.now() / 1000;
    for (const point of settledIn) expect(now - point.t).toBeLessThan(120);
    // Every point says it, 0 where none were: the answer's schema keeps the fields.
    const search = await points('event=search');
    expect(search.every((point) => point.settled === 0 && point.settled_cost === 0)).toBe(true);
    // Counted per event only: a client's curve has none.
    expect(sum(await points('event=llm&feature=tenant-7'))).toEqual({ allowed: 3, settled: 0, settled_cost: 0 });
    expect(await service.stop()).toBe(0);
    // Written at SIGTERM into each archive: the second, its minute and its hour.
    const file = new Database(db, { readonly: true });
    const archives = file
      .prepare(
        "SELECT resolution, sum(allowed) AS allowed, sum(settled) AS settled, sum(settled_cost) AS settled_cost FROM usage_points WHERE event = 'llm' GROUP BY resolution",
      )
      .all();
    file.close();
    expect(archives).toEqual(
      [1, 60, 3600].map((resolution) => ({ resolution, allowed: 3, settled: 2, settled_cost: 1700 })),
    );
  });

  it("counts Envoy's stream-done settles too, under the Envoy descriptor's event", async () => {
    const { client, url } = await startEnvoy({ env: { MEMGATE_USAGE_DB: join(folder, 'envoy.db') } });
    const descriptor = (hits: number, id?: string) => ({
      entries: [
        { key: 'tenant', value: 'acme' },
        ...(id === undefined ? [] : [{ key: 'memgate_reservation', value: id }]),
      ],
      hits_addend: { value: hits },
    });
    type Answer = WireResponseOut & { dynamic_metadata: { fields: Record<string, { stringValue?: string }> } | null };
    const ask = async (hits: number, id?: string) =>
      (await client.shouldRateLimit({ domain: 'llm', descriptors: [descriptor(hits, id)] })) as Answer;
    const id = (await ask(1000)).dynamic_metadata?.fields.memgate_reservation?.stringValue ?? '';
    expect(id).not.toBe('');
    await ask(1700, id);
    // Settled once: the same stream-done call again changes nothing, in usage history either.
    await ask(5000, id);
    const answer = await fetch(`${url}/usage?event=${encodeURIComponent('envoy:llm.tenant')}&from=-1h`);
    expect(answer.status).toBe(200);
    const { points } = (await answer.json()) as {
      points: { allowed: number; settled: number; settled_cost: number }[];
    };
    const sum = (key: 'allowed' | 'settled' | 'settled_cost') => points.reduce((total, point) => total + point[key], 0);
    expect({ allowed: sum('allowed'), settled: sum('settled'), settled_cost: sum('settled_cost') }).toEqual({
      allowed: 1,
      settled: 1,
      settled_cost: 1700,
    });
  });

  it('refuses hostile /usage questions with a 4xx JSON error, never a 5xx, and counts nothing', async () => {
    const service = await start({ MEMGATE_USAGE_DB: join(folder, 'hostile.db') });
    try {
      for (let i = 0; i < 3; i++) await check(service, 'search', 'carol');
      const before = await usageTotals(service, 'search');
      const value = fc.oneof(
        fc.string(),
        fc.constantFrom(
          '-1h',
          'now',
          '-0s',
          '-99999999y',
          '1e9',
          '0x10',
          '2026-02-30',
          '2026-11-23T25:00:00Z',
          'NaN',
          '-',
          '--1h',
          '9'.repeat(40),
          '%zz',
          '%C0%AF',
          '\u0000',
        ),
        fc.integer({ min: -1e12, max: 1e13 }).map(String),
      );
      const name = fc.constantFrom(
        'event',
        'feature',
        'from',
        'until',
        'step',
        'maxDataPoints',
        'limit',
        'other',
        'event[]',
      );
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(name, value), { maxLength: 5 }),
          fc.constantFrom('/usage', '/usage/top', '/usage/events'),
          fc.boolean(),
          async (pairs, route, raw) => {
            const query = raw
              ? pairs.map(([k, v]) => `${k}=${v.replaceAll('#', '%23').replaceAll('&', '%26')}`).join('&')
              : new URLSearchParams(pairs).toString();
            const answer = await fetch(`${service.url}${route}?${query}`);
            const body = await answer.text();
            expect(answer.status, `${route}?${query}: ${body}`).toBeLessThan(500);
            if (answer.status >= 400)
              expect((JSON.parse(body) as { error: { code: string } }).error.code).toMatch(/^[a-z_]+$/);
          },
        ),
        { numRuns: 300 },
      );
      expect(await usageTotals(service, 'search')).toEqual(before);
    } finally {
      await service.stop();
    }
  });

  it('answers 404 usage_off with MEMGATE_USAGE_DB=off, and still decides', async () => {
    const service = await start({ MEMGATE_USAGE_DB: 'off' });
    try {
      expect(await check(service, 'login', 'dave')).toBe(200);
      const answer = await fetch(`${service.url}/usage?event=login`);
      expect(answer.status).toBe(404);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('usage_off');
    } finally {
      await service.stop();
    }
  });

  it('stops the start with one line naming MEMGATE_USAGE_DB when the file cannot be opened, and 2 for a bad retention', async () => {
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['dist/main.js'], {
          env: { PATH: process.env.PATH, PORT: '0', MEMGATE_CONFIG: POLICIES, ...env },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.once('close', (code) => {
          resolve({ code, stderr });
        });
      });
    const blocked = join(folder, 'a-file');
    writeFileSync(blocked, '');
    const unopenable = await run({ MEMGATE_USAGE_DB: join(blocked, 'usage.db') });
    expect(unopenable.code).toBe(1);
    expect(unopenable.stderr).toMatch(
      /^memgate: cannot open the usage history file MEMGATE_USAGE_DB=.*set MEMGATE_USAGE_DB=off\n$/,
    );
    const badRetention = await run({ MEMGATE_USAGE_DB: 'off', MEMGATE_USAGE_RETENTION: '1m:6h,1s:30d' });
    expect(badRetention.code).toBe(2);
    expect(badRetention.stderr).toContain('MEMGATE_USAGE_RETENTION');
  });
});
