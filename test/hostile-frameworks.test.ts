// Hostile tests of memgate's four framework integrations from the outside: an end user who
// controls only the HTTP requests sent to an express or fastify app (real apps over real
// HTTP, a real memgate process on a real memcached), and the settings an operator picks.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';
import rateLimitPlugin from '@fastify/rate-limit';
import express from 'express';
import { rateLimit, type Options as ErlOptions } from 'express-rate-limit';
import Fastify, { type FastifyInstance } from 'fastify';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient, type MemgateClient } from '../src/client/index.js';
import type { Decision } from '../src/counting/decision.js';
import { memgateLimit } from '../src/integrations/express.js';
import { MemgateStore } from '../src/integrations/express-rate-limit.js';
import { memgatePlugin } from '../src/integrations/fastify.js';
import { memgateStore } from '../src/integrations/fastify-rate-limit.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { closedPortUrl, peekAt, send, serveExpress, serveFastify, type Answer } from './helpers/framework-apps.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const TOKEN = 'hostile-frameworks-token-0123456789abcdef';
const LIMIT = 3;
const CROWD_LIMIT = 10;
const CROWD = 100;
const POLICIES = `events:
  api:
    limits:
      - { limit: ${LIMIT}, window: 1m }
  login:
    limits:
      - { limit: ${LIMIT}, window: 1m }
  crowd:
    limits:
      - { limit: ${CROWD_LIMIT}, window: 1m }
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

const listen = (app: express.Express) => serveExpress(app, closers);
const listenFastify = (app: FastifyInstance) => serveFastify(app, closers);
const peek = (event: string, feature: string) => peekAt(memgate.url, event, feature);
const closedPort = closedPortUrl;

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

/** `CROWD` concurrent requests of one user, alternating between two app instances. */
async function crowd(urls: [string, string], user: string): Promise<Answer[]> {
  return Promise.all(
    Array.from({ length: CROWD }, (_, i) => send(urls[i % 2] ?? '', { headers: { 'x-api-key': user } })),
  );
}

/** The remaining counts the admitted answers showed, read by `remainingOf`, sorted. */
function shownRemaining(answers: Answer[], remainingOf: (answer: Answer) => string | undefined): number[] {
  return answers
    .filter((answer) => answer.status === 200)
    .map((answer) => Number(remainingOf(answer)))
    .sort((a, b) => a - b);
}

const EVERY_REMAINING = Array.from({ length: CROWD_LIMIT }, (_, i) => i);

function expectDenials(answers: Answer[]): void {
  for (const denied of answers.filter((answer) => answer.status === 429)) {
    expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  }
}

describe('an end user steering the feature with X-Forwarded-For', () => {
  it('shares one limit across spoofed addresses while trust proxy is off (the default)', async () => {
    const app = express();
    app.get('/login', memgateLimit({ client: client() }), (_req, res) => {
      res.send('ok');
    });
    const fast = Fastify();
    await fast.register(memgatePlugin, { client: client() });
    fast.get('/login', () => 'ok');
    // Both apps see 127.0.0.1: use a fresh event-free feature by resetting what the first counted.
    for (const url of [await listen(app), await listenFastify(fast)]) {
      await request(`${memgate.url}/admin/reset`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ event: 'login', feature: '127.0.0.1' }),
      });
      let spoof = 0;
      const statuses = await statusesOf(5, () =>
        send(`${url}/login`, { headers: { 'x-forwarded-for': `203.0.113.${String(++spoof)}` } }),
      );
      expect(statuses).toEqual(LIMITED);
    }
  });
});

describe('one user sending 100 concurrent requests to two instances of the app', () => {
  it('express-rate-limit: exactly the limit is admitted, each with its own remaining', async () => {
    const app = () => erlApp(new MemgateStore({ client: client(), event: 'crowd' }), { limit: CROWD_LIMIT });
    const urls: [string, string] = [await listen(app()), await listen(app())];
    const answers = await crowd(urls, `crowd-${uniquePrefix()}`);
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(CROWD_LIMIT);
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(CROWD - CROWD_LIMIT);
    expect(shownRemaining(answers, (a) => /remaining=(\d+)/.exec(a.headers.ratelimit ?? '')?.[1])).toEqual(
      EVERY_REMAINING,
    );
    expectDenials(answers);
  });

  it('@fastify/rate-limit: exactly the limit is admitted, each with its own remaining', async () => {
    const app = async () => {
      const fast = Fastify();
      await fast.register(rateLimitPlugin, {
        max: CROWD_LIMIT,
        timeWindow: 60_000,
        keyGenerator: (request) => String(request.headers['x-api-key']),
        store: memgateStore({ client: client(), event: 'crowd' }),
      });
      fast.get('/', () => 'ok');
      return listenFastify(fast);
    };
    const answers = await crowd([await app(), await app()], `crowd-${uniquePrefix()}`);
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(CROWD_LIMIT);
    expect(shownRemaining(answers, (a) => a.headers['x-ratelimit-remaining'])).toEqual(EVERY_REMAINING);
    expectDenials(answers);
  });

  it('memgate/express and memgate/fastify: exactly the limit is admitted, each with its own remaining', async () => {
    const expressApp = () => {
      const app = express();
      app.get(
        '/',
        memgateLimit({ client: client(), event: 'crowd', feature: (req) => req.get('x-api-key') ?? '' }),
        (_req, res) => {
          res.send('ok');
        },
      );
      return listen(app);
    };
    const fastifyApp = async () => {
      const fast = Fastify();
      await fast.register(memgatePlugin, {
        client: client(),
        event: 'crowd',
        feature: (r) => String(r.headers['x-api-key']),
      });
      fast.get('/', () => 'ok');
      return listenFastify(fast);
    };
    const remainingOf = (a: Answer) => /;r=(\d+);/.exec(a.headers.ratelimit ?? '')?.[1];
    for (const answers of [
      await crowd([await expressApp(), await expressApp()], `crowd-${uniquePrefix()}`),
      await crowd([await fastifyApp(), await fastifyApp()], `crowd-${uniquePrefix()}`),
      await crowd([await expressApp(), await fastifyApp()], `crowd-${uniquePrefix()}`),
    ]) {
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(CROWD_LIMIT);
      expect(shownRemaining(answers, remainingOf)).toEqual(EVERY_REMAINING);
      expectDenials(answers);
      for (const denied of answers.filter((answer) => answer.status === 429)) {
        expect(denied.headers['content-type']).toMatch(/^application\/json/);
        expect((JSON.parse(denied.text) as Decision).allowed).toBe(false);
      }
    }
  });

  it('express-rate-limit with skipFailedRequests: the 429s give back nothing the admitted requests counted', async () => {
    const app = () =>
      erlApp(new MemgateStore({ client: client({ adminToken: TOKEN }), event: 'crowd' }), {
        limit: CROWD_LIMIT,
        skipFailedRequests: true,
      });
    const urls: [string, string] = [await listen(app()), await listen(app())];
    const user = `crowd-${uniquePrefix()}`;
    let admitted = 0;
    for (let round = 0; round < 3; round++) {
      const answers = await crowd(urls, user);
      admitted += answers.filter((answer) => answer.status === 200).length;
    }
    // Refunds follow the responses; give them time to land before reading memgate's count.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(admitted).toBe(CROWD_LIMIT);
    expect((await peek('crowd', user)).limits[0]?.remaining).toBe(0);
  });
});

/** What an end user must never read: memgate's event names, its policy, its messages. */
function expectNothingOfMemgate(answer: Answer): void {
  expect(answer.text).not.toMatch(/unknown event|known events|unlisted|closed|memgate/i);
}

describe('what an end user sees when the check fails', () => {
  it('fastify (plugin and @fastify/rate-limit): a plain 500, the detail only in the log', async () => {
    const logged: string[] = [];
    const logger = { level: 'error', stream: { write: (line: string) => logged.push(line) } };
    const closed = createClient({ url: memgate.url });
    await closed.close();
    const fast = Fastify({ logger });
    await fast.register(memgatePlugin, { client: client() });
    fast.get('/unlisted', () => 'ok');
    await fast.register((child, _options, done) => {
      // A second registration in a child context, for its own routes.
      void child.register(memgatePlugin, { client: closed, event: 'api' });
      child.get('/closed', { config: { memgate: { event: 'api' } } }, () => 'ok');
      done();
    });
    const pluginUrl = await listenFastify(fast);
    const limited = Fastify({ logger });
    await limited.register(rateLimitPlugin, {
      max: LIMIT,
      timeWindow: 60_000,
      store: memgateStore({ client: client(), event: 'unlisted' }),
    });
    limited.get('/', () => 'ok');
    const storeUrl = await listenFastify(limited);

    for (const url of [`${pluginUrl}/unlisted`, `${pluginUrl}/closed`, storeUrl]) {
      const answer = await send(url);
      expect(answer.status).toBe(500);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expectNothingOfMemgate(answer);
    }
    // The operator still reads why, in the log.
    const log = logged.join('');
    expect(log).toContain('unknown event \\"unlisted\\"');
    expect(log).toContain('this client was closed');
  });

  it("express in production: express's plain 500, for the middleware and express-rate-limit", async () => {
    const app = express();
    app.set('env', 'production');
    app.get('/unlisted', memgateLimit({ client: client() }), (_req, res) => {
      res.send('ok');
    });
    app.use('/store', rateLimit({ limit: LIMIT, store: new MemgateStore({ client: client(), event: 'unlisted' }) }));
    // A route with no path to name an event by: the operator's log says so.
    app.get(/^\/re\/\d+$/, memgateLimit({ client: client() }), (_req, res) => {
      res.send('ok');
    });
    const url = await listen(app);
    // express (finalhandler) and express-rate-limit log to console.error: the operator's copy.
    const errors: string[] = [];
    const consoleError = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
      errors.push(...args.map((arg) => inspect(arg)));
    });
    try {
      for (const path of ['/unlisted', '/store', '/re/12']) {
        const answer = await send(`${url}${path}`);
        expect(answer.status).toBe(500);
        expectNothingOfMemgate(answer);
      }
      // finalhandler logs on a later turn than it answers.
      for (let wait = 0; wait < 50 && errors.length < 3; wait++) await sleep(20);
    } finally {
      consoleError.mockRestore();
    }
    expect(errors.join('\n')).toContain('unknown event "unlisted"');
    expect(errors.join('\n')).toContain('the route of GET /re/12 has no path to name an event by');
  });

  it("memgate down: the client's onError answers, as a 429 with Retry-After or an admitted request", async () => {
    const down = await closedPort();
    const deny = createClient({ url: down, timeoutMs: 300, onError: 'deny' });
    const allow = createClient({ url: down, timeoutMs: 300, onError: 'allow' });
    closers.push(
      () => deny.close(),
      () => allow.close(),
    );
    const app = express();
    app.get('/deny', memgateLimit({ client: deny, event: 'api' }), (_req, res) => res.send('ok'));
    app.get('/allow', memgateLimit({ client: allow, event: 'api' }), (_req, res) => res.send('ok'));
    const url = await listen(app);
    const denied = await send(`${url}/deny`);
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('1');
    expect(denied.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(denied.text)).toEqual({ allowed: false, limits: [], retryAfter: 1, degraded: true });
    expect((await send(`${url}/allow`)).status).toBe(200);
  });
});
