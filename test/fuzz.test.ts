// 10,000 random and malformed HTTP requests against a listening memgate on a real memcached:
// no 5xx, the server alive after, and no counter written for a request that was refused.
import { AsyncLocalStorage } from 'node:async_hooks';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const REQUESTS = 10_000;
const memcached = useMemcached();

/** The fuzz request being handled: its X-Fuzz-Request header, set around its handler. */
const origin = new AsyncLocalStorage<number>();

/**
 * The real store, counting the calls that write a counter by the request they came from.
 * Counting by time instead (writes between sending a request and its answer) would blame a
 * request for the late writes of an earlier one whose connection was cut before its handler
 * finished, which a loaded machine makes common.
 */
function countingWrites(store: CounterStore): CounterStore & { writesBy: Map<number | undefined, number> } {
  const writesBy = new Map<number | undefined, number>();
  const count = () => {
    const request = origin.getStore();
    writesBy.set(request, (writesBy.get(request) ?? 0) + 1);
  };
  return {
    ...store,
    writesBy,
    incrementAndRead(...args: Parameters<CounterStore['incrementAndRead']>) {
      if (args[0].length > 0) count();
      return store.incrementAndRead(...args);
    },
    decrement(...args: Parameters<CounterStore['decrement']>) {
      count();
      return store.decrement(...args);
    },
    swap(...args: Parameters<CounterStore['swap']>) {
      count();
      return store.swap(...args);
    },
  };
}

let port = 0;
/** The error code of the last answer, if it had memgate's error shape. */
let errorCode = '';
let store: ReturnType<typeof countingWrites>;
let close: () => Promise<void>;
beforeAll(async () => {
  const real = createMemcachedStore({ servers: memcached().servers });
  store = countingWrites(real);
  const policies = {
    events: {
      login: { limits: [{ limit: 3, window: '1m' }] },
      api: { limits: [{ limit: 1000, window: '1h', granularity: '1m' }] },
    },
  };
  // This process also generates the fuzz, which stalls its event loop: no load shedding here.
  const app = buildApp({
    validateResponses: true,
    limiter: createLimiter({ policies, store, keyPrefix: uniquePrefix() }),
    store,
    maxEventLoopDelayMs: 0,
  });
  // After the body is read, so the handler runs inside (a body's data events would not be).
  app.addHook('preValidation', (request, _reply, done) => {
    origin.run(Number(request.headers['x-fuzz-request']), done);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
  close = async () => {
    await app.close();
    await real.close();
  };
});
afterAll(async () => {
  await close();
});

/**
 * Sends raw bytes on a fresh connection and resolves with the status code of the answer (0
 * if none). A request promising more body than it sends is followed by the client hanging
 * up, so the server does not wait for the rest; a whole one is not, since a server that
 * sees the client hang up drops an answer it has not sent yet.
 */
function send(raw: Buffer, incomplete = false): Promise<number> {
  errorCode = '';
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(raw);
      if (incomplete) socket.end();
    });
    socket.setTimeout(5000, () => socket.destroy());
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      errorCode = /"error":\{"code":"([a-z_]+)"/.exec(received)?.[1] ?? '';
      resolve(Number(/^HTTP\/1\.[01] (\d{3})/.exec(received)?.[1] ?? 0));
    });
  });
}

const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom(
    'login',
    'api',
    'LOGIN',
    'login ',
    '1',
    '0',
    '-1',
    '1e3',
    '2.5',
    '99999999999999999999',
    '',
    'null',
    '[]',
    '{}',
    '%00',
    '%ff%fe',
    '\u0000',
    '名前',
    '\u{1F600}',
  ),
  fc.string({ minLength: 1000, maxLength: 1100 }),
);
const anyPairs = fc.array(
  fc.tuple(fc.constantFrom('event', 'feature', 'cost', 'other', 'event[]', 'EVENT', ''), text),
  { maxLength: 5 },
);
/** A real event and a feature, with a cost that is often bad: near the line between counted and refused. */
const checkPairs = fc
  .tuple(
    fc.constantFrom('login', 'api'),
    fc.string({ minLength: 1, maxLength: 20 }),
    fc.option(text, { nil: undefined }),
  )
  .map(([event, feature, cost]): [string, string][] => [
    ['event', event],
    ['feature', feature],
    ...(cost === undefined ? [] : [['cost', cost] as [string, string]]),
  ]);
const query = fc.oneof(anyPairs, checkPairs);
const encodeQuery = (pairs: [string, string][], raw: boolean) =>
  pairs.map(([k, v]) => (raw ? `${k}=${v}` : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)).join('&');

