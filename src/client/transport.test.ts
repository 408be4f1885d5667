// In Node the client reaches memgate through undici's Pool, an optional peer of memgate-client:
// an app that did not install undici gets the runtime's fetch instead, with the same answers.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from './transport.js';

let server: Server;
let url: URL;
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    seen.push(request.headers);
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ path: request.url, echo: JSON.parse(body) as unknown }));
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
});
