import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';

const run = promisify(execFile);
const load = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'scripts/load.ts', ...args]);

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
    const { stdout } = await load('--url', url, '--event', 'api', '--requests', '400', '--connections', '8', '--json');
    const result = JSON.parse(stdout) as { requests: number; allowed: number; denied: number; errors: number; throughput: number; latencyMs: { p99: number } };
    expect(result).toMatchObject({ requests: 400, allowed: 50, denied: 350, errors: 0 });
    expect(result.throughput).toBeGreaterThan(0);
    expect(result.latencyMs.p99).toBeGreaterThanOrEqual(0);
  });

  it('spreads requests over many clients and prints a table', async () => {
    const { stdout } = await load('--url', url, '--event', 'api', '--requests', '300', '--features', 'uniform:1000000');
    expect(stdout).toMatch(/\| +requests \| +per second \|/);
    // A million clients: nobody reaches 50 requests, so all 300 are allowed.
    expect(stdout).toMatch(/\| +300 \| +\d+ \|.*\| +300 \| +0 \| +0 \|/);
  });

  it.each([
    [['--event', 'api'], '--url is required'],
    [['--url', 'not a url', '--event', 'api'], '--url must be an http URL'],
    [['--url', 'http://127.0.0.1:1', '--event', 'api', '--features', 'pareto'], '--features is hot, zipf:N or uniform:N'],
  ])('refuses %j, saying why', async (args, message) => {
    await expect(load(...args)).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining(message) as unknown });
  });

  it('exits 1 when requests fail, as for an unknown event', async () => {
    await expect(load('--url', url, '--event', 'nope', '--requests', '20', '--json')).rejects.toMatchObject({ code: 1 });
  });
});
