import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../scripts/lib/memcached-process.js';
import type { GrpcLoadSummary } from '../scripts/lib/run-grpc-load.js';
import type { LoadSummary } from '../scripts/lib/run-load.js';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { envoyConfigFile, startEnvoyService, type EnvoyService } from './helpers/envoy-service.js';
import { useMemcached } from './helpers/memcached.js';

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

  it.concurrent.for<[string[], string]>([
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
  ])('refuses %j in one line, exit 2', async ([args, message], { expect }) => {
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

describe('npm run load -- --grpc', () => {
  const memcached = useMemcached();
  let envoy: EnvoyService;
  let address: string;
  beforeAll(async () => {
    // Sliding, so that no window boundary falls inside a test and resets the count.
    const config = await envoyConfigFile(
      [
        'domain: edge',
        'descriptors:',
        '  - key: remote_address',
        '    rate_limit: { unit: hour, requests_per_unit: 50, algorithm: sliding }',
        '  - key: path',
        '    rate_limit: { unit: hour, requests_per_unit: 30, algorithm: sliding }',
        '',
      ].join('\n'),
    );
    envoy = await startEnvoyService(memcached(), { config });
    ({ address } = envoy);
  });
  afterAll(async () => {
    envoy.client.close();
    await envoy.service.close();
  });

  it('admits exactly the configured limit of one hot address, and answers the rest OVER_LIMIT', async () => {
    const { code, stdout } = await load(
      '--grpc',
      address,
      '--domain',
      'edge',
      '--descriptor',
      'remote_address=192.0.2.7',
      '--requests',
      '400',
      '--connections',
      '16',
      '--json',
    );
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as GrpcLoadSummary & Record<string, unknown>;
    expect(result).toMatchObject({
      address,
      domain: 'edge',
      descriptors: ['remote_address=192.0.2.7'],
      connections: 16,
      channels: 4,
      requests: 400,
      allowed: 50,
      denied: 350,
      errors: 0,
      codes: { OK: 50, OVER_LIMIT: 350 },
      failures: {},
    });
    expect(result.throughput).toBeGreaterThan(0);
    expect(result.latencyMs.p99).toBeGreaterThanOrEqual(result.latencyMs.p50);
  });

  it('decides two descriptors together: the tighter one ends the admissions, and a denied request counts under neither', async () => {
    const args = ['--grpc', address, '--domain', 'edge', '--descriptor', 'path=/two', '--requests', '100', '--json'];
    const first = await load(...args, '--descriptor', 'remote_address=192.0.2.8');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ codes: { OK: 30, OVER_LIMIT: 70 }, errors: 0 });
    // The address was counted only with the 30 admitted requests: 20 more are left to it alone.
    const alone = await load(
      ...args.slice(0, 4),
      '--descriptor',
      'remote_address=192.0.2.8',
      '--requests',
      '60',
      '--json',
    );
    expect(JSON.parse(alone.stdout)).toMatchObject({ codes: { OK: 20, OVER_LIMIT: 40 } });
  });

  it('spreads %feature over many clients, prints a table with the answers by code, and shows progress in lines', async () => {
    const { code, stdout, stderr } = await load(
      '--grpc',
      address,
      '--domain',
      'edge',
      '--descriptor',
      'remote_address=client-%feature',
      '--duration',
      '2',
      '--connections',
      '4',
      '--channels',
      '2',
      '--features',
      'uniform:1000000',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/\| +answered \| +per second \|.*\| +OK \| +OVER_LIMIT \| +failed \|/);
    // A million clients: nobody reaches 50 requests, so every answer is OK.
    const answered = /^\| +([\d,]+) \| +[\d,]+ \|/m.exec(stdout)?.[1] ?? '';
    expect(Number(answered.replaceAll(',', ''))).toBeGreaterThan(0);
    expect(stdout).toMatch(new RegExp(`\\| +${answered} \\| +0 \\| +0 \\|$`, 'm'));
    expect(stdout).toContain(`answers by code: OK: ${answered}\n`);
    expect(stdout).toContain('4 calls in flight over 2 HTTP/2 connections for ');
    expect(stdout).not.toContain('failed calls');
    const progress = lines(stderr);
    expect(progress[0]).toBe('load: started, 0 of 2 s');
    expect(progress.at(-1)).toMatch(/^load: done \(2 of 2 s\) after \d+ s$/);
    expect(progress.slice(1, -1).some((line) => /^load: \d+% \(\d of 2 s\), [\d,]+ done, /.test(line))).toBe(true);
  });

  it("exits 1 when calls fail, by gRPC status with the server's reason, as for a value over 1024 bytes", async () => {
    const { code, stdout, stderr } = await load(
      '--grpc',
      address,
      '--domain',
      'edge',
      '--descriptor',
      `remote_address=${'x'.repeat(1025)}`,
      '--requests',
      '10',
      '--json',
    );
    expect(code).toBe(1);
    const result = JSON.parse(stdout) as GrpcLoadSummary;
    expect(result).toMatchObject({ requests: 0, errors: 10, codes: {}, failures: { INVALID_ARGUMENT: 10 } });
    expect(result.failureDetails.INVALID_ARGUMENT).toMatch(/1024/);
    expect(lines(stderr).at(-1)).toBe(
      'load: every call failed: 10 INVALID_ARGUMENT (descriptors[0].entries[0].value is 1025 bytes; at most 1024 are allowed)',
    );
  });

  it('counts calls that reach no server as UNAVAILABLE, and asks whether memgate listens there', async () => {
    const closed = `127.0.0.1:${await freePort()}`;
    const { code, stdout, stderr } = await load(
      '--grpc',
      closed,
      '--domain',
      'edge',
      '--descriptor',
      'remote_address=a',
      '--requests',
      '12',
    );
    expect(code).toBe(1);
    expect(stdout).toContain('answers by code: none\nfailed calls: UNAVAILABLE: 12 (');
    expect(stdout).toContain('12 calls in flight over 4 HTTP/2 connections for');
    expect(lines(stderr).at(-1)).toMatch(
      new RegExp(
        `^load: every call failed: 12 UNAVAILABLE \\(.*ECONNREFUSED.*\\); is memgate's gRPC server \\(MEMGATE_GRPC_PORT\\) listening at ${closed}\\?$`,
      ),
    );
  });

  const grpcArgs = ['--grpc', '127.0.0.1:1', '--domain', 'edge', '--descriptor', 'remote_address=%feature'];
  it.concurrent.for<[string[], string]>([
    [
      ['--grpc', '127.0.0.1', '--domain', 'edge', '--descriptor', 'a=b'],
      '--grpc must be host:port, e.g. 127.0.0.1:8081 (got "127.0.0.1")',
    ],
    [
      ['--grpc', 'h:70000', '--domain', 'edge', '--descriptor', 'a=b'],
      '--grpc must be host:port, e.g. 127.0.0.1:8081 (got "h:70000")',
    ],
    [['--grpc', '127.0.0.1:1', '--descriptor', 'a=b'], '--domain is required with --grpc'],
    [['--grpc', '127.0.0.1:1', '--domain', 'edge'], '--descriptor is required with --grpc'],
    [
      [...grpcArgs, '--url', 'http://127.0.0.1:1'],
      "give --url (HTTP /check) or --grpc (Envoy's ShouldRateLimit), not both",
    ],
    [[...grpcArgs, '--event', 'api'], '--event is for HTTP /check; with --grpc, give --domain and --descriptor'],
    [
      [...grpcArgs, '--descriptor', 'path'],
      '--descriptor is key=value[,key=value...], e.g. remote_address=%feature: "path" has no = (got "path")',
    ],
    [
      [...grpcArgs, '--descriptor', 'a=1,=2'],
      '--descriptor is key=value[,key=value...], e.g. remote_address=%feature: "=2" has no key (got "a=1,=2")',
    ],
    [
      ['--grpc', '127.0.0.1:1', '--domain', 'edge', '--descriptor', 'path=/', '--features', 'zipf:10'],
      '--features spreads %feature, which no --descriptor value holds (e.g. --descriptor key=%feature)',
    ],
    [[...grpcArgs, '--channels', '0'], '--channels must be a positive whole number (got "0")'],
    [[...grpcArgs, '--features', 'pareto'], '--features is hot, zipf:N or uniform:N (got "pareto")'],
    [
      ['--url', 'http://127.0.0.1:1', '--event', 'api', '--domain', 'edge'],
      "--domain is for --grpc HOST:PORT (Envoy's ShouldRateLimit)",
    ],
  ])('refuses %j in one line, exit 2', async ([args, message], { expect }) => {
    const { code, stdout, stderr } = await load(...args);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(lines(stderr)).toEqual([`load: ${message} (npm run load -- --help)`]);
  });
});
