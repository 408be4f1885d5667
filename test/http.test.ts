import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { loadPolicyFile } from '../src/config/policies.js';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { counterWrites, uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached({ own: true });
let app: FastifyInstance;
let store: CounterStore;

beforeAll(async () => {
  store = createMemcachedStore({ servers: memcached().servers });
  const limiter = createLimiter({
    // The host's clock: the store's would name each turn of the server's clock in the background (clock-sync.ts), which the write counts below would see.
    now: Date.now,
    policies: await loadPolicyFile('config/policies.yaml'),
    store,
    keyPrefix: uniquePrefix(),
  });
  // Property tests run in this process and may stall its event loop: no load shedding here.
  app = buildApp({ validateResponses: true, limiter, store, maxEventLoopDelayMs: 0 });
  await app.ready();
});
afterAll(async () => {
  await app.close();
});

const get = (url: string) => app.inject({ method: 'GET', url });
const post = (url: string, payload: string | Buffer, contentType = 'application/json') =>
  app.inject({ method: 'POST', url, payload, headers: { 'content-type': contentType } });

/** A JSON check whose feature (or event) ends in one byte as given, such as latin1's é (0xe9). */
function latin1Body(event: string, feature: string, last: number, where: 'event' | 'feature' = 'feature'): Buffer {
  const [before, after] =
    where === 'feature'
      ? [`{"event":"${event}","feature":"${feature}`, '"}']
      : [`{"feature":"${feature}","event":"${event}`, '"}'];
  return Buffer.concat([Buffer.from(before), Buffer.from([last]), Buffer.from(after)]);
}

function errorCode(response: LightMyRequestResponse): string {
  return response.json<{ error: { code: string } }>().error.code;
}

describe('GET and POST /check', () => {
  it('allows with the RateLimit headers, then denies with 429 and Retry-After', async () => {
    const first = await get('/check?event=login&feature=203.0.113.7');
    expect(first.statusCode).toBe(200);
    expect(first.headers['ratelimit-policy']).toBe('"login-1m";q=5;w=60, "login-1d";q=100;w=86400');
    expect(first.headers.ratelimit).toMatch(/^"login-1m";r=4;t=[0-9]+$/);
    expect(first.json()).toMatchObject({
      allowed: true,
      limits: [
        { name: 'login-1m', remaining: 4 },
        { name: 'login-1d', remaining: 99 },
      ],
    });

    for (let i = 0; i < 4; i++) expect((await get('/check?event=login&feature=203.0.113.7')).statusCode).toBe(200);
    const denied = await get('/check?event=login&feature=203.0.113.7');
    expect(denied.statusCode).toBe(429);
    const body = denied.json<{ allowed: boolean; retryAfter: number }>();
    expect(body.allowed).toBe(false);
    expect(body.retryAfter).toBeGreaterThan(0);
    expect(denied.headers['retry-after']).toBe(String(body.retryAfter));
    expect(denied.headers.ratelimit).toMatch(/^"login-1m";r=0;t=[0-9]+$/);
  });

  it('takes a JSON body and a cost', async () => {
    const response = await post('/check', JSON.stringify({ event: 'url_shorten', feature: 'user 42', cost: 30 }));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      allowed: true,
      limits: [{ name: 'url_shorten-1m', limit: 100, window: 60, remaining: 70 }],
    });
    const over = await get(`/check?event=url_shorten&feature=${encodeURIComponent('user 42')}&cost=71`);
    expect(over.statusCode).toBe(429);
  });

  it('peeks without counting', async () => {
    for (let i = 0; i < 3; i++) {
      const peek = await get('/peek?event=export&feature=acme');
      expect(peek.statusCode).toBe(200);
      expect(peek.json()).toMatchObject({ limits: [{ remaining: 10 }] });
    }
    expect((await post('/peek', JSON.stringify({ event: 'export', feature: 'acme' }))).json()).toMatchObject({
      limits: [{ remaining: 10 }],
    });
  });
});

