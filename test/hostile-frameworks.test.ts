// Hostile tests of memgate's four framework integrations from the outside: an end user who
// controls only the HTTP requests sent to an express or fastify app (real apps over real
// HTTP, a real memgate process on a real memcached), and the settings an operator picks.
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import rateLimitPlugin from '@fastify/rate-limit';
import express from 'express';
import { rateLimit, type Options as ErlOptions } from 'express-rate-limit';
import Fastify, { type FastifyInstance } from 'fastify';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type MemgateClient } from '../src/client/index.js';
import { memgateLimit } from '../src/integrations/express.js';
import { MemgateStore } from '../src/integrations/express-rate-limit.js';
import { memgatePlugin } from '../src/integrations/fastify.js';
import { memgateStore } from '../src/integrations/fastify-rate-limit.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const TOKEN = 'hostile-frameworks-token-0123456789abcdef';
const LIMIT = 3;
const POLICIES = `events:
  api:
    limits:
      - { limit: ${LIMIT}, window: 1m }
  login:
    limits:
      - { limit: ${LIMIT}, window: 1m }
`;

const memcached = useMemcached();
let memgate: ServiceProcess;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-hostile-frameworks-'));
  await writeFile(join(dir, 'policies.yaml'), POLICIES);
  memgate = await startServiceProcess({
    MEMCACHED_SERVERS: memcached().servers,
    MEMGATE_CONFIG: join(dir, 'policies.yaml'),
    MEMGATE_ADMIN_TOKEN: TOKEN,
    MEMGATE_KEY_PREFIX: uniquePrefix(),
  });
});
afterAll(async () => {
  await memgate.stop();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function client(options: { adminToken?: string } = {}): MemgateClient {
  const made = createClient({ url: memgate.url, timeoutMs: 2000, ...options });
  closers.push(() => made.close());
  return made;
}

async function listen(app: express.Express): Promise<string> {
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

async function listenFastify(app: FastifyInstance): Promise<string> {
  closers.push(() => app.close());
  return app.listen({ port: 0, host: '127.0.0.1' });
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

async function send(
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

/** Statuses of `count` requests sent one after another. */
async function statusesOf(count: number, ask: () => Promise<Answer>): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await ask()).status);
  return statuses;
}

const LIMITED = [...Array<number>(LIMIT).fill(200), 429, 429];

// Keys an end user can send that memgate cannot take as a feature as they are: empty, over
// 1024 UTF-8 bytes, and (through a JSON body) a lone surrogate.
const HOSTILE_KEYS = { empty: '', long: 'k'.repeat(1100) };

function erlApp(store: ErlOptions['store'], options: Partial<ErlOptions> = {}): express.Express {
  const app = express();
  app.use(
    rateLimit({
      windowMs: 60_000,
      limit: LIMIT,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      keyGenerator: (req) => req.get('x-api-key') ?? 'anonymous',
      store,
      ...options,
    }),
  );
  app.get('/', (_req, res) => {
    res.send('ok');
  });
  return app;
}

async function fastifyRateLimitApp(skipOnError: boolean): Promise<string> {
  const app = Fastify();
  await app.register(rateLimitPlugin, {
    max: LIMIT,
    timeWindow: 60_000,
    skipOnError,
    keyGenerator: (request) => String(request.headers['x-api-key'] ?? 'anonymous'),
    store: memgateStore({ client: client(), event: 'login' }), // not the express test's event: the empty key is one feature
  });
  app.get('/', () => 'ok');
  return listenFastify(app);
}

describe('an end user steering the feature', () => {
  for (const [name, key] of Object.entries(HOSTILE_KEYS)) {
    it(`cannot escape express-rate-limit (passOnStoreError) with a key memgate refuses: ${name}`, async () => {
      const url = await listen(
        erlApp(new MemgateStore({ client: client(), event: 'api' }), {
          passOnStoreError: true,
          keyGenerator: (req) => req.get('x-api-key') ?? 'anonymous',
          logger: { error: () => undefined, warn: () => undefined } as unknown as ErlOptions['logger'],
        }),
      );
      const k = `${key}${name === 'empty' ? '' : uniquePrefix()}`;
      expect(await statusesOf(5, () => send(url, { headers: { 'x-api-key': k } }))).toEqual(LIMITED);
    });

    it(`cannot escape @fastify/rate-limit (skipOnError) with a key memgate refuses: ${name}`, async () => {
      const url = await fastifyRateLimitApp(true);
      const k = `${key}${name === 'empty' ? '' : uniquePrefix()}`;
      expect(await statusesOf(5, () => send(url, { headers: { 'x-api-key': k } }))).toEqual(LIMITED);
    });
  }

  it('gets 429s, not 500s, from the middleware and the plugin with a feature memgate refuses', async () => {
    const app = express();
    app.post(
      '/login',
      express.json(),
      memgateLimit({ client: client(), feature: (req) => String((req.body as { email?: unknown }).email) }),
      (_req, res) => {
        res.send('ok');
      },
    );
    const expressUrl = await listen(app);
    const fast = Fastify();
    await fast.register(memgatePlugin, {
      client: client(),
      feature: (request) => String(request.headers['x-api-key']),
    });
    fast.get('/login', () => 'ok');
    const fastifyUrl = await listenFastify(fast);
    // A lone surrogate, as JSON lets any end user send one.
    const lone = `{"email": "\\ud800${uniquePrefix()}"}`;
    const json = { 'content-type': 'application/json' };
    expect(
      await statusesOf(5, () => send(`${expressUrl}/login`, { method: 'POST', headers: json, body: lone })),
    ).toEqual(LIMITED);
    const long = 'x'.repeat(2000) + uniquePrefix();
    expect(
      await statusesOf(5, () =>
        send(`${expressUrl}/login`, { method: 'POST', headers: json, body: JSON.stringify({ email: long }) }),
      ),
    ).toEqual(LIMITED);
    const longer = 'y'.repeat(2000) + uniquePrefix();
    expect(await statusesOf(5, () => send(`${fastifyUrl}/login`, { headers: { 'x-api-key': longer } }))).toEqual(
      LIMITED,
    );
  });
});
