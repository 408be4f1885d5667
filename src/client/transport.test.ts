// In Node the client reaches memgate through undici's Pool, an optional peer of memgate-client:
// an app that did not install undici gets the runtime's fetch instead, with the same answers.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from './transport.js';

let server: Server;
let url: URL;
const seen: IncomingHttpHeaders[] = [];
/** Requests the server holds at once, and the most it held. */
const inFlight = { now: 0, max: 0 };

beforeAll(async () => {
  server = createServer((request, response) => {
    seen.push(request.headers);
    inFlight.now++;
    inFlight.max = Math.max(inFlight.max, inFlight.now);
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      // /slow answers after a moment, so that requests sent at once overlap.
      setTimeout(
        () => {
          inFlight.now--;
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ path: request.url, echo: JSON.parse(body) as unknown }));
        },
        request.url?.endsWith('/slow') ? 20 : 0,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/base/`);
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const options = () => ({ url, timeoutMs: 2000, connections: 1, headers: { 'x-app': 'a' } });

describe('the transport in Node', () => {
  it('posts through undici when the app has it', async () => {
    seen.length = 0;
    const transport = createTransport(options());
    const answer = await transport.post('/check', { n: 1 });
    await transport.close();
    expect(answer).toEqual({ status: 200, body: { path: '/base/check', echo: { n: 1 } } });
    // undici's Pool sends no user-agent; its fetch says "node".
    expect(seen[0]?.['user-agent']).toBeUndefined();
    expect(seen[0]?.['x-app']).toBe('a');
  });

  it('falls back to fetch when undici cannot be loaded', async () => {
    seen.length = 0;
    const missing = Object.assign(new Error("Cannot find package 'undici'"), { code: 'ERR_MODULE_NOT_FOUND' });
    const transport = createTransport({ ...options(), loadUndici: () => Promise.reject(missing) });
    const answers = await Promise.all([transport.post('/check', { n: 2 }), transport.post('/peek', { n: 3 })]);
    await transport.close();
    expect(answers).toEqual([
      { status: 200, body: { path: '/base/check', echo: { n: 2 } } },
      { status: 200, body: { path: '/base/peek', echo: { n: 3 } } },
    ]);
    expect(seen.map((headers) => headers['user-agent'])).toEqual(['node', 'node']);
    expect(seen[0]?.['x-app']).toBe('a');
  });

  it('sends at most `connections` requests at once through fetch, as the pool would', async () => {
    seen.length = 0;
    const missing = Object.assign(new Error("Cannot find package 'undici'"), { code: 'ERR_MODULE_NOT_FOUND' });
    const transport = createTransport({ ...options(), connections: 2, loadUndici: () => Promise.reject(missing) });
    inFlight.max = 0;
    const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => transport.post('/slow', { n })));
    await transport.close();
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
    expect(inFlight.max).toBe(2);
  });

  it('says when undici is there but cannot be loaded, instead of hiding it behind fetch', async () => {
    const broken = Object.assign(new Error('Unexpected token'), { code: 'ERR_INVALID_PACKAGE_CONFIG' });
    const transport = createTransport({ ...options(), loadUndici: () => Promise.reject(broken) });
    await expect(transport.post('/check', {})).rejects.toMatchObject({
      name: 'TransportFailure',
      reason: 'network',
      message: 'undici could not be loaded: Unexpected token',
    });
    await expect(transport.close()).resolves.toBeUndefined();
  });
});
