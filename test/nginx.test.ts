// Debian's nginx with examples/nginx/nginx.conf between hostile clients, a small upstream
// and memgate: whatever a client writes, each guarded request counts against the event its
// path names, for the client nginx saw, and nginx never answers 5xx unless memgate is down.
import { spawn, type ChildProcess } from 'node:child_process';
import { access, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import { reloadable } from '../src/counting/reloadable-limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { StoreOverloadedError } from '../src/store/counter-store.js';
import { freePort } from '../scripts/lib/memcached-process.js';
import { spellingsOf } from './helpers/path-spellings.js';

const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
const LIMIT = 3;
const API_LIMIT = 1000;
const PRO_LIMIT = 6;
/** The API key the test's copy of the example maps to the pro tier. */
const PRO_KEY = 'key-of-a-pro-customer';

const store = createEmbeddedStore();
const policies = {
  events: {
    login: {
      limits: [{ limit: LIMIT, window: '1m' }],
      tiers: { pro: { limits: [{ limit: PRO_LIMIT, window: '1m' }] } },
    },
    api: { limits: [{ limit: API_LIMIT, window: '1m' }] },
  },
  gateway: {
    uri: 'header:x-original-uri',
    tier: 'header:x-memgate-tier',
    trustedProxies: ['loopback'],
    denyStatus: 403,
    invalidStatus: 401,
    routes: [
      { prefix: '/login', event: 'login' },
      { prefix: '/api/', event: 'api' },
    ],
  },
};
const limiter = reloadable(createLimiter({ policies, store }));
const memgate = buildApp({ validateResponses: true, limiter, store, maxEventLoopDelayMs: 0 });
let upstreamHits = 0;
const upstream: Server = createServer((_request, response) => {
  upstreamHits++;
  response.end('{"from":"upstream"}');
});
let nginx: ChildProcess | undefined;
let port = 0;

beforeAll(async () => {
  await access(NGINX); // CI installs nginx; say so plainly when it is missing
  await memgate.listen({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'memgate-nginx-'));
  const example = await readFile('examples/nginx/nginx.conf', 'utf8');
  const config = example
    .replaceAll('${LISTEN}', `127.0.0.1:${port}`)
    .replaceAll('${MEMGATE}', `127.0.0.1:${(memgate.server.address() as AddressInfo).port}`)
    .replaceAll('${UPSTREAM}', `127.0.0.1:${(upstream.address() as AddressInfo).port}`)
    .replace(`# "<a pro customer's key>" pro;`, `"${PRO_KEY}" pro;`);
  expect(config).toContain(`"${PRO_KEY}" pro;`);
  await writeFile(join(dir, 'nginx.conf'), config);
  nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', `daemon off; pid ${join(dir, 'nginx.pid')};`], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // Wait until nginx listens.
  for (let attempt = 0; ; attempt++) {
    try {
      await fetch(`http://127.0.0.1:${port}/health-probe`);
      break;
    } catch (error) {
      if (attempt > 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
});
afterAll(async () => {
  nginx?.kill('SIGTERM');
  upstream.close();
  if (memgate.server.listening) await memgate.close();
});

interface Answer {
  /** 0 when the answer has no status line (an HTTP/0.9 answer, or none). */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** Raw bytes to nginx from `client` (a loopback address: nginx's $remote_addr), and nginx's answer. */
function send(raw: string, client: string): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: client }, () =>
      socket.write(Buffer.from(raw, 'latin1')),
    );
    let received = '';
    /** The answer so far; with `whole`, only once its body is all there by its Content-Length. */
    const answer = (whole: boolean): Answer | undefined => {
      const end = received.indexOf('\r\n\r\n');
      const [statusLine = '', ...lines] = received.slice(0, end < 0 ? undefined : end).split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
      if (status === 0) return whole ? undefined : { status, headers: {}, body: received };
      const headers = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      const body = end < 0 ? '' : received.slice(end + 4);
      return !whole || (end >= 0 && body.length >= Number(headers['content-length'] ?? Infinity))
        ? { status, headers, body }
        : undefined;
    };
    socket.setTimeout(5000, () => socket.destroy());
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      // A whole answer: nginx may linger before it closes a connection it refused.
      if (answer(true)) socket.destroy();
    });
    socket.on('close', () => {
      resolve(answer(false) as Answer);
    });
  });
}

