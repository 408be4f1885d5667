// `memgate what-if` as an operator runs it (node dist/main.js what-if), on the shared NASA trace
// and a generated log, checked against a replay of the same requests through memgate's limiter
// counting in a real memcached (its clock driven by the log's times), under each policy file.
import { execFile } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
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

/** `memgate what-if ARGS`, run by node with `nodeFlags` (a heap limit, say). */
async function whatIf(
  args: string[],
  nodeFlags: string[] = [],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...nodeFlags, 'dist/main.js', 'what-if', ...args], {
      maxBuffer: 64 * 1024 * 1024,
    });
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

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `01/Jan/2026:00:00:00 +0000`: an access log's time of `seconds` since the epoch. */
function clfTime(seconds: number): string {
  const date = new Date(seconds * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:${two(date.getUTCSeconds())} +0000`;
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
      '13 requests from 2026-11-26 12:00:00 UTC to 2026-11-26 12:00:02 UTC\nskipped 1 line: 1 not an access log line (the first: line 14, "garbage line")',
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

  it('streams its log: a log many times the heap it runs in is replayed whole, exactly', async () => {
    // 100 clients, each asking once a second for 3,000 s: 300,000 lines, 24 MB. Read whole,
    // the text and its requests would take several times the 48 MB heap (today's main dies).
    const clients = 100;
    const seconds = 3000;
    const start = Date.UTC(2026, 0, 1) / 1000;
    const path = join(folder, 'big.log');
    const out = createWriteStream(path);
    for (let second = 0; second < seconds; second++) {
      const time = clfTime(start + second);
      let lines = '';
      for (let client = 0; client < clients; client++)
        lines += `client-${client} - - [${time}] "GET /api/items/${second} HTTP/1.1" 200 512 "-" "load/1.0"\n`;
      if (!out.write(lines)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
    expect(statSync(path).size).toBeGreaterThan(20 * 1024 * 1024);
    const policy = (limit: number) =>
      file(`api-${limit}.yaml`, `events:\n  api:\n    limits: [{ limit: ${limit}, window: 1m }]\n`);
    const result = await whatIf(
      ['--policies', policy(30), '--current', policy(100), '--trace', path, '--event', 'api', '--json'],
      ['--max-old-space-size=48'],
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as WhatIfReport;
    expect(report.trace).toMatchObject({
      requests: clients * seconds,
      skipped: {},
      from: start,
      until: start + seconds - 1,
    });
    // One request a second against 30 a minute: 30 admitted, then 30 denied, every minute.
    expect(report.events[0]).toMatchObject({
      event: 'api',
      requests: { current: clients * seconds, new: clients * seconds },
      denied: { current: 0, new: (clients * seconds) / 2 },
      newlyRefusedCount: clients,
    });
  }, 120_000);

  it('skips a line over its length, and one that is no log line, without failing the replay', async () => {
    const line = (second: number, target = '/api/x') =>
      `10.0.0.1 - - [26/Nov/2026:12:00:0${second} +0000] "GET ${target} HTTP/1.1" 200 10`;
    const path = join(folder, 'long-lines.log');
    const out = createWriteStream(path);
    out.write(`${line(0)}\n`);
    // A request line of 100 KiB: an access log line, longer than what-if reads.
    out.write(`${line(1, `/api/${'a'.repeat(100 * 1024)}`)}\n`);
    out.write('not a log line\n');
    // 64 MiB with no newline, more than the heap the command is given.
    const mebibyte = 'x'.repeat(1024 * 1024);
    for (let i = 0; i < 64; i++) if (!out.write(mebibyte)) await once(out, 'drain');
    out.write(`\n${line(2)}\n${line(3)}`);
    out.end();
    await once(out, 'finish');
    const policy = file('one-a-minute.yaml', 'events:\n  api:\n    limits: [{ limit: 1, window: 1m }]\n');
    const args = ['--policies', policy, '--current', policy, '--trace', path, '--event', 'api'];
    const text = await whatIf(args, ['--max-old-space-size=48']);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      `${path}: 3 requests from 2026-11-26 12:00:00 UTC to 2026-11-26 12:00:03 UTC\nskipped 3 lines: 2 longer than 65,536 bytes (the first: line 2); 1 not an access log line (the first: line 3, "not a log line")\n`,
    );
    expect(text.stdout).toMatch(/^api\s+3\s+2\s+2\s+0$/m);
    // As data, and said on standard error too, where the report is not text on standard output.
    const json = await whatIf([...args, '--json'], ['--max-old-space-size=48']);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as WhatIfReport).trace.skipped).toEqual({
      'too long': { lines: 2, firstLine: 2 },
      'not an access log line': { lines: 1, firstLine: 3, firstText: 'not a log line' },
    });
    expect(json.stderr).toBe(
      `what-if: ${path}: skipped 3 lines: 2 longer than 65,536 bytes (the first: line 2); 1 not an access log line (the first: line 3, "not a log line")\n`,
    );
  }, 60_000);

  it('bounds its chart whatever span the log covers: a year of denials in at most 500 points a series', async () => {
    // One client asks twice in one second every hour of 2028 (a leap year): one denial an hour under 1 a minute.
    const start = Date.UTC(2028, 0, 1) / 1000;
    const hours = 366 * 24;
    const lines: string[] = [];
    for (let hour = 0; hour < hours; hour++) {
      const line = `10.0.0.1 - - [${clfTime(start + hour * 3600)}] "GET /api/x HTTP/1.1" 200 10`;
      lines.push(line, line);
    }
    const path = file('year.log', `${lines.join('\n')}\n`);
    const policy = (limit: number) =>
      file(`year-${limit}.yaml`, `events:\n  api:\n    limits: [{ limit: ${limit}, window: 1m }]\n`);
    const chart = join(folder, 'year.svg');
    const result = await whatIf([
      '--policies',
      policy(1),
      '--current',
      policy(10),
      '--trace',
      path,
      '--event',
      'api',
      '--json',
      '--chart',
      chart,
    ]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as WhatIfReport;
    const [api] = report.events;
    expect(api?.denied).toEqual({ current: 0, new: hours });
    // 367 days at most (a year is 366 of them here): 12-hour steps would be 732.
    expect(report.stepSeconds).toBe(86_400);
    expect(api?.deniedOverTime.length).toBeLessThanOrEqual(500);
    expect(api?.deniedOverTime.reduce((sum, point) => sum + point.new, 0)).toBe(hours);
    expect(api?.deniedOverTime[0]).toEqual({ t: start, current: 0, new: 24 });
    const svg = readFileSync(chart, 'utf8');
    expect(svg).toContain('Denied requests per day');
    const polylines = [...svg.matchAll(/<polyline[^>]* points="([^"]*)"/g)].map(
      ([, points]) => points?.split(' ') ?? [],
    );
    expect(polylines).toHaveLength(2);
    for (const vertices of polylines) expect(vertices.length).toBeLessThanOrEqual(2 * 500);
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
