// One benchmark case as a server process: `server.ts CASE MEMCACHED_SERVERS`. It listens
// on a free loopback port, prints {"port": N} once ready, and answers
// GET /check?event=bench&feature=F with 200 (allowed) or 429 (denied).
import Fastify, { type FastifyInstance } from 'fastify';
import Memcached from 'memcached';
import memjs from 'memjs';
import pLimit from 'p-limit';
import { RateLimiterMemcache, RateLimiterRes } from 'rate-limiter-flexible';
import type { LimiterOptions } from '../../src/counting/limiter.js';
import type { MemcachedStoreOptions } from '../../src/store/memcached/memcached-store.js';
import { memgateModules } from './compiled.js';

const { createLimiter, buildApp, createMemcachedStore } = await memgateModules();

/** Limits high enough that every request is allowed. */
const HIGH_LIMIT = 1_000_000_000;

type Query = { Querystring: { feature?: string } };

/** A bare fastify app, the same HTTP stack memgate's own app uses. */
function bare(route: (feature: string) => Promise<boolean>): FastifyInstance {
  const app = Fastify({ logger: false });
  app.get<Query>('/check', async (request, reply) => {
    const allowed = await route(request.query.feature ?? '');
    return reply.code(allowed ? 200 : 429).send({ allowed });
  });
  return app;
}

/** memgate's own app; the options turn its optimizations off, one at a time, to measure each. */
const memgate = (servers: string, window: string, options: Partial<LimiterOptions & MemcachedStoreOptions> = {}) => {
  const store = createMemcachedStore({ ...options, servers });
  const limiter = createLimiter({
    ...options,
    policies: { events: { bench: { limits: [{ limit: HIGH_LIMIT, window }] } } },
    store,
    keyPrefix: `b${process.pid}`,
  });
  return buildApp({ limiter, store });
};

const CASES: Record<string, (servers: string) => FastifyInstance> = {
  /** The HTTP stack alone, answering without any work: the most any case could reach. */
  ceiling: () => bare(() => Promise.resolve(true)),
  /** The cheapest networked limiter there is: one increment per request, nothing else. */
  floor(servers) {
    const client = memjs.Client.create(servers, { logger: { log: () => undefined } });
    return bare(async (feature) => {
      await client.increment(`floor:${feature}`, 1, { initial: 1, expires: 60 });
      return true;
    });
  },
  /** rate-limiter-flexible's Memcached limiter, the peer memgate is compared with. */
  peer(servers) {
    const limiter = new RateLimiterMemcache({
      storeClient: new Memcached(servers),
      points: HIGH_LIMIT,
      duration: 60,
      keyPrefix: `peer${process.pid}`,
    });
    return bare(async (feature) => {
      try {
        await limiter.consume(feature);
        return true;
      } catch (error) {
        if (error instanceof RateLimiterRes) return false;
        throw error;
      }
    });
  },
  /** The design read literally: increment this second, then 59 separate gets of the others. */
  naive(servers) {
    const client = memjs.Client.create(servers, { logger: { log: () => undefined } });
    const parallel = pLimit(16);
    return bare(async (feature) => {
      const second = Math.floor(Date.now() / 1000);
      const current = await client.increment(`naive:${feature}:${second}`, 1, { initial: 1, expires: 120 });
      const previous = await Promise.all(
        Array.from({ length: 59 }, (_, i) =>
          parallel(async () => Number((await client.get(`naive:${feature}:${second - 1 - i}`)).value ?? 0)),
        ),
      );
      return previous.reduce((sum, n) => sum + n, current.value ?? 0) <= HIGH_LIMIT;
    });
  },
  'memgate-60s': (servers) => memgate(servers, '60s'),
  'memgate-1d': (servers) => memgate(servers, '1d'),
  // Each lever off in turn.
  'memgate-60s-uncached': (servers) => memgate(servers, '60s', { cacheBytes: 0 }),
  'memgate-60s-uncorked': (servers) => memgate(servers, '60s', { coalesceWrites: false }),
  'memgate-1d-uncached': (servers) => memgate(servers, '1d', { cacheBytes: 0 }),
};

const [name, servers] = process.argv.slice(2);
const make = name === undefined ? undefined : CASES[name];
if (!make || !servers) {
  process.stderr.write(`usage: server.ts ${Object.keys(CASES).join('|')} HOST:PORT\n`);
  process.exit(2);
}
const app = make(servers);
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
process.once('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