describe('bad input: a 4xx JSON error, and no counter touched', () => {
  const long = 'x'.repeat(1025);
  it.each([
    ['no parameters', () => get('/check'), 400, 'invalid_event'],
    ['no feature', () => get('/check?event=login'), 400, 'invalid_feature'],
    ['an empty event', () => get('/check?event=&feature=x'), 400, 'invalid_event'],
    ['an empty feature', () => get('/check?event=login&feature='), 400, 'invalid_feature'],
    ['an unknown event', () => get('/check?event=logout&feature=x'), 400, 'unknown_event'],
    ['a repeated feature', () => get('/check?event=login&feature=a&feature=b'), 400, 'invalid_feature'],
    ['a feature that is not UTF-8', () => get('/check?event=login&feature=%ED%A0%80'), 400, 'invalid_feature'],
    ['a latin1 feature', () => get('/check?event=login&feature=Jos%E9'), 400, 'invalid_feature'],
    ['a latin1 event', () => get('/check?feature=x&event=logi%E9'), 400, 'invalid_event'],
    ['a cost not UTF-8', () => get('/check?event=login&feature=x&cost=%E9'), 400, 'invalid_cost'],
    ['a JSON feature not UTF-8', () => post('/check', latin1Body('login', 'Jos', 0xe9)), 400, 'invalid_feature'],
    ['a JSON event not UTF-8', () => post('/check', latin1Body('logi', 'x', 0xe9, 'event')), 400, 'invalid_event'],
    ['a peek not UTF-8', () => post('/peek', latin1Body('login', 'Jos', 0xe8)), 400, 'invalid_feature'],
    [
      'JSON nested deeper than any request',
      () => post('/check/batch', `${'['.repeat(50_000)}${']'.repeat(50_000)}`),
      400,
      'invalid_request',
    ],
    [
      'more JSON values than any request',
      () => post('/check/batch', JSON.stringify(Array(2000).fill(0))),
      413,
      'payload_too_large',
    ],
    [
      'a batch over its size',
      () => post('/check/batch', JSON.stringify([{ event: 'login', feature: 'x'.repeat(900_000) }])),
      413,
      'payload_too_large',
    ],
    // Bodies past DEFAULTS.jsonStepAboveBytes are read in steps: the same answers.
    [
      'a large batch of broken JSON',
      () => post('/check/batch', `[${JSON.stringify({ event: 'login', feature: 'x'.repeat(60_000) })}`),
      400,
      'invalid_json',
    ],
    [
      'a large batch with a __proto__ key',
      () =>
        post(
          '/check/batch',
          `[{"event":"login","feature":"${'y'.repeat(60_000)}"},{"event":"login","feature":"x","__proto__":{"a":1}}]`,
        ),
      400,
      'invalid_json',
    ],
    ['a feature with a bare %', () => get('/check?event=login&feature=100%'), 400, 'invalid_feature'],
    ['a zero cost', () => get('/check?event=login&feature=x&cost=0'), 400, 'invalid_cost'],
    ['a negative cost', () => get('/check?event=login&feature=x&cost=-1'), 400, 'invalid_cost'],
    ['a fractional cost', () => get('/check?event=login&feature=x&cost=1.5'), 400, 'invalid_cost'],
    ['a word for a cost', () => get('/check?event=login&feature=x&cost=five'), 400, 'invalid_cost'],
    ['a huge cost', () => get('/check?event=login&feature=x&cost=99999999999999999999'), 400, 'invalid_cost'],
    ['a cost above the limit', () => get('/check?event=login&feature=x&cost=6'), 400, 'cost_exceeds_limit'],
    ['a feature over 1 KB', () => get(`/check?event=login&feature=${long}`), 400, 'feature_too_long'],
    ['an unknown parameter', () => get('/check?event=login&feature=x&costs=2'), 400, 'invalid_request'],
    ['a peek with bad input', () => get('/peek?event=login'), 400, 'invalid_feature'],
    ['malformed JSON', () => post('/check', '{"event": "login",'), 400, 'invalid_json'],
    ['an empty JSON body', () => post('/check', ''), 400, 'invalid_json'],
    ['a JSON array', () => post('/check', '["login", "x"]'), 400, 'invalid_request'],
    ['a numeric feature', () => post('/check', '{"event": "login", "feature": 42}'), 400, 'invalid_feature'],
    ['a string cost', () => post('/check', '{"event": "login", "feature": "x", "cost": "2"}'), 400, 'invalid_cost'],
    [
      'an unknown field',
      () => post('/check', '{"event": "login", "feature": "x", "user": "y"}'),
      400,
      'invalid_request',
    ],
    ['a lone surrogate', () => post('/check', '{"event": "login", "feature": "\\ud800"}'), 400, 'invalid_feature'],
    [
      'a __proto__ key',
      () => post('/check', '{"event":"login","feature":"x","__proto__":{"a":1}}'),
      400,
      'invalid_json',
    ],
    ['plain text', () => post('/check', 'event=login', 'text/plain'), 415, 'unsupported_media_type'],
    [
      'a form body',
      () => post('/check', 'event=login&feature=x', 'application/x-www-form-urlencoded'),
      415,
      'unsupported_media_type',
    ],
    [
      'a 20 KB body',
      () => post('/check', JSON.stringify({ event: 'login', feature: 'x'.repeat(20_000) })),
      413,
      'payload_too_large',
    ],
    ['an unknown route', () => get('/chek?event=login&feature=x'), 404, 'not_found'],
  ])('%s', async (_case, send, status, code) => {
    const before = await counterWrites(memcached().servers);
    const response = await send();
    expect(response.statusCode).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(errorCode(response)).toBe(code);
    expect(response.json<{ error: { message: string } }>().error.message.length).toBeGreaterThan(0);
    expect(await counterWrites(memcached().servers)).toBe(before);
  });

  it('reads a percent-encoded UTF-8 feature as its text', async () => {
    const feature = `été-${Date.now()}`;
    expect((await get(`/check?event=login&feature=${encodeURIComponent(feature)}`)).statusCode).toBe(200);
    const peeked = await post('/peek', JSON.stringify({ event: 'login', feature }));
    expect(peeked.json<{ limits: { remaining: number; limit: number }[] }>().limits[0]?.remaining).toBe(
      (peeked.json<{ limits: { limit: number }[] }>().limits[0]?.limit ?? 0) - 1,
    );
  });

  it('decides a batch large enough to be read in steps', async () => {
    const stamp = Date.now();
    const items = Array.from({ length: 60 }, (_, i) => ({
      event: 'login',
      feature: `${stamp}-${i}-${'z'.repeat(900)}`,
    }));
    const body = JSON.stringify(items);
    expect(body.length).toBeGreaterThan(DEFAULTS.jsonStepAboveBytes);
    const response = await post('/check/batch', body);
    expect(response.statusCode).toBe(200);
    const answers = response.json<{ allowed: boolean }[]>();
    expect(answers).toHaveLength(60);
    expect(answers.every((answer) => answer.allowed)).toBe(true);
  });

  it('says what a field must be in plain words', async () => {
    const response = await post('/check', '{"event": "login", "feature": "x", "cost": "2"}');
    expect(response.json<{ error: { message: string } }>().error.message).toBe('cost must be an integer');
  });

  it('answers any string in any field with a decision or a 4xx, never a 5xx', async () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.constantFrom('login', 'export', '1', '0', '-1', ''),
      fc.string({ maxLength: 1100 }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom('event', 'feature', 'cost', 'other'), text),
        fc.boolean(),
        async (fields, asJson) => {
          const response = asJson
            ? await post('/check', JSON.stringify(fields))
            : await get(`/check?${new URLSearchParams(fields).toString()}`);
          expect([200, 400, 413, 429]).toContain(response.statusCode);
          const body = response.json<{ allowed?: boolean; error?: { code: string } }>();
          expect(response.statusCode >= 400 ? typeof body.error?.code : typeof body.allowed).toBe(
            response.statusCode >= 400 ? 'string' : 'boolean',
          );
        },
      ),
      { numRuns: 400 },
    );
  });
});

