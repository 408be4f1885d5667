// `memgate usage` against the real service: it prints the decisions memgate made, says
// what memgate refused in memgate's own words (exit 2), and names the URL that does not
// answer (exit 1).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../scripts/lib/memcached-process.js';
import type { SeriesAnswer, TopAnswer } from '../src/usage/usage-history.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const run = promisify(execFile);

/** `memgate usage ARGS`, as built (the package's bin); resolves to exit code, stdout and stderr whatever the code. */
async function usage(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  // Only what a test sets: a MEMGATE_URL of the machine running the tests must not leak in.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'MEMGATE_URL'));
  try {
    const { stdout, stderr } = await run(process.execPath, ['dist/main.js', 'usage', ...args], {
      env: { ...inherited, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}
const lines = (text: string) => text.split('\n').filter(Boolean);

/** Client a is checked 8 times against a limit of 5 an hour, b 3 times. */
const DECISIONS = { allowed: 8, denied: 3, degraded: 0 };
const TOTALS = 'allowed 8, denied 3, degraded 0';
/** Reservations of llm settled at these costs, after a check each that reserved them. */
const SETTLED = { costs: [1700, 0, 2300], totals: 'allowed 3, denied 0, degraded 0; settled 3, settled_cost 4,000' };

let dir = '';
let service: ServiceProcess;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'memgate-usage-cli-'));
  const policies = join(dir, 'policies.yaml');
  await writeFile(
    policies,
    [
      'events:',
      '  api:',
      '    limits:',
      '      - { limit: 5, window: 1h }',
      // Tokens, reserved and settled: SETTLED's reservations.
      '  llm:',
      '    reservations: { life: 30s }',
      '    limits:',
      '      - { limit: 100000, window: 1m }',
      '',
    ].join('\n'),
  );
  service = await startServiceProcess({
    MEMGATE_CONFIG: policies,
    MEMGATE_USAGE_DB: join(dir, 'usage.db'),
    MEMGATE_USAGE_FLUSH_S: '1',
  });
  const statuses: number[] = [];
  for (const feature of [...Array<string>(8).fill('a'), ...Array<string>(3).fill('b')]) {
    statuses.push((await fetch(`${service.url}/check?event=api&feature=${feature}`)).status);
  }
  expect(statuses.filter((status) => status === 200)).toHaveLength(DECISIONS.allowed);
  expect(statuses.filter((status) => status === 429)).toHaveLength(DECISIONS.denied);
  for (const cost of SETTLED.costs) {
    const post = (path: string, body: object) =>
      fetch(`${service.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ event: 'llm', feature: 'tenant-7', ...body }),
      });
    const reserved = (await (await post('/check', { reserve: 4096 })).json()) as { reservation: { id: string } };
    expect((await post('/settle', { id: reserved.reservation.id, cost })).status).toBe(200);
  }
  // Past a flush, so the answers come from the SQLite file as well as from memory.
  await sleep(2100);
});
afterAll(async () => {
  await service.stop();
});

describe('memgate usage', () => {
  it('prints a table of the points and their totals off a terminal, asking $MEMGATE_URL', async () => {
    const { code, stdout, stderr } = await usage(['--event', 'api', '--from', '-1h'], { MEMGATE_URL: service.url });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const [header, ...table] = lines(stdout);
    expect(header).toMatch(new RegExp(`^api: .* UTC, \\d+ points of \\w+; ${TOTALS}$`));
    expect(table.at(-1)).toMatch(/^\| total\s+\|\s+8 \|\s+3 \|\s+0 \|$/);
  });

  it('draws a sparkline per outcome with its min and max, and a time axis', async () => {
    const { code, stdout } = await usage([
      '--url',
      service.url,
      '--event',
      'api',
      '--from',
      '-10min',
      '--format',
      'spark',
    ]);
    expect(code).toBe(0);
    const [header, allowed, denied, degraded, axis, ...rest] = stdout.split('\n');
    expect(header).toMatch(new RegExp(`; ${TOTALS}$`));
    expect(allowed).toMatch(/^allowed {3}[ ▁▂▃▄▅▆▇█]*█[ ▁▂▃▄▅▆▇█]* {2}min 0 {2}max [1-8]$/);
    expect(denied).toMatch(/^denied {4}[ ▁▂▃▄▅▆▇█]*█[ ▁▂▃▄▅▆▇█]* {2}min 0 {2}max [1-3]$/);
    expect(degraded).toMatch(/^degraded {2} + {2}min 0 {2}max 0$/);
    expect(axis).toMatch(/^ {10}\d\d:\d\d/);
    expect(rest).toEqual(['']);
  });

  it('prints memgate’s JSON as it sent it, and the heaviest clients with --top', async () => {
    const alone = await usage(['--url', service.url, '--event', 'api', '--format', 'json']);
    const series = JSON.parse(alone.stdout) as SeriesAnswer;
    const sum = (outcome: 'allowed' | 'denied' | 'degraded') =>
      series.points.reduce((total, point) => total + point[outcome], 0);
    expect({ allowed: sum('allowed'), denied: sum('denied'), degraded: sum('degraded') }).toEqual(DECISIONS);

    const both = await usage(['--url', service.url, '--event', 'api', '--format', 'json', '--top', '5']);
    const { top } = JSON.parse(both.stdout) as { usage: SeriesAnswer; top: TopAnswer };
    expect(top.allowed).toEqual([
      { feature: 'a', count: 5 },
      { feature: 'b', count: 3 },
    ]);
    expect(top.denied).toEqual([{ feature: 'a', count: 3 }]);
  });

  it('lists the heaviest clients under the table, and writes to --out instead of standard output', async () => {
    const out = join(dir, 'report', 'usage.txt');
    const { code, stdout } = await usage(['--url', service.url, '--event', 'api', '--top', '1', '--out', out]);
    expect({ code, stdout }).toEqual({ code: 0, stdout: '' });
    const text = await readFile(out, 'utf8');
    expect(text).toMatch(new RegExp(`; ${TOTALS}\n`));
    expect(text).toMatch(/\| +1 \| a +\| +5 \| a +\| +3 \|\n$/);
  });

  it('prints the reservations settled and their actual cost, in the totals, a cost row and two columns', async () => {
    const table = await usage(['--url', service.url, '--event', 'llm', '--from', '-1h']);
    expect(table.code).toBe(0);
    const [header, ...rows] = lines(table.stdout);
    expect(header).toMatch(new RegExp(`^llm: .*; ${SETTLED.totals}$`));
    expect(rows[0]).toMatch(/^\| time \(UTC\) +\| allowed \| denied \| degraded \| settled \| settled_cost \|$/);
    expect(rows.at(-1)).toMatch(/^\| total +\| +3 \| +0 \| +0 \| +3 \| +4000 \|$/);
    const spark = await usage(['--url', service.url, '--event', 'llm', '--from', '-10min', '--format', 'spark']);
    const [, , , , cost, , legend] = spark.stdout.split('\n');
    expect(cost).toMatch(/^cost {6}[ ▁▂▃▄▅▆▇█]*█[ ▁▂▃▄▅▆▇█]* {2}min 0 {2}max [0-9,]+$/);
    expect(legend).toBe(
      `${' '.repeat(10)}cost: the actual cost of the reservations settled, in the limits' units (not decisions)`,
    );
    // An event without reservations prints as it always did (the tests above).
    expect((await usage(['--url', service.url, '--event', 'api'])).stdout).not.toContain('settled');
  });

  it('shows one client’s curve with --feature', async () => {
    const { code, stdout } = await usage(['--url', service.url, '--event', 'api', '--feature', 'a']);
    expect(code).toBe(0);
    expect(lines(stdout)[0]).toMatch(/^api, client a: .*; allowed 5, denied 3, degraded 0$/);
  });

  it.concurrent.for<[string[], string | RegExp]>([
    [
      ['--from', 'yesterday'],
      'from must be epoch seconds, ISO 8601 (2026-11-23T10:00:00Z), or relative such as -1h, -30d or now (got "yesterday")',
    ],
    [['--from', 'now', '--until', '-1h'], /^from \(\d+\) must be before until \(\d+\)$/],
    // 43,201 points, or 43,200 when the request's second falls on a minute (the range then ends on a step).
    [['--from', '-30d', '--step', '60'], /^4320[01] points of 60 s from \d+ to \d+: at most 10000 in one answer/],
    [['--top', '5000'], 'limit must be at most 1000 (got 5000)'],
  ])('prints what memgate refuses, %j, in its words on one line, exit 2', async ([args, message], { expect }) => {
    const { code, stdout, stderr } = await usage(['--url', service.url, '--event', 'api', ...args]);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(lines(stderr)).toHaveLength(1);
    const said = /^usage: (.*) \(memgate usage --help\)$/.exec(stderr.trim())?.[1];
    if (typeof message === 'string') expect(said).toBe(message);
    else expect(said).toMatch(message);
  });

  it('says an event memgate knows nothing of is unknown, exit 2', async () => {
    const { code, stderr } = await usage(['--url', service.url, '--event', 'signup']);
    expect(code).toBe(2);
    expect(lines(stderr)).toEqual(['usage: no policy and no usage recorded for event "signup" (memgate usage --help)']);
  });

  it.concurrent.for<[string[], string]>([
    [[], '--event is required'],
    [['--event', 'api', '--format', 'xml'], '--format must be one of spark, table, json (got "xml")'],
    [['--event', 'api', '--top', '0'], '--top must be a positive whole number (got "0")'],
    [['--event', 'api', '--url', 'ftp://example.org'], '--url must be an http URL (got "ftp://example.org")'],
  ])('refuses %j before asking anything, exit 2', async ([args, message], { expect }) => {
    const { code, stderr } = await usage(args);
    expect(code).toBe(2);
    expect(lines(stderr)).toEqual([`usage: ${message} (memgate usage --help)`]);
  });

  it('names the URL that does not answer, exit 1', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const { code, stdout, stderr } = await usage(['--url', url, '--event', 'api']);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(lines(stderr)).toEqual([`usage: memgate does not answer at ${url}: ECONNREFUSED`]);
  });

  it('prints memgate’s message when its usage history is off, exit 1', async () => {
    const off = await startServiceProcess({ MEMGATE_USAGE_DB: 'off' });
    try {
      const { code, stderr } = await usage(['--url', off.url, '--event', 'login']);
      expect(code).toBe(1);
      expect(lines(stderr)).toEqual([
        `usage: memgate at ${off.url} answered 404: usage history is off: MEMGATE_USAGE_DB=off and no MEMGATE_GRAPHITE_WEB to read it from`,
      ]);
    } finally {
      await off.stop();
    }
  });

  it('prints its usage with --help', async () => {
    const { code, stdout, stderr } = await usage(['--help']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^usage: memgate usage --event EVENT/);
  });
});
