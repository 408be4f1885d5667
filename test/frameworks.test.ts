// memgate/express-rate-limit, memgate/fastify-rate-limit, memgate/express and memgate/fastify
// in real express and fastify apps, over real HTTP, against a running memgate process on a
// real memcached.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import rateLimitPlugin from '@fastify/rate-limit';
import express from 'express';
import { MemoryStore, rateLimit, type Options as ErlOptions } from 'express-rate-limit';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createClient, type MemgateClient } from '../src/client/index.js';
import type { Decision } from '../src/counting/decision.js';
import { memgateLimit } from '../src/integrations/express.js';
import { MemgateStore } from '../src/integrations/express-rate-limit.js';
import { memgatePlugin } from '../src/integrations/fastify.js';
import { memgateStore } from '../src/integrations/fastify-rate-limit.js';
import { eventFromRoute } from '../src/integrations/route-event.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { closedPortUrl, peekAt, send, serveExpress, serveFastify } from './helpers/framework-apps.js';
import { loggedFiles, moduleLog, packagesOf } from './helpers/module-log.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const TOKEN = 'frameworks-admin-token-0123456789abcdef';
const POLICIES = `events:
  login:
    limits:
      - { limit: 3, window: 1m }
  signup:
    limits:
      - { limit: 3, window: 1m }
  burst:
    limits:
      - { limit: 4, window: 4s }
  two:
    limits:
      - { limit: 3, window: 1m }
      - { limit: 5, window: 1h }
`;