describe('malformed HTTP on a real socket', () => {
  let port: number;
  beforeAll(async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });

  it('answers a request line over the size limit with a 431 JSON error', async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        { port, host: '127.0.0.1', path: `/check?event=login&feature=${'x'.repeat(20_000)}` },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, body: text });
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(431);
    expect(JSON.parse(body)).toMatchObject({ error: { code: 'request_too_large' } });
  });

  it('keeps the connection of a body it refused once read whole, and closes one over the size limit', async () => {
    // fastify closes the connection after any body parser's error; memgate's parser refuses
    // only a body it has read whole, so the next request may come on the same connection.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (body: string) =>
      new Promise<{ status: number; reused: boolean; connection: string | undefined }>((resolve, reject) => {
        const req = httpRequest(
          {
            port,
            host: '127.0.0.1',
            path: '/check/batch',
            method: 'POST',
            agent,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            res.resume();
            res.on('end', () => {
              resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, connection: res.headers.connection });
            });
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const valid = '[{"event":"login","feature":"keep-alive"}]';
    try {
      expect(await post(valid)).toMatchObject({ status: 200, reused: false });
      // No Connection header: HTTP/1.1's default, a persistent connection.
      expect(await post(`${'['.repeat(10)}${']'.repeat(10)}`)).toEqual({
        status: 400,
        reused: true,
        connection: undefined,
      });
      expect(await post('[{"event":')).toEqual({ status: 400, reused: true, connection: undefined });
      expect(await post(valid)).toMatchObject({ status: 200, reused: true });
      // Beyond the route's size limit the rest was never read: that connection closes.
      expect(await post(`[${' '.repeat(300_000)}]`)).toMatchObject({ status: 413, connection: 'close' });
      expect(await post(valid)).toMatchObject({ status: 200, reused: false });
    } finally {
      agent.destroy();
    }
  });

  it('answers garbage with a 400 JSON error', async () => {
    const reply = await new Promise<string>((resolve) => {
      let text = '';
      const socket = connect(port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('close', () => {
        resolve(text);
      });
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toMatchObject({
      error: { code: 'malformed_request' },
    });
  });
});

describe('health, readiness and policies', () => {
  it('is healthy and ready on a live memcached', async () => {
    expect((await get('/healthz')).json()).toEqual({ status: 'ok' });
    await store.clock?.ready();
    expect((await get('/readyz')).json()).toEqual({
      status: 'ready',
      store: 'memcached',
      clockOffsetMs: expect.any(Number) as number,
      servers: [
        {
          server: memcached().servers,
          up: true,
          evictions: 0,
          clockOffsetMs: expect.any(Number) as number,
          state: 'up',
        },
      ],
    });
  });

  it('is not ready when memcached is unreachable, naming the server, and decides checks by each event’s onStoreError', async () => {
    const store = createMemcachedStore({ servers: '127.0.0.1:1', timeoutMs: 200 });
    const policies = {
      events: {
        search: { limits: [{ limit: 5, window: '1m' }] },
        login: { onStoreError: 'deny', limits: [{ limit: 5, window: '1m' }] },
      },
    };
    const limiter = createLimiter({ policies, store });
    const down = buildApp({ validateResponses: true, limiter, store });
    const ready = await down.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({
      status: 'unavailable',
      servers: [{ server: '127.0.0.1:1', up: false }],
      error: { code: 'store_unavailable' },
    });
    expect(ready.json<{ error: { message: string } }>().error.message).toContain('127.0.0.1:1');

    // The default, allow: an outage of the limiter is not an outage of the API.
    const search = await down.inject({ method: 'GET', url: '/check?event=search&feature=x' });
    expect(search.statusCode).toBe(200);
    expect(search.json()).toEqual({
      allowed: true,
      limits: [],
      degraded: true,
      policyVersion: expect.any(String) as string,
    });
    expect(search.headers).not.toHaveProperty('ratelimit');
    const login = await down.inject({ method: 'POST', url: '/peek', payload: { event: 'login', feature: 'x' } });
    expect(login.statusCode).toBe(429);
    expect(login.json()).toEqual({
      allowed: false,
      limits: [],
      retryAfter: 1,
      degraded: true,
      policyVersion: expect.any(String) as string,
    });
    expect(login.headers['retry-after']).toBe('1');
    expect((await down.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    await down.close();
    await store.close();
  });

  it('lists the policies with what each costs Memcached', async () => {
    const body = (await get('/policies')).json<{
      source: string;
      events: {
        event: string;
        incrementsPerCheck: number;
        itemsPerFeature: number;
        limits: { name: string; bucketSizes: number[]; keysPerCheck: { max: number; mean: number } }[];
      }[];
    }>();
    expect(body.source).toBe('config/policies.yaml');
    expect(body.events.map((e) => e.event)).toEqual(['login', 'url_shorten', 'export']);
    const [login, urlShorten, exportEvent] = body.events;
    expect(login?.incrementsPerCheck).toBe(3);
    expect(login?.limits.map((l) => [l.name, l.bucketSizes, l.keysPerCheck.max])).toEqual([
      ['login-1m', [60, 1], 60],
      ['login-1d', [3600, 60, 1], 142],
    ]);
    expect(urlShorten?.limits[0]?.keysPerCheck).toEqual({ max: 60, mean: 30.5 });
    expect(exportEvent?.limits[0]?.keysPerCheck).toEqual({ max: 1, mean: 1 });
    // A 1 s bucket read by the day window lives a day: ~86,400 second items per active login feature.
    expect(login?.itemsPerFeature).toBeGreaterThan(86_400);
    // A fixed 1 h counter created late in its hour outlives the next hour: up to 3 at once.
    expect(exportEvent?.itemsPerFeature).toBe(3);
  });
});
