// Memcached faults with real processes and sockets: a check never hangs, never crashes the
// process, and is decided by its event's onStoreError rule until the server is back.
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import { DEFAULTS } from '../src/config/defaults.js';
import { buildApp } from '../src/http/app.js';
import type { Decision } from '../src/counting/decision.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { startMemcachedProcess, uniquePrefix } from './helpers/memcached.js';

const DEADLINE_MS = 200;
/**
 * What a check may take beyond the deadline. The property is "decided, not hung": the fake
 * servers never answer, so without a working deadline a check waits until the test times
 * out (20 s). A loaded 2-core CI machine took 740 ms with a 300 ms margin, so the margin is
 * wide: it still tells a deadline from none.
 */
const MARGIN_MS = 2000;

const policies = {
  events: {
    api: { limits: [{ limit: 1_000_000, window: '1m' }] },
    login: { onStoreError: 'deny', limits: [{ limit: 1_000_000, window: '1m' }] },
  },
};

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function limiterOn(servers: string, maxInFlight?: number): { limiter: Limiter; store: CounterStore } {
  const store = createMemcachedStore({
    servers,
    timeoutMs: DEADLINE_MS,
    ...(maxInFlight === undefined ? {} : { maxInFlight }),
  });
  cleanups.push(() => store.close());
  return { limiter: createLimiter({ policies, store, keyPrefix: uniquePrefix() }), store };
}

