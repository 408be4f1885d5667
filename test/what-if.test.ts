// `memgate what-if` as an operator runs it (node dist/main.js what-if), on the shared NASA trace
// and a generated log, checked against a replay of the same requests through memgate's limiter
// counting in a real memcached (its clock driven by the log's times), under each policy file.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parsePolicyText, type PolicySet } from '../src/config/policies.js';
import { createLimiter } from '../src/counting/limiter.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { parseAccessLog, type LoggedRequest } from '../src/what-if/access-log.js';
import type { WhatIfReport } from '../src/what-if/compare.js';
import { placeRequest } from '../src/what-if/exact-replay.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { sharedFile } from './helpers/shared-files.js';

const run = promisify(execFile);
const memcached = useMemcached();
const folder = mkdtempSync(join(tmpdir(), 'memgate-what-if-'));
afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

function file(name: string, text: string): string {
  const path = join(folder, name);
  writeFileSync(path, text);
  return path;
}

async function whatIf(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['dist/main.js', 'what-if', ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const CURRENT = `gateway:
  routes:
    - { prefix: /images/, event: images }
    - { prefix: /, event: pages }
events:
  images:
    limits: [{ limit: 12, window: 1m }]
  pages:
    limits: [{ limit: 8, window: 1m }, { limit: 40, window: 10m }]
`;
const NEW = `gateway:
  routes:
    - { prefix: /images/, event: images }
    - { prefix: /, event: pages }
  deny: [{ prefix: "piweba" }]
events:
  images:
    limits: [{ limit: 6, window: 1m }]
    overrides:
      - { match: { prefix: "uplherc" }, limits: [{ limit: 30, window: 1m }] }
  pages:
    limits: [{ limit: 5, window: 1m }, { limit: 30, window: 10m, mode: shadow }]
`;

/** Per event, the denials and per-client denials of `requests` decided by memgate against memcached. */
async function throughMemgate(set: PolicySet, requests: readonly LoggedRequest[]) {
  const clock = { ms: 0 };
  const limiter = createLimiter({
    policies: set,
    store: createMemcachedStore({ servers: memcached().servers }),
    now: () => clock.ms,
    keyPrefix: uniquePrefix(),
  });
  const denied = new Map<string, number>();
  const clients = new Map<string, number>();
  try {
    for (const request of requests) {
      const placement = placeRequest(set, request);
      if (placement.kind !== 'count') continue;
      clock.ms = request.ms;
      const listed = set.gateway?.listed(placement.feature);
      const allowed =
        listed === 'deny'
          ? false
          : (await limiter.check({ event: placement.event, feature: placement.feature })).allowed;
      if (!allowed) {
        denied.set(placement.event, (denied.get(placement.event) ?? 0) + 1);
        const key = `${placement.event} ${placement.feature}`;
        clients.set(key, (clients.get(key) ?? 0) + 1);
      }
    }
  } finally {
    await limiter.close();
  }
  return { denied, clients };
}

function refusedWith(result: { code: number; stderr: string }, code: number, text: string): void {
  expect(result.code).toBe(code);
  expect(result.stderr).toContain(text);
}

describe('memgate what-if', () => {
  it('reports on the NASA trace exactly what memgate decides under each file', async (test) => {
    const trace = fileURLToPath(sharedFile(test, 'traces/nasa-http-aug95-first-72min.log'));
    const [current, next] = [file('current.yaml', CURRENT), file('new.yaml', NEW)];
    const { code, stdout } = await whatIf([
      '--policies',
      next,
      '--current',
      current,
      '--trace',
      trace,
      '--json',
      '--top',
      '1000',
    ]);
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as WhatIfReport;
    expect(report.trace.requests).toBe(1880);
    const log = parseAccessLog(readFileSync(trace, 'utf8'));
    const sides = [
      {
        set: parsePolicyText(CURRENT, current),
        pick: (both: { current: number }) => both.current,
        denied: 'deniedNow' as const,
      },
      { set: parsePolicyText(NEW, next), pick: (both: { new: number }) => both.new, denied: 'deniedNew' as const },
    ];
    for (const side of sides) {
      const memgate = await throughMemgate(side.set, log.requests);
      const reported = new Map(report.events.map((event) => [event.event, side.pick(event.denied)]));
      for (const [event, count] of reported)
        expect(count, `${side.set.source} ${event}`).toBe(memgate.denied.get(event) ?? 0);
      // Every client whose fate changes, with its denials under this file, as memgate decided them.
      for (const event of report.events)
        for (const client of [...event.newlyRefused, ...event.newlyAdmitted])
          expect(client[side.denied], `${event.event} ${client.client}`).toBe(
            memgate.clients.get(`${event.event} ${client.client}`) ?? 0,
          );
    }
    // The change refuses more pages and images, and the deny list takes its clients whatever they asked.
    const byEvent = new Map(report.events.map((event) => [event.event, event]));
    expect(byEvent.get('pages')?.denied.new).toBeGreaterThan(byEvent.get('pages')?.denied.current ?? 0);
    expect(byEvent.get('(gateway deny list)')?.denied.new).toBeGreaterThan(0);
    expect(byEvent.get('pages')?.shadowDenied.new).toBeGreaterThan(0);
  });

  it('prints a known answer for a generated log, and draws the chart', async () => {
    const lines: string[] = [];
    // 10.0.0.1 asks 10 times in second 0, 10.0.0.2 twice; the new limit of 3 refuses 7 of the first.
    for (let i = 0; i < 10; i++) lines.push('10.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET /api/x HTTP/1.1" 200 10');
    for (let i = 0; i < 2; i++) lines.push('10.0.0.2 - - [26/Nov/2026:12:00:01 +0000] "GET /api/y HTTP/1.1" 200 10');
    lines.push('10.0.0.3 - - [26/Nov/2026:12:00:02 +0000] "GET /other HTTP/1.1" 404 10', 'garbage line');
    const trace = file('generated.log', `${lines.join('\n')}\n`);
    const policy = (limit: number) =>
      `gateway:\n  routes: [{ prefix: /api/, event: api }]\nevents:\n  api:\n    limits: [{ limit: ${limit}, window: 1m }]\n`;
    const chart = join(folder, 'chart.svg');
    const { code, stdout } = await whatIf([
      '--policies',
      file('three.yaml', policy(3)),
      '--current',
      file('ten.yaml', policy(10)),
      '--trace',
      trace,
      '--chart',
      chart,
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain(
      '13 requests from 2026-11-26 12:00:00 UTC to 2026-11-26 12:00:02 UTC, 1 unreadable lines (the first: "garbage line")',
    );
    expect(stdout).toContain('not counted: no route (unmatched: allow) 1');
    expect(stdout).toMatch(/^api\s+12\s+0\s+7\s+\+7$/m);
    expect(stdout).toMatch(
      /api: 1 client newly refused\n\s+client\s+requests\s+denied in use\s+denied new\n\s+10\.0\.0\.1\s+10\s+0\s+7/,
    );
    const svg = readFileSync(chart, 'utf8');
    expect(svg).toContain('api: denied 0 in use, 7 new, of 12 requests');
    expect(svg.match(/<polyline/g)).toHaveLength(2);
  });

  it('refuses what it cannot use in one line: exit 2 for usage, 1 for an invalid file', async () => {
    const trace = file('one.log', '10.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET / HTTP/1.1" 200 1\n');
    const noGateway = file('no-gateway.yaml', 'events:\n  api:\n    limits: [{ limit: 1, window: 1m }]\n');
    refusedWith(await whatIf(['--trace', trace]), 2, '--policies NEW is required');
    const placed = await whatIf(['--policies', noGateway, '--current', noGateway, '--trace', trace]);
    refusedWith(placed, 2, 'has no gateway section to place the log');
    const byEvent = await whatIf(['--policies', noGateway, '--current', noGateway, '--trace', trace, '--event', 'api']);
    expect(byEvent.code).toBe(0);
    const invalid = file('invalid.yaml', 'events:\n  api:\n    limits: [{ limit: 0, window: 1m }]\n');
    const refused = await whatIf(['--policies', invalid, '--current', noGateway, '--trace', trace, '--event', 'api']);
    refusedWith(refused, 1, 'limits[0].limit: must be >= 1');
    refusedWith(await whatIf(['--policies', noGateway, '--trace', join(folder, 'missing.log')]), 2, 'cannot read');
    const notALog = file('not-a-log.txt', 'hello\n');
    const notRead = await whatIf([
      '--policies',
      noGateway,
      '--current',
      noGateway,
      '--trace',
      notALog,
      '--event',
      'api',
    ]);
    refusedWith(notRead, 2, 'holds no access log line');
  });
});