/** A request line, headers and body, closing the connection after the answer. */
const request = (target: string, { method = 'GET', headers = '', version = 'HTTP/1.1', body = '' } = {}) =>
  `${method} ${target} ${version}\r\nHost: api.test\r\n${headers}${body ? `Content-Length: ${body.length}\r\n` : ''}Connection: close\r\n\r\n${body}`;

let clients = 0;
/** A loopback address no earlier request came from: a client with nothing counted yet. */
const freshClient = () => {
  clients++;
  return `127.0.${1 + Math.floor(clients / 250)}.${1 + (clients % 250)}`;
};

/** What `client` has counted against each event (peeking, so counting nothing). */
async function counts(client: string): Promise<{ login: number; api: number }> {
  const used = async (event: string, limit: number) =>
    limit - ((await limiter.peek({ event, feature: client })).limits[0]?.remaining ?? limit);
  return { login: await used('login', LIMIT), api: await used('api', API_LIMIT) };
}

/** Sends `raw` from a fresh client LIMIT + 1 times: the upstream sees exactly LIMIT, then 429. */
async function expectCountedAsLogin(raw: string, name: string): Promise<void> {
  const client = freshClient();
  const before = upstreamHits;
  const statuses: number[] = [];
  for (let i = 0; i <= LIMIT; i++) statuses.push((await send(raw, client)).status);
  expect(statuses, name).toEqual([...Array<number>(LIMIT).fill(200), 429]);
  expect(upstreamHits - before, name).toBe(LIMIT);
  expect(await counts(client), name).toEqual({ login: LIMIT, api: 0 });
}