/** A TCP server that treats each connection as `onConnection` says; resolves with its `host:port`. */
async function fakeServer(onConnection: (socket: Socket) => void): Promise<string> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          resolve();
        });
      }),
  );
  const address = server.address();
  return `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

/** Runs checks and times each one. */
async function timedChecks(
  limiter: Limiter,
  count: number,
  event = 'api',
): Promise<{ decision: Decision; ms: number }[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const started = performance.now();
      const decision = await limiter.check({ event, feature: `client-${i % 5}` });
      return { decision, ms: performance.now() - started };
    }),
  );
}

describe('a Memcached node that fails', () => {
  it('that accepts connections and never answers: every check is decided by its rule at the deadline', async () => {
    const servers = await fakeServer(() => undefined);
    const { limiter, store } = limiterOn(servers);
    const api = await timedChecks(limiter, 20);
    expect(api.map((c) => c.decision)).toEqual(
      api.map(() => ({ allowed: true, limits: [], degraded: true, policyVersion: limiter.version })),
    );
    expect(Math.max(...api.map((c) => c.ms))).toBeLessThan(DEADLINE_MS + MARGIN_MS);
    const login = await timedChecks(limiter, 5, 'login');
    expect(login.map((c) => c.decision)).toEqual(
      login.map(() => ({ allowed: false, limits: [], retryAfter: 1, degraded: true, policyVersion: limiter.version })),
    );
    expect(await store.health()).toEqual([
      { server: servers, up: false, error: expect.stringMatching(/did not answer|timed out/) as string, state: 'down' },
    ]);
  });

  it('that closes each connection at its first byte: checks are decided by their rule within the deadline, again and again', async () => {
    const servers = await fakeServer((socket) => socket.once('data', () => socket.destroy()));
    const { limiter } = limiterOn(servers);
    for (let round = 0; round < 3; round++) {
      const checks = await timedChecks(limiter, 10);
      expect(checks.every((c) => c.decision.degraded === true && c.decision.allowed)).toBe(true);
      expect(Math.max(...checks.map((c) => c.ms))).toBeLessThan(DEADLINE_MS + MARGIN_MS);
    }
  });

  it('that hangs under more load than may wait on it: only the bound waits, the excess is shed at once with 503', async () => {
    const servers = await fakeServer(() => undefined);
    const { limiter, store } = limiterOn(servers, 20);
    const app = buildApp({ limiter, store, maxEventLoopDelayMs: 0 });
    cleanups.push(() => app.close());
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const response = await app.inject({ method: 'GET', url: '/check?event=api&feature=x' });
        return {
          status: response.statusCode,
          code: response.json<{ error?: { code: string } }>().error?.code,
          ms: performance.now() - started,
        };
      }),
    );
    const shed = answers.filter((a) => a.status === 503);
    // Exactly the bound waited for the deadline and was decided by the rule; the rest were refused.
    expect(answers.filter((a) => a.status === 200)).toHaveLength(20);
    expect(shed).toHaveLength(180);
    expect(shed.every((a) => a.code === 'overloaded')).toBe(true);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(DEADLINE_MS + MARGIN_MS);
  });

  it('known to be down: later checks are decided by their rule at once, and nothing more is written to it but one probe', async () => {
    let received = 0;
    const servers = await fakeServer((socket) => socket.on('data', (chunk: Buffer) => (received += chunk.length)));
    const { limiter, store } = limiterOn(servers, 20);
    const app = buildApp({ limiter, store, maxEventLoopDelayMs: 0 });
    cleanups.push(() => app.close());
    expect((await app.inject({ method: 'GET', url: '/check?event=api&feature=x' })).json()).toEqual({
      allowed: true,
      limits: [],
      degraded: true,
      policyVersion: limiter.version,
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = received;
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        app.inject({ method: 'GET', url: `/check?event=${i % 2 ? 'api' : 'login'}&feature=x` }),
      ),
    );
    expect(performance.now() - started).toBeLessThan(DEADLINE_MS);
    expect(answers.filter((a) => a.statusCode === 200).every((a) => a.json<Decision>().degraded)).toBe(true);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([
      ...Array<number>(100).fill(200),
      ...Array<number>(100).fill(429),
    ]);
    expect(received).toBe(before);
    expect((await store.health())[0]).toMatchObject({
      up: false,
      error: expect.stringMatching(/is down \(did not answer within 200 ms\)/) as string,
    });
  });

  it('killed under load and started again: checks degrade within the deadline, then count again by themselves', async () => {
    let memcached = await startMemcachedProcess();
    cleanups.push(() => memcached.stop());
    const { limiter, store } = limiterOn(memcached.servers);
    const results: { at: number; ms: number; degraded: boolean }[] = [];
    const start = performance.now();
    let running = true;
    const workers = Array.from({ length: 20 }, async (_, w) => {
      while (running) {
        const began = performance.now();
        const decision = await limiter.check({ event: 'api', feature: `client-${w}` });
        results.push({ at: began - start, ms: performance.now() - began, degraded: decision.degraded === true });
        // A check of a server known to be down is decided at once, without I/O: let timers run.
        if (decision.degraded) await new Promise(setImmediate);
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await memcached.stop();
    const killedAt = performance.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 700));
    memcached = await startMemcachedProcess({ port: memcached.port });
    const restartedAt = performance.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    running = false;
    await Promise.all(workers);

    expect(results.filter((r) => r.at < killedAt - 50).every((r) => !r.degraded)).toBe(true);
    expect(results.some((r) => r.degraded && r.at > killedAt && r.at < restartedAt)).toBe(true);
    // No check waited past its deadline, during the outage or after.
    // (reduce: checks decided at once while the node is down are too many to spread into Math.max)
    expect(results.reduce((most, r) => Math.max(most, r.ms), 0)).toBeLessThan(DEADLINE_MS + MARGIN_MS);
    // Back by itself: every check started well after the restart counted again.
    const after = results.filter((r) => r.at > restartedAt + 300);
    expect(after.length).toBeGreaterThan(20);
    expect(after.every((r) => !r.degraded)).toBe(true);
    expect((await store.health())[0]?.up).toBe(true);
  });
});

/**
 * Keeps the event loop busy for `ms` in 200 ms turns, as a saturated process does: every
 * sample of the lag detector is then about 200 ms late, whenever its period began.
 */
async function saturate(ms: number): Promise<void> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const turn = Math.min(until, performance.now() + 200);
    while (performance.now() < turn);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

describe('an overloaded process', () => {
  // Two whole sampling periods saturated, so one period is wholly late.
  const SATURATED_MS = 2 * DEFAULTS.eventLoopSampleMs + 300;

  it('sheds checks with 503 while its event loop lags, keeps /healthz answering, and recovers', async () => {
    const store = createEmbeddedStore();
    const app = buildApp({ limiter: createLimiter({ policies, store }), store, maxEventLoopDelayMs: 100 });
    cleanups.push(() => app.close());
    await app.ready();
    expect((await app.inject({ method: 'GET', url: '/check?event=api&feature=x' })).statusCode).toBe(200);
    await saturate(SATURATED_MS);
    const shed = await app.inject({ method: 'GET', url: '/check?event=api&feature=x' });
    expect(shed.statusCode).toBe(503);
    expect(shed.headers['retry-after']).toBe('1');
    expect(shed.json()).toMatchObject({ error: { code: 'overloaded' } });
    // Every decision route, not only GET /check: a posted check, a batch, a peek.
    const posted = await app.inject({ method: 'POST', url: '/check', payload: { event: 'api', feature: 'x' } });
    const batch = await app.inject({ method: 'POST', url: '/check/batch', payload: [{ event: 'api', feature: 'x' }] });
    const peek = await app.inject({ method: 'GET', url: '/peek?event=api&feature=x' });
    expect([posted.statusCode, batch.statusCode, peek.statusCode]).toEqual([503, 503, 503]);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    // A whole idle period later, the detector sees an idle loop again.
    await new Promise((resolve) => setTimeout(resolve, 2 * DEFAULTS.eventLoopSampleMs + 100));
    expect((await app.inject({ method: 'GET', url: '/check?event=api&feature=x' })).statusCode).toBe(200);
  });

  it('does not shed for the lag of its own start, and sheds once it has served two sampling periods', async () => {
    const store = createEmbeddedStore();
    const app = buildApp({ limiter: createLimiter({ policies, store }), store, maxEventLoopDelayMs: 100 });
    cleanups.push(() => app.close());
    await app.ready();
    // Work between the detector's start and listening (plugins, schemas, files on a busy host).
    await saturate(SATURATED_MS);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/check?event=api&feature=x`;
    expect((await fetch(url)).status).toBe(200);
    // Lag while serving is load: shed as before.
    await saturate(SATURATED_MS);
    const shed = await fetch(url);
    expect(shed.status).toBe(503);
    expect(((await shed.json()) as { error: { code: string } }).error.code).toBe('overloaded');
  });
});