const request = fc.record({
  // Weighted towards what /check takes, so that many requests reach the limiter, the only writer.
  method: fc.oneof(
    fc.constantFrom('GET', 'POST'),
    fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'get', 'BREW', 'G\u0000T', ''),
  ),
  path: fc.oneof(
    fc.constant('/check'),
    fc.constantFrom(
      '/check',
      '/peek',
      '/policies',
      '/readyz',
      '/healthz',
      '/',
      '//check',
      '/check/',
      '/check/../check',
      '/nope',
      '*',
      'check',
      '/gate',
      '/gate/login/x',
      '/gate/%E0%A4%A',
      '/check%ZZ',
    ),
  ),
  query,
  rawQuery: fc.boolean(),
  contentType: fc.constantFrom(
    undefined,
    'application/json',
    'text/plain',
    'application/json; charset=latin1',
    'multipart/form-data',
    '\u0001',
  ),
  body: fc.oneof(
    fc.constant(''),
    fc.json({ maxDepth: 3 }),
    query.map((pairs) => JSON.stringify(Object.fromEntries(pairs))),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.constantFrom(
      '{',
      '{"event":',
      '{"event":"login","feature":"x","cost":1}',
      '{"event":"login","feature":"x","feature":"y"}',
      '[1,2]',
      'x'.repeat(20_000),
    ),
  ),
  lengthSkew: fc.constantFrom(0, 0, 0, -1, 5),
  extraHeader: fc.constantFrom(
    '',
    'X-Huge: ' + 'h'.repeat(20_000) + '\r\n',
    'Transfer-Encoding: chunked\r\n',
    'Host: \r\n',
    'Bad Header\r\n',
    'X: \u0007\r\n',
  ),
});

describe('a fuzz of 10,000 requests', () => {
  // 10,000 requests one after another: on a loaded machine this takes far longer than the default.
  it(
    'never gets a 5xx, never writes a counter for a refused request, and leaves the server serving',
    { timeout: 180_000 },
    async () => {
      const samples = fc.sample(request, { numRuns: REQUESTS, seed: 20261122 });
      const statuses = new Map<number, number>();
      const refused: number[] = [];
      const allowed: number[] = [];
      for (const [index, r] of samples.entries()) {
        const body = Buffer.from(r.body, 'utf8');
        const head =
          `${r.method} ${r.path}${r.query.length > 0 ? `?${encodeQuery(r.query, r.rawQuery)}` : ''} HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\nX-Fuzz-Request: ${index}\r\n` +
          (r.contentType === undefined ? '' : `Content-Type: ${r.contentType}\r\n`) +
          (body.length > 0 ? `Content-Length: ${Math.max(0, body.length + r.lengthSkew)}\r\n` : '') +
          r.extraHeader +
          '\r\n';
        // More body promised than sent, or a chunked body never ended: the server waits for the rest.
        const incomplete = (body.length > 0 && r.lengthSkew > 0) || r.extraHeader.includes('chunked');
        const status = await send(Buffer.concat([Buffer.from(head, 'latin1'), body]), incomplete);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        // A 429 is a decision (its increment taken back), not a refusal. When the framing is
        // broken (a body longer than its Content-Length, read as a second, garbage request; or
        // one that never ends), a valid head may be decided and counted while the connection
        // is answered 400: the status is not that of the request that wrote.
        const framed = !incomplete && !(body.length > 0 && r.lengthSkew < 0);
        if (status >= 400 && status !== 429 && framed) refused.push(index);
        if (status >= 200 && status < 300 && /^\/(check|gate)/.test(r.path)) allowed.push(index);
        expect(status, `${r.method} ${r.path} answered ${status}`).toBeLessThan(500);
        // Every error has memgate's shape (a 429 carries a decision; a HEAD answer has no body).
        if (status >= 400 && status !== 429 && r.method !== 'HEAD')
          expect(errorCode, `${r.method} ${r.path} answered ${status} without memgate's error shape`).toMatch(
            /^[a-z_]+$/,
          );
        // Every request gets an answer, except one whose client hung up before sending what it promised.
        if (!incomplete) expect(status, `${r.method} ${r.path} got no answer`).toBeGreaterThan(0);
      }
      const writesOf = (index: number) => store.writesBy.get(index) ?? 0;
      expect(refused.filter((index) => writesOf(index) > 0).map((index) => samples[index])).toEqual([]);
      // The attribution misses no write: each came from a fuzz request, and every allowed check wrote.
      expect([...store.writesBy.keys()].filter((index) => !Number.isInteger(index))).toEqual([]);
      expect(allowed.length).toBeGreaterThan(0);
      expect(allowed.filter((index) => writesOf(index) === 0).map((index) => samples[index])).toEqual([]);
      // Some requests were valid checks, most were refused, and each was answered.
      expect([...statuses.keys()].filter((status) => status >= 200 && status < 300).length).toBeGreaterThan(0);
      expect(statuses.get(400)).toBeGreaterThan(REQUESTS / 4);
      // Still serving.
      expect(
        await send(
          Buffer.from('GET /check?event=api&feature=after-the-fuzz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
        ),
      ).toBe(200);
    },
  );
});