describe('nginx auth_request in front of an upstream', () => {
  it('lets exactly the limit through to the upstream, then answers 429 with Retry-After and the RateLimit headers', async () => {
    const client = freshClient();
    const responses: Answer[] = [];
    for (let i = 0; i < LIMIT + 2; i++) responses.push(await send(request(`/login?attempt=${i}`), client));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
    const limited = responses[LIMIT];
    expect(limited?.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect(limited?.headers.ratelimit).toMatch(/^"login-1m";r=0;t=\d+$/);
    expect(limited?.headers['ratelimit-policy']).toBe('"login-1m";q=3;w=60');
    expect(JSON.parse(limited?.body ?? '')).toMatchObject({ error: { code: 'rate_limited' } });
    expect(responses[0]?.headers.ratelimit).toBe('"login-1m";r=2;t=60');
    // Other paths map to another event, with its own count.
    expect((await send(request('/api/items'), client)).status).toBe(200);
    expect(await counts(client)).toEqual({ login: LIMIT, api: 1 });
  });

  it.each([
    '//login',
    '///login',
    '/./login',
    '/x/../login',
    '/x/./../login',
    '/api/../login',
    '/%6Cogin',
    '/%6c%6F%67%69%6E',
    '/LOGIN',
    '/LoGiN',
    '/%4C%4F%47%49%4E',
    '/login?x=1',
    '/login?',
    '/login#top',
    '/login/',
    '/login/.',
    '/login/x/..',
    '/login;a=b',
    '/login;jsessionid=0123',
    '/%2e/login',
    '/%2E/login',
    '/x/%2e%2e/login',
    '/x/.%2E/login',
    '/x/%2E./login',
    '/api/x/../../login',
    '/.//login',
    '/login%2F',
    '/login%3Fnext=/api/',
    'http://api.test/login',
    'HTTP://evil.example/login?x',
  ])('counts %s against login', async (target) => {
    await expectCountedAsLogin(request(target), target);
  });

  it('counts any generated spelling of /login or /api/v1/users against that event, for the client nginx saw', async () => {
    const spelt = fc.oneof(
      spellingsOf('/login', { changeCase: true }).map((target) => ['login', target] as const),
      spellingsOf('/api/v1/users', { changeCase: true }).map((target) => ['api', target] as const),
    );
    const cases = fc.sample(spelt, { numRuns: 150, seed: 11 });
    for (const [event, target] of cases) {
      const client = freshClient();
      const before = upstreamHits;
      expect((await send(request(target), client)).status, target).toBe(200);
      expect(upstreamHits - before, target).toBe(1);
      expect(await counts(client), target).toEqual({ login: event === 'login' ? 1 : 0, api: event === 'api' ? 1 : 0 });
    }
  });

  it('counts the path nginx received, whatever headers the client writes to name another event, URI or client', async () => {
    const forged = [
      'X-Memgate-Event: api\r\n',
      'X-Original-URI: /api/x\r\n',
      'X-Forwarded-Uri: /api/x\r\n',
      'X-Forwarded-For: 203.0.113.9\r\n',
      'X-Forwarded-For: 203.0.113.9, 203.0.113.10\r\n',
      'Forwarded: for=203.0.113.9\r\nX-Real-IP: 203.0.113.9\r\n',
      'X-Api-Key: someone-else\r\nAuthorization: Bearer x\r\n',
      'X-Memgate-Event: api\r\nX-Memgate-Event: login\r\nX-Original-URI: /api/\r\nX-Original-URI: /api/\r\nX-Forwarded-For: 203.0.113.9\r\nX-Forwarded-For: 1.2.3.4\r\n',
      `X-Original-URI: /api/${'x'.repeat(4000)}\r\nX-Memgate-Event: ${'api,'.repeat(500)}\r\n`,
    ];
    for (const headers of forged) await expectCountedAsLogin(request('/login', { headers }), headers);
    expect(await counts('203.0.113.9')).toEqual({ login: 0, api: 0 });
    // And the other way round: a request for the API cannot spend its client's login quota.
    const client = freshClient();
    expect(
      (
        await send(
          request('/api/x', {
            headers: 'X-Original-URI: /login\r\nX-Memgate-Event: login\r\nX-Forwarded-Uri: /login\r\n',
          }),
          client,
        )
      ).status,
    ).toBe(200);
    expect(await counts(client)).toEqual({ login: 0, api: 1 });
  });

  it('counts by the tier nginx sets from what it knows of the client, never by one the client writes', async () => {
    const statuses = async (headers: string) => {
      const client = freshClient();
      const seen: number[] = [];
      for (let i = 0; i <= PRO_LIMIT; i++) seen.push((await send(request('/login', { headers }), client)).status);
      return seen.filter((status) => status === 200).length;
    };
    expect(await statuses(`X-Api-Key: ${PRO_KEY}\r\n`)).toBe(PRO_LIMIT);
    expect(await statuses('X-Memgate-Tier: pro\r\n')).toBe(LIMIT);
    expect(await statuses('X-Memgate-Tier: gold\r\nX-Api-Key: nobody\r\n')).toBe(LIMIT);
  });

  it('counts a guarded request whatever its method or version, since nginx asks memgate with its own GET', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'M-SEARCH', 'PURGE']) {
      await expectCountedAsLogin(
        request('/login', { method, body: method === 'POST' || method === 'PUT' ? '{"password":"x"}' : '' }),
        method,
      );
    }
    await expectCountedAsLogin(request('/login', { version: 'HTTP/1.0' }), 'HTTP/1.0');
    // HTTP/0.9: a bare request line, an answer without a status line. It is still counted.
    const client = freshClient();
    await send('GET /login\r\n', client);
    expect(await counts(client)).toEqual({ login: 1, api: 0 });
  });

  it('refuses with 400 a path servers read as different routes, before it reaches the upstream', async () => {
    for (const target of [
      '/api/x%2F..%2F..%2Flogin',
      '/api/x%5C..%5C..%5Clogin',
      '/api/x\\..\\..\\login',
      '/api/..;/login',
      '/api//../login',
      '/x%2F..%2Flogin',
    ]) {
      const client = freshClient();
      const before = upstreamHits;
      const answer = await send(request(target), client);
      expect([answer.status, JSON.parse(answer.body)], target).toEqual([
        400,
        { error: { code: 'ambiguous_uri', message: expect.any(String) as string } },
      ]);
      expect(upstreamHits, target).toBe(before);
      expect(await counts(client), target).toEqual({ login: 0, api: 0 });
    }
  });

  it('answers malformed, repeated and oversized input with a 4xx, counting nothing and reaching nothing', async () => {
    const long = 'a'.repeat(9000);
    const hostile = [
      request('/login%zz'),
      request('/login%'),
      request('/login%e0%a4%a'),
      request('/log\u0001in'),
      request('/log\u007fin'),
      request('/login\u0000'),
      request('/log in'),
      request('/../login'),
      request('/x/%2e%2e/%2e%2e/login'),
      request('login'),
      request('*', { method: 'OPTIONS' }),
      request('/login', { method: 'get' }),
      request('/login', { method: 'TRACE' }),
      request('/login', { method: 'CONNECT' }),
      request('/login', { version: 'HTTP/2.0' }),
      request('/login', { version: 'HTTP/9.9' }),
      request('/login', { version: 'HTTP/1.1000' }),
      request('/login', { headers: 'Host: other.test\r\n' }),
      request('/login', { method: 'POST', headers: 'Content-Length: 3\r\nContent-Length: 4\r\n' }),
      request('/login', { method: 'POST', headers: 'Transfer-Encoding: chunked\r\nContent-Length: 3\r\n' }),
      request('/login', { method: 'POST', headers: 'Transfer-Encoding: gzip\r\n' }),
      request('/login', { method: 'POST', headers: 'Transfer-Encoding: gzip, chunked\r\n' }),
      request('/login', { method: 'POST', headers: 'Content-Length: -1\r\n' }),
      request('/login', { headers: `X-Huge: ${long}\r\n` }),
      request(`/login/${long}`),
      request('/login', { headers: 'Bad Header\r\n' }),
      request('/login', { headers: 'X: a\u0000b\r\n' }),
      'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
      '\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003',
    ];
    for (const raw of hostile) {
      const client = freshClient();
      const before = upstreamHits;
      const answer = await send(raw, client);
      const name = JSON.stringify(raw.slice(0, 60));
      expect(answer.status, name).toBeGreaterThanOrEqual(400);
      expect(answer.status, name).toBeLessThan(500);
      expect(upstreamHits, name).toBe(before);
      expect(await counts(client), name).toEqual({ login: 0, api: 0 });
    }
  });

  it('lets through, uncounted, a path no route names, including raw bytes nginx passes on', async () => {
    for (const target of [
      '/',
      '/static/app.js',
      '/l\u00c3\u00b6gin',
      '/lo%C3%B6gin',
      '/%00login',
      '/logi',
      '/x"<>{}|^`',
    ]) {
      const client = freshClient();
      const answer = await send(request(target), client);
      expect(answer.status, target).toBeLessThan(500);
      expect(await counts(client), target).toEqual({ login: 0, api: 0 });
    }
    // Just under nginx's request line limit, the URI still reaches memgate, and counts.
    await expectCountedAsLogin(request(`/login/${'a'.repeat(8000)}`), 'an 8 KB URI');
  });

  it('answers 503 with Retry-After when memgate is overloaded or unreachable, never nginx’s bare 500', async () => {
    const working = limiter.policies;
    const overloadedLimiter: Limiter = {
      ...createLimiter({ policies: working, store }),
      current: () => overloadedLimiter,
      gate: () => Promise.reject(new StoreOverloadedError('too many checks waiting')),
    };
    limiter.replace(overloadedLimiter);
    const overloaded = await send(request('/login'), freshClient());
    expect([overloaded.status, overloaded.headers['retry-after'], JSON.parse(overloaded.body)]).toEqual([
      503,
      '1',
      { error: { code: 'rate_limiter_unavailable', message: expect.any(String) as string } },
    ]);
    await memgate.close();
    const before = upstreamHits;
    for (const target of ['/login', '/api/x', '/static/app.js']) {
      const down = await send(request(target), freshClient());
      expect([down.status, down.headers['retry-after']], target).toEqual([503, '1']);
    }
    // auth_request fails closed: nothing reached the upstream while memgate was down.
    expect(upstreamHits).toBe(before);
  });
});
