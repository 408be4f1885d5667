import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../scripts/lib/memcached-process.js';
import type { LoadSummary } from '../scripts/lib/run-load.js';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';

const run = promisify(execFile);
/** `npm run load`, without npm; resolves to exit code, stdout and stderr whatever the code. */
async function load(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'scripts/load.ts', ...args], {
      env: { ...process.env, CLI_PROGRESS_SECONDS: '0.2' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}
const lines = (text: string) => text.split('\n').filter(Boolean);

describe('npm run load', () => {
  let app: FastifyInstance;
  let url: string;
  beforeAll(async () => {
    const store = createEmbeddedStore();
    const limiter = createLimiter({ policies: { events: { api: { limits: [{ limit: 50, window: '1h' }] } } }, store });
    app = buildApp({ limiter, store });
    await app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app.close();
  });

  it('drives /check with one hot client and counts its decisions', async () => {
    const { code, stdout } = await load(
      '--url',
      url,
      '--event',
      'api',
      '--requests',
      '400',
      '--connections',
      '8',
      '--json',
    );
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as LoadSummary;
    expect(result).toMatchObject({
      requests: 400,
      allowed: 50,
      denied: 350,
      errors: 0,
      statuses: { '200': 50, '429': 350 },
      failures: {},
    });
    expect(result.throughput).toBeGreaterThan(0);
    expect(result.latencyMs.p99).toBeGreaterThanOrEqual(0);
  });

  it('spreads requests over many clients, prints a table with the answers by status, and shows progress in lines', async () => {
    const { code, stdout, stderr } = await load(
      '--url',
      url,
      '--event',
      'api',
      '--duration',
      '2',
      '--connections',
      '4',
      '--features',
      'uniform:1000000',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/\| +answered \| +per second \|.*\| +allowed \| +denied \| +failed \|/);
    // A million clients: nobody reaches 50 requests, so every answer is an allowance.
    const answered = /^\| +([\d,]+) \| +[\d,]+ \|/m.exec(stdout)?.[1] ?? '';
    expect(stdout).toMatch(new RegExp(`\\| +${answered} \\| +0 \\| +0 \\|$`, 'm'));
    expect(stdout).toContain(`answers by status: 200: ${answered}\n`);
    expect(stdout).not.toContain('no answer');
    const progress = lines(stderr);
    expect(progress[0]).toBe('load: started, 0 of 2 s');
    expect(progress.at(-1)).toMatch(/^load: done \(2 of 2 s\) after \d+ s$/);
    expect(progress.slice(1, -1).some((line) => /^load: \d+% \(\d of 2 s\), [\d,]+ done, /.test(line))).toBe(true);
  });

  it.each([
    [['--event', 'api'], '--url is required'],
    [['--url', 'not a url', '--event', 'api'], '--url must be an http URL (got "not a url")'],
    [['--url', 'ftp://127.0.0.1/', '--event', 'api'], '--url must be an http URL (got "ftp://127.0.0.1/")'],
    [
      ['--url', 'http://127.0.0.1:1', '--event', 'api', '--features', 'pareto'],
      '--features is hot, zipf:N or uniform:N (got "pareto")',
    ],
    [
      ['--url', 'http://127.0.0.1:1', '--event', 'api', '--duration', '5', '--requests', '5'],
      'give --duration or --requests, not both',
    ],
  ])('refuses %j in one line, exit 2', async (args, message) => {
    const { code, stdout, stderr } = await load(...args);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(lines(stderr)).toEqual([`load: ${message} (npm run load -- --help)`]);
  });

  it('exits 1 when requests fail, saying with which status, as for an unknown event', async () => {
    const { code, stdout, stderr } = await load('--url', url, '--event', 'nope', '--requests', '20', '--json');
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toMatchObject({ requests: 20, errors: 20, statuses: { '400': 20 }, failures: {} });
    expect(lines(stderr).at(-1)).toBe('load: every request failed: 20 answered 400');
  });

  it('counts requests that got no answer by kind, and exits 1 when every one failed', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const json = await load('--url', closed, '--event', 'api', '--requests', '12', '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      requests: 0,
      errors: 12,
      statuses: {},
      failures: { ECONNREFUSED: 12 },
    });
    expect(lines(json.stderr).at(-1)).toBe(
      `load: every request failed: 12 connection refused (ECONNREFUSED); is memgate listening at ${closed}?`,
    );

    // Fewer requests than the default 50 connections: autocannon is given as many connections as requests.
    const table = await load('--url', closed, '--event', 'api', '--requests', '12');
    expect(table.code).toBe(1);
    expect(table.stdout).toContain('answers by status: none\nno answer: connection refused (ECONNREFUSED): 12\n');
    expect(table.stdout).toContain('12 connections for');
  });
});
