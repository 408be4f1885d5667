// Debian's nginx with examples/nginx/nginx.conf in front of a small upstream, asking memgate.
import { spawn, type ChildProcess } from 'node:child_process';
import { access, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { freePort } from '../scripts/lib/memcached-process.js';

const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
const LIMIT = 3;

const store = createEmbeddedStore();
const policies = {
  events: { login: { limits: [{ limit: LIMIT, window: '1m' }] }, api: { limits: [{ limit: 100, window: '1m' }] } },
  gateway: { uri: 'header:x-original-uri', denyStatus: 403, trustedProxies: 1, routes: [{ prefix: '/login', event: 'login' }, { prefix: '/', event: 'api' }] },
};
const memgate = buildApp({ limiter: createLimiter({ policies, store }), store });
let upstreamHits = 0;
const upstream: Server = createServer((_request, response) => {
  upstreamHits++;
  response.end('{"from":"upstream"}');
});
let nginx: ChildProcess | undefined;
let url = '';

beforeAll(async () => {
  await access(NGINX); // CI installs nginx; say so plainly when it is missing
  await memgate.listen({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'memgate-nginx-'));
  const example = await readFile('examples/nginx/nginx.conf', 'utf8');
  const config = example
    .replaceAll('${LISTEN}', `127.0.0.1:${port}`)
    .replaceAll('${MEMGATE}', `127.0.0.1:${(memgate.server.address() as AddressInfo).port}`)
    .replaceAll('${UPSTREAM}', `127.0.0.1:${(upstream.address() as AddressInfo).port}`);
  await writeFile(join(dir, 'nginx.conf'), config);
  nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', `daemon off; pid ${join(dir, 'nginx.pid')};`], { stdio: ['ignore', 'ignore', 'inherit'] });
  url = `http://127.0.0.1:${port}`;
  // Wait until nginx listens.
  for (let attempt = 0; ; attempt++) {
    try {
      await fetch(`${url}/health-probe`);
      break;
    } catch (error) {
      if (attempt > 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  upstreamHits = 0;
});
afterAll(async () => {
  nginx?.kill('SIGTERM');
  upstream.close();
  await memgate.close();
});

describe('nginx auth_request in front of an upstream', () => {
  it('lets exactly the limit through to the upstream, then answers 429 with Retry-After and the RateLimit headers', async () => {
    const responses = [];
    for (let i = 0; i < LIMIT + 2; i++) responses.push(await fetch(`${url}/login?attempt=${i}`));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
    expect(upstreamHits).toBe(LIMIT);
    const limited = responses[LIMIT];
    expect(limited?.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(limited?.headers.get('ratelimit')).toMatch(/^"login-1m";r=0;t=\d+$/);
    expect(limited?.headers.get('ratelimit-policy')).toBe('"login-1m";q=3;w=60');
    expect(await limited?.json()).toMatchObject({ error: { code: 'rate_limited' } });
    expect(responses[0]?.headers.get('ratelimit')).toBe('"login-1m";r=2;t=60');
    // Other paths map to another event, with its own count.
    expect((await fetch(`${url}/api/items`)).status).toBe(200);
    expect(upstreamHits).toBe(LIMIT + 1);
  });
});
