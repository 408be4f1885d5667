// A healthy memcached and a memgate that is itself the bottleneck: its event-loop turns run
// longer than the store's deadline, so replies wait unread in the socket. That is memgate's
// lateness, not the store's, and must never turn checks into unchecked decisions.
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { createLimiter } from '../src/counting/limiter.js';
import type { Decision } from '../src/counting/decision.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { oneFeature, runLoad } from '../scripts/lib/run-load.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { startServiceProcess } from './helpers/service-process.js';

const memcached = useMemcached();
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

/** Keeps this thread busy, as a long event-loop turn does. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** A limiter of 50 a minute on a memcached store of its own whose deadline is 30 ms. */
function limiterWithDeadline() {
  const store = createMemcachedStore({ servers: memcached().servers, timeoutMs: 30 });
  closers.push(() => store.close());
  const limiter = createLimiter({
    policies: { events: { api: { limits: [{ limit: 50, window: '1m' }] } } },
    store,
    keyPrefix: uniquePrefix(),
  });
  return { store, limiter };
}

describe('event-loop turns longer than the deadline', () => {
  it('decide every check on the store’s answers, which wait unread in the socket', async () => {
    const { limiter } = limiterWithDeadline();
    for (let round = 0; round < 5; round++) {
      const checks: Promise<Decision>[] = Array.from({ length: 40 }, (_, i) =>
        limiter.check({ event: 'api', feature: `f${i % 4}-${round}` }),
      );
      // The batches leave in this turn's check phase; then the loop is held ten deadlines long.
      setImmediate(() => {
        busy(300);
      });
      const decisions = await Promise.all(checks);
      expect(decisions.filter((d) => d.degraded)).toEqual([]);
      expect(decisions.every((d) => d.allowed)).toBe(true);
    }
  });

  it('connect to memcached while the loop is held past the connect deadline', async () => {
    // A deadline of 30 ms gives a connection a second to be made (see CONNECT_DEADLINES).
    const { store, limiter } = limiterWithDeadline();
    const decision = limiter.check({ event: 'api', feature: 'first-of-all' });
    // The connection starts in this turn and is made at once; the loop is held a second and a
    // half before it can hear so, past the connect timer.
    setImmediate(() => {
      busy(1500);
    });
    expect(await decision).toMatchObject({ allowed: true });
    expect((await decision).degraded).toBeUndefined();
    expect((await store.health()).map(({ up }) => up)).toEqual([true]);
  });

  it('decide every check on the store’s answers when the poll right after they leave runs past the deadline', async () => {
    // A socket of the test's own whose every byte holds the loop: its data is read in a poll
    // phase, and memcached answers while that phase runs, after it has looked at the sockets.
    const holder = createServer((socket) =>
      socket.on('data', () => {
        busy(300);
      }),
    );
    holder.listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const poke = connect((holder.address() as AddressInfo).port, '127.0.0.1');
    await once(poke, 'connect');
    closers.push(async () => {
      poke.destroy();
      holder.close();
      await once(holder, 'close');
    });
    const { limiter } = limiterWithDeadline();
    for (let round = 0; round < 5; round++) {
      // A check that sets the connection's deadline timer going...
      await limiter.check({ event: 'api', feature: `first-${round}` });
      const decisions = await new Promise<Decision[]>((resolve) => {
        // ...and a timer due with it (the busy wait below makes both due), which sends checks in
        // the same turn the deadline timer fired. They leave in the check phase; the poke's byte
        // makes the next poll phase hold the loop ten deadlines long before their answers are read.
        setTimeout(() => {
          const checks = Array.from({ length: 40 }, (_, i) =>
            limiter.check({ event: 'api', feature: `f${i % 4}-${round}` }),
          );
          setImmediate(() => poke.write('x'));
          resolve(Promise.all(checks));
        }, 30);
        busy(35);
      });
      expect(decisions.filter((d) => d.degraded)).toEqual([]);
      expect(decisions.every((d) => d.allowed)).toBe(true);
    }
  });
});

describe('the service at up to 2,000 connections on a healthy memcached', () => {
  it(
    'admits at most the limit, answers the rest 429 or 503, and decides nothing unchecked',
    { timeout: 120_000 },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'memgate-overload-'));
      const config = join(dir, 'policies.yaml');
      await writeFile(config, 'events:\n  api:\n    limits:\n      - { limit: 100, window: 1m }\n');
      // A deadline of 100 ms: turns under this load run longer than that.
      const service = await startServiceProcess({
        MEMCACHED_SERVERS: memcached().servers,
        MEMGATE_CONFIG: config,
        MEMCACHED_TIMEOUT_MS: '100',
        // Shedding as the service does by default: past the store's deadline, a lagging loop's
        // checks are 503s, where the test helper turns shedding off for tests of anything else.
        MEMGATE_MAX_EVENT_LOOP_DELAY_MS: String(DEFAULTS.maxEventLoopDelayMs),
      });
      closers.push(() => service.stop());
      // Two seconds at the lighter loads, three where turns outlast the deadline and the queue
      // must build up first (the old code admitted 1,545 of 100 at 2,000).
      for (const [connections, duration] of [
        [50, 2],
        [200, 2],
        [1000, 3],
        [2000, 3],
      ] as const) {
        const summary = await runLoad({
          url: new URL(service.url),
          event: 'api',
          connections,
          duration,
          nextFeature: oneFeature(`sweep-${connections}`),
        });
        const { statuses } = summary;
        const unexpected = Object.keys(statuses).filter((status) => !['200', '429', '503'].includes(status));
        expect(unexpected, `connections ${connections}`).toEqual([]);
        expect(summary.allowed, `connections ${connections}`).toBeLessThanOrEqual(100);
        expect(summary.requests).toBeGreaterThan(0);
      }
      const metrics = await (await fetch(`${service.url}/metrics`)).text();
      expect(metrics).not.toMatch(/outcome="degraded_allowed"/);
      expect(metrics).toMatch(/memgate_decisions_total\{event="api",kind="check",outcome="allowed"\} [1-9]/);
    },
  );
});
