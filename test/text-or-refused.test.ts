// Text or refused: a feature or event whose bytes are not UTF-8 ("Jos\xe9", "Jos\xe8") is
// refused on every route and in every encoding memgate takes (query, JSON, header), with the
// field's error code, counting nothing. Decoded, both would read "Jos\ufffd" and share a counter.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    policies: {
      events: { api: { limits: [{ limit: 10, window: '1m' }], lease: { maxUnits: 5, life: '5s' } } },
      gateway: { feature: 'header:X-User', event: 'header:X-Event', uri: 'header:X-Original-URI', routes: [] },
    },
    store,
    keyPrefix: uniquePrefix(),
  });
  app = buildApp({ validateResponses: true, limiter, store, maxEventLoopDelayMs: 0 });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await store.close();
});

/** `text` with its last character as one raw byte: 0xe9 is é in latin1, and not UTF-8 alone. */
const raw = (text: string, last: number) => Buffer.concat([Buffer.from(text), Buffer.from([last])]);
const json = (...parts: (string | Buffer)[]) =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)));
const post = (url: string, payload: Buffer) =>
  app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } });
const gate = (headers: Record<string, string>) =>
  app.inject({ method: 'GET', url: '/gate', headers: { 'x-original-uri': '/x', ...headers } });

const code = (response: LightMyRequestResponse) => response.json<{ error?: { code: string } }>().error?.code;
const itemCodes = (response: LightMyRequestResponse) =>
  response.json<{ error?: { code: string } }[]>().map((item) => item.error?.code);

describe.each([0xe9, 0xe8])('a feature or event ending in the byte %s', (byte) => {
  const feature = raw('Jos', byte);
  const event = raw('ap', byte);
  const asQuery = (bytes: Buffer) => [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  // Node reads a header's bytes as latin1; light-my-request sends the string's latin1 bytes.
  const asHeader = (bytes: Buffer) => bytes.toString('latin1');

  it.each([
    ['GET /check, feature', () => app.inject(`/check?event=api&feature=${asQuery(feature)}`), 'invalid_feature'],
    ['GET /check, event', () => app.inject(`/check?event=${asQuery(event)}&feature=x`), 'invalid_event'],
    ['GET /peek, feature', () => app.inject(`/peek?event=api&feature=${asQuery(feature)}`), 'invalid_feature'],
    [
      'POST /check, feature',
      () => post('/check', json('{"event":"api","feature":"', feature, '"}')),
      'invalid_feature',
    ],
    ['POST /check, event', () => post('/check', json('{"event":"', event, '","feature":"x"}')), 'invalid_event'],
    ['POST /peek, feature', () => post('/peek', json('{"event":"api","feature":"', feature, '"}')), 'invalid_feature'],
    [
      'POST /lease',
      () => post('/lease', json('{"event":"api","units":2,"feature":"', feature, '"}')),
      'invalid_feature',
    ],
    [
      'POST /lease/return',
      () => post('/lease/return', json('{"event":"api","id":"1.a","unused":1,"feature":"', feature, '"}')),
      'invalid_feature',
    ],
    ['/gate, feature header', () => gate({ 'x-user': asHeader(feature), 'x-event': 'api' }), 'invalid_feature'],
    ['/gate, event header', () => gate({ 'x-user': 'x', 'x-event': asHeader(event) }), 'invalid_event'],
  ])('%s: 400 with the field’s code, nothing counted', async (_route, send, expected) => {
    const before = await counterWrites(memcached().servers);
    const response = await send();
    expect(response.statusCode).toBe(400);
    expect(code(response)).toBe(expected);
    expect(await counterWrites(memcached().servers)).toBe(before);
  });

  it('POST /check/batch and /lease/batch: that item refused with the field’s code, nothing counted', async () => {
    const before = await counterWrites(memcached().servers);
    const batch = await post(
      '/check/batch',
      json('[{"event":"api","feature":"', feature, '"},{"event":"', event, '","feature":"x"}]'),
    );
    expect(itemCodes(batch)).toEqual(['invalid_feature', 'invalid_event']);
    const leases = await post('/lease/batch', json('{"take":[{"event":"api","units":1,"feature":"', feature, '"}]}'));
    expect(leases.json<{ taken: { error?: { code: string } }[] }>().taken.map((item) => item.error?.code)).toEqual([
      'invalid_feature',
    ]);
    expect(await counterWrites(memcached().servers)).toBe(before);
  });
});

describe('a URI header', () => {
  it('stays as sent: paths are matched byte for byte, so bytes that are not UTF-8 are no reason to refuse', async () => {
    const response = await gate({ 'x-original-uri': '/caf\xe9', 'x-user': `u-${uniquePrefix()}`, 'x-event': 'api' });
    expect(response.statusCode).toBe(200);
  });
});

describe('text that is UTF-8', () => {
  it('counts "José" alike whether sent as a query, JSON or a header, and apart from "Jos\\ufffd"', async () => {
    const feature = `José-${uniquePrefix()}`;
    expect((await app.inject(`/check?event=api&feature=${encodeURIComponent(feature)}`)).statusCode).toBe(200);
    expect((await post('/check', Buffer.from(JSON.stringify({ event: 'api', feature })))).statusCode).toBe(200);
    const header = Buffer.from(feature).toString('latin1');
    expect((await gate({ 'x-user': header, 'x-event': 'api' })).statusCode).toBe(200);
    const peek = await post('/peek', Buffer.from(JSON.stringify({ event: 'api', feature })));
    expect(peek.json<{ limits: { remaining: number }[] }>().limits[0]?.remaining).toBe(7);
    const replaced = await post(
      '/peek',
      Buffer.from(JSON.stringify({ event: 'api', feature: feature.replace('é', '\ufffd') })),
    );
    expect(replaced.json<{ limits: { remaining: number }[] }>().limits[0]?.remaining).toBe(10);
  });
});