const memcached = useMemcached();
let memgate: ServiceProcess;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-frameworks-'));
  const config = join(dir, 'policies.yaml');
  await writeFile(config, POLICIES);
  memgate = await startServiceProcess({
    MEMCACHED_SERVERS: memcached().servers,
    MEMGATE_CONFIG: config,
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

let features = 0;
/** A feature no other test uses. */
const newFeature = () => `user-${String(++features)}-${uniquePrefix()}`;

function client(options: { adminToken?: string; onError?: 'allow' | 'deny'; url?: string } = {}): MemgateClient {
  const made = createClient({ url: memgate.url, timeoutMs: 1000, ...options });
  closers.push(() => made.close());
  return made;
}

const listen = (app: express.Express) => serveExpress(app, closers);
const listenFastify = (app: FastifyInstance) => serveFastify(app, closers);
const peek = (event: string, feature: string) => peekAt(memgate.url, event, feature);
const get = (url: string, user: string, method: 'GET' | 'POST' = 'GET') =>
  send(url, { method, headers: { 'x-user': user } });
const closedPort = closedPortUrl;

const remainingAt = async (event: string, feature: string) => (await peek(event, feature)).limits[0]?.remaining;

/** Polls until memgate shows `remaining` (refunds follow a response asynchronously). */
async function untilRemaining(event: string, feature: string, remaining: number): Promise<void> {
  const deadline = Date.now() + 3000;
  while ((await remainingAt(event, feature)) !== remaining) {
    if (Date.now() > deadline) throw new Error(`${event}/${feature} never showed remaining ${remaining}`);
    await sleep(20);
  }
}

/** An express app limited by express-rate-limit with `store`, answering `status` on /. */
function erlApp(store: ErlOptions['store'], options: Partial<ErlOptions> = {}, status = 200): express.Express {
  const app = express();
  app.use(
    rateLimit({
      windowMs: 60_000,
      limit: 3,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      keyGenerator: (req) => req.get('x-user') ?? '',
      store,
      ...options,
    }),
  );
  app.get('/', (_req, res) => {
    res.status(status).send('ok');
  });
  return app;
}

describe('memgate/express-rate-limit', () => {
  it("denies exactly when memgate does, with express-rate-limit's own headers and 429", async () => {
    const url = await listen(erlApp(new MemgateStore({ client: client(), event: 'login' })));
    const user = newFeature();
    for (let i = 0; i < 3; i++) {
      const answer = await get(url, user);
      const memgateSays = (await peek('login', user)).limits[0];
      expect(answer.status).toBe(200);
      expect(answer.headers['ratelimit-policy']).toBe(`${String(memgateSays?.limit)};w=${String(memgateSays?.window)}`);
      const [, limit, remaining, reset] =
        /^limit=(\d+), remaining=(\d+), reset=(\d+)$/.exec(answer.headers.ratelimit ?? '') ?? [];
      expect(Number(limit)).toBe(memgateSays?.limit);
      expect(Number(remaining)).toBe(memgateSays?.remaining);
      expect(Math.abs(Number(reset) - (memgateSays?.resetSeconds ?? NaN))).toBeLessThanOrEqual(1);
    }
    const denied = await get(url, user);
    const memgateSays = await peek('login', user);
    expect(memgateSays.allowed).toBe(false);
    expect(denied.status).toBe(429);
    expect(denied.text).toBe('Too many requests, please try again later.');
    expect(denied.headers.ratelimit).toMatch(/^limit=3, remaining=0, reset=\d+$/);
    expect(Math.abs(Number(denied.headers['retry-after']) - (memgateSays.retryAfter ?? NaN))).toBeLessThanOrEqual(1);
  });

  it('lets memgate decide when express-rate-limit says another limit, and warns once', async () => {
    const warnings: string[] = [];
    const store = new MemgateStore({ client: client(), event: 'login', warn: (m) => warnings.push(m) });
    const url = await listen(erlApp(store, { limit: 10 }));
    const user = newFeature();
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await get(url, user)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('limit 10');
    expect(warnings[0]).toContain('"login-1m" (3 per 60 s)');
  });

  it('shares one limit between two instances of the app', async () => {
    const first = await listen(erlApp(new MemgateStore({ client: client(), event: 'login' })));
    const second = await listen(erlApp(new MemgateStore({ url: memgate.url, event: 'login' })));
    const user = newFeature();
    const statuses = [];
    for (const url of [first, second, first, second, first]) statuses.push((await get(url, user)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it('slides: a burst across a fixed window boundary is admitted by MemoryStore, not by memgate', async () => {
    const options = { windowMs: 4000, limit: 4 };
    const fixed = await listen(erlApp(new MemoryStore(), options));
    const sliding = await listen(erlApp(new MemgateStore({ client: client(), event: 'burst' }), options));
    const user = newFeature();
    const allowedOf = async (count: number) => {
      const admitted = { fixed: 0, sliding: 0 };
      for (let i = 0; i < count; i++) {
        if ((await get(fixed, user)).status === 200) admitted.fixed++;
        if ((await get(sliding, user)).status === 200) admitted.sliding++;
      }
      return admitted;
    };
    // One request opens MemoryStore's window; three more near its end fill both to 4.
    expect(await allowedOf(1)).toEqual({ fixed: 1, sliding: 1 });
    await sleep(3000);
    expect(await allowedOf(3)).toEqual({ fixed: 3, sliding: 3 });
    // Past the fixed window's end, not past those three: the fixed window admits 4 more
    // (7 within ~1.3 s), the sliding window only the one the first request freed.
    await sleep(1300);
    expect(await allowedOf(4)).toEqual({ fixed: 4, sliding: 1 });
  });

  it('gives a failed request back with skipFailedRequests, and nothing back for a 429', async () => {
    const failing = await listen(
      erlApp(
        new MemgateStore({ client: client({ adminToken: TOKEN }), event: 'signup' }),
        { skipFailedRequests: true },
        500,
      ),
    );
    const user = newFeature();
    for (let i = 0; i < 5; i++) {
      expect((await get(failing, user)).status).toBe(500);
      await untilRemaining('signup', user, 3);
    }
    // Counted and kept: three successes (on an app sharing the limit), then a 429 that
    // express-rate-limit also "decrements": memgate counted nothing for it, so nothing comes back.
    const succeeding = await listen(
      erlApp(new MemgateStore({ client: client({ adminToken: TOKEN }), event: 'signup' }), {
        skipFailedRequests: true,
      }),
    );
    for (let i = 0; i < 3; i++) expect((await get(succeeding, user)).status).toBe(200);
    expect((await get(succeeding, user)).status).toBe(429);
    await sleep(200);
    expect(await remainingAt('signup', user)).toBe(0);
    expect((await get(succeeding, user)).status).toBe(429);
  });

  it('resetKey forgets the key in memgate; without adminToken it says what is missing', async () => {
    const store = new MemgateStore({ client: client({ adminToken: TOKEN }), event: 'login' });
    const url = await listen(erlApp(store));
    const user = newFeature();
    for (let i = 0; i < 3; i++) await get(url, user);
    expect((await get(url, user)).status).toBe(429);
    await store.resetKey(user);
    expect(await remainingAt('login', user)).toBe(3);
    expect((await get(url, user)).status).toBe(200);

    const tokenless = new MemgateStore({ client: client(), event: 'login' });
    await expect(tokenless.resetKey(user)).rejects.toThrow(
      /resetKey calls memgate's admin API, so the client needs adminToken/,
    );
    const logged: unknown[] = [];
    const logger = { error: (error: unknown) => logged.push(error), warn: () => undefined };
    const fromUrl = new MemgateStore({ url: memgate.url, event: 'login' });
    closers.push(() => fromUrl.shutdown());
    erlApp(fromUrl, { skipSuccessfulRequests: true, logger });
    expect(String(logged[0])).toMatch(
      /decrement calls memgate's admin API.*skipFailedRequests and skipSuccessfulRequests/,
    );
  });

  it("while memgate is down, the client's onError decides; a store error goes to passOnStoreError", async () => {
    const down = await closedPort();
    const user = newFeature();
    const allowing = await listen(
      erlApp(new MemgateStore({ client: client({ url: down, onError: 'allow' }), event: 'login' })),
    );
    const denying = await listen(
      erlApp(new MemgateStore({ client: client({ url: down, onError: 'deny' }), event: 'login' })),
    );
    for (let i = 0; i < 5; i++) expect((await get(allowing, user)).status).toBe(200);
    const denied = await get(denying, user);
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('1');

    // An event memgate does not know is the application's bug: the client rejects, and
    // express-rate-limit does what passOnStoreError says.
    const logger = { error: () => undefined, warn: () => undefined };
    const strict = await listen(erlApp(new MemgateStore({ client: client(), event: 'no-such-event' }), { logger }));
    const lenient = await listen(
      erlApp(new MemgateStore({ client: client(), event: 'no-such-event' }), { passOnStoreError: true, logger }),
    );
    expect((await get(strict, user)).status).toBe(500);
    expect((await get(lenient, user)).status).toBe(200);
  });
});

async function fastifyRateLimited(
  store: ReturnType<typeof memgateStore>,
  options: { skipOnError?: boolean } = {},
): Promise<string> {
  const app = Fastify();
  await app.register(rateLimitPlugin, {
    max: 3,
    timeWindow: 60_000,
    keyGenerator: (req) => String(req.headers['x-user']),
    store,
    ...options,
  });
  app.get('/', () => 'ok');
  app.get('/signup', { config: { rateLimit: { max: 3, timeWindow: 60_000, memgateEvent: 'signup' } } }, () => 'ok');
  return listenFastify(app);
}

describe('memgate/fastify-rate-limit', () => {
  it("denies exactly when memgate does, with @fastify/rate-limit's own headers and 429", async () => {
    const url = await fastifyRateLimited(memgateStore({ client: client(), event: 'login' }));
    const user = newFeature();
    for (let i = 0; i < 3; i++) {
      const answer = await get(url, user);
      const memgateSays = (await peek('login', user)).limits[0];
      expect(answer.status).toBe(200);
      expect(answer.headers['x-ratelimit-limit']).toBe(String(memgateSays?.limit));
      expect(answer.headers['x-ratelimit-remaining']).toBe(String(memgateSays?.remaining));
      expect(
        Math.abs(Number(answer.headers['x-ratelimit-reset']) - (memgateSays?.resetSeconds ?? NaN)),
      ).toBeLessThanOrEqual(1);
    }
    const denied = await get(url, user);
    const memgateSays = await peek('login', user);
    expect(denied.status).toBe(429);
    const body = JSON.parse(denied.text) as { statusCode: number; error: string; message: string };
    expect(body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(body.message).toMatch(/^Rate limit exceeded, retry in /);
    expect(denied.headers['x-ratelimit-remaining']).toBe('0');
    expect(Math.abs(Number(denied.headers['retry-after']) - (memgateSays.retryAfter ?? NaN))).toBeLessThanOrEqual(1);
  });

  it("checks a route's memgateEvent through child(), and shares limits between instances", async () => {
    const first = await fastifyRateLimited(memgateStore({ client: client(), event: 'login' }));
    const second = await fastifyRateLimited(memgateStore({ url: memgate.url, event: 'login' }));
    const user = newFeature();
    const statuses = [];
    for (const url of [first, second, first, second]) statuses.push((await get(`${url}/signup`, user)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(await remainingAt('signup', user)).toBe(0);
    expect(await remainingAt('login', user)).toBe(3);
  });

  it("warns once when max differs from memgate's policy, and memgate still decides", async () => {
    const warnings: string[] = [];
    const app = Fastify();
    await app.register(rateLimitPlugin, {
      max: 7,
      timeWindow: 60_000,
      keyGenerator: (req) => String(req.headers['x-user']),
      store: memgateStore({ client: client(), event: 'login', warn: (m) => warnings.push(m) }),
    });
    app.get('/', () => 'ok');
    const url = await listenFastify(app);
    const user = newFeature();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(url, user)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('max 7');
  });

  it("while memgate is down, the client's onError decides; a store error goes to skipOnError", async () => {
    const down = await closedPort();
    const user = newFeature();
    const denying = await fastifyRateLimited(
      memgateStore({ client: client({ url: down, onError: 'deny' }), event: 'login' }),
    );
    expect((await get(denying, user)).status).toBe(429);
    const strict = await fastifyRateLimited(memgateStore({ client: client(), event: 'no-such-event' }));
    const lenient = await fastifyRateLimited(memgateStore({ client: client(), event: 'no-such-event' }), {
      skipOnError: true,
    });
    expect((await get(strict, user)).status).toBe(500);
    expect((await get(lenient, user)).status).toBe(200);
  });
});

describe('memgate/express', () => {
  it("answers memgate's headers and 429 decision; the event comes from the route, the feature from a function", async () => {
    const app = express();
    const limit = memgateLimit({ client: client(), feature: (req) => req.get('x-user') ?? '' });
    app.post('/login', limit, (_req, res) => {
      res.send('ok');
    });
    app.post(
      '/two',
      memgateLimit({ client: client(), feature: (req) => req.get('x-user') ?? '', cost: () => 2 }),
      (_req, res) => {
        res.send('ok');
      },
    );
    app.use('/anything', memgateLimit({ client: client() }), (_req, res) => {
      res.send('ok');
    });
    const url = await listen(app);
    const user = newFeature();
    for (let i = 0; i < 3; i++) {
      const answer = await get(`${url}/login`, user, 'POST');
      expect(answer.status).toBe(200);
      expect(answer.headers['ratelimit-policy']).toBe('"login-1m";q=3;w=60');
      expect(answer.headers.ratelimit).toMatch(new RegExp(`^"login-1m";r=${String(2 - i)};t=(59|60)$`));
    }
    const denied = await get(`${url}/login`, user, 'POST');
    expect(denied.status).toBe(429);
    const body = JSON.parse(denied.text) as Decision;
    expect(body).toMatchObject({ allowed: false, limits: [{ name: 'login-1m', limit: 3, remaining: 0 }] });
    expect(body.retryAfter).toBe(Number(denied.headers['retry-after']));
    expect(Object.keys(body).sort()).toEqual(['allowed', 'limits', 'retryAfter']);

    const twice = await get(`${url}/two`, user, 'POST');
    expect(twice.headers.ratelimit).toMatch(/^"two-1m";r=1;/);
    expect((await get(`${url}/anything`, user)).status).toBe(500);
  });
});

describe('memgate/fastify', () => {
  it("answers memgate's headers and 429 decision; the event comes from the route or its config", async () => {
    const app = Fastify();
    await app.register(memgatePlugin, { client: client(), feature: (req) => String(req.headers['x-user']) });
    app.post('/login', () => 'ok');
    app.post('/join', { config: { memgate: { event: 'signup' } } }, () => 'ok');
    app.get('/free', { config: { memgate: false } }, () => 'ok');
    const url = await listenFastify(app);
    const user = newFeature();
    for (let i = 0; i < 3; i++) {
      const answer = await get(`${url}/login`, user, 'POST');
      expect(answer.status).toBe(200);
      expect(answer.headers['ratelimit-policy']).toBe('"login-1m";q=3;w=60');
    }
    const denied = await get(`${url}/login`, user, 'POST');
    expect(denied.status).toBe(429);
    const body = JSON.parse(denied.text) as Decision;
    expect(body).toMatchObject({ allowed: false, limits: [{ name: 'login-1m', remaining: 0 }] });
    expect(body.retryAfter).toBe(Number(denied.headers['retry-after']));

    expect((await get(`${url}/join`, user, 'POST')).headers.ratelimit).toMatch(/^"signup-1m";r=2;/);
    expect(await remainingAt('signup', user)).toBe(2);
    const free = await get(`${url}/free`, user);
    expect(free.status).toBe(200);
    expect(free.headers.ratelimit).toBeUndefined();
    expect((await get(`${url}/nowhere`, user)).status).toBe(404);
  });
});

describe('the integrations', () => {
  it('name events from route paths as memgate event names', () => {
    expect(['/login', '/api/v1/shorten', '/users/:id', '/', '/a b/c~d'].map(eventFromRoute)).toEqual([
      'login',
      'api.v1.shorten',
      'users.id',
      'root',
      'a.b.c.d',
    ]);
  });

  it('load neither memjs nor fastify, and each framework only its own', async () => {
    const modules = await moduleLog();
    onTestFinished(() => modules.remove());
    const loaded = async (module: string) => {
      const log = await modules.log(module);
      // ES modules through the hook; CommonJS ones (express, memjs, fastify are) from require.cache.
      const script = `import { createRequire } from 'node:module';
await import(${JSON.stringify(new URL(`../src/integrations/${module}.ts`, import.meta.url).href)});
console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));`;
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--import', modules.register, '--input-type=module', '-e', script],
        {
          env: { ...process.env, ...log.env },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const [code] = (await once(child, 'close')) as [number];
      expect(code, module).toBe(0);
      const files = [...(await loggedFiles(log.path)), ...(JSON.parse(out) as string[])];
      return { files, packages: packagesOf(files) };
    };
    for (const module of ['express-rate-limit', 'fastify-rate-limit', 'express', 'fastify']) {
      const { files, packages } = await loaded(module);
      expect(
        files.some((file) => file.includes(`/src/integrations/${module}.ts`)),
        module,
      ).toBe(true);
      expect(
        [...packages].filter((name) => /^(memjs|fastify|express|express-rate-limit|@fastify\/.*)$/.test(name)),
        module,
      ).toEqual([]);
    }
  });
});
