// What the framework tests share: serving a real express or fastify app on a free port, and
// asking it (or memgate) over real HTTP.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type express from 'express';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import type { Decision } from '../../src/counting/decision.js';

/** One answer of an app: its status, its headers (a repeated one joined), its body. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** Serves `app` on 127.0.0.1 and returns its URL; what closes it goes into `closers`. */
export async function serveExpress(app: express.Express, closers: (() => Promise<unknown>)[]): Promise<string> {
  const server: Server = createServer(app);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  );
  return `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
}

export async function serveFastify(app: FastifyInstance, closers: (() => Promise<unknown>)[]): Promise<string> {
  closers.push(() => app.close());
  return app.listen({ port: 0, host: '127.0.0.1' });
}

export async function send(
  url: string,
  { method = 'GET', headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const answer = await request(url, { method: method as 'GET', headers, body: body ?? null });
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    flat[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return { status: answer.statusCode, headers: flat, text: await answer.body.text() };
}

/** memgate's own answer for a feature, counting nothing. */
export async function peekAt(memgateUrl: string, event: string, feature: string): Promise<Decision> {
  const answer = await request(`${memgateUrl}/peek`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ event, feature }),
  });
  return (await answer.body.json()) as Decision;
}

/** The URL of a port nothing listens on. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${String(port)}`;
}
