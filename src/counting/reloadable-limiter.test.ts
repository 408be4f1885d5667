// One policy snapshot per request: a reload that lands between the store calls of one request
// (a reservation's decision and its record, a settle's claim and its recount, checks together
// and the reservation among them, a lease's take and its record) leaves the whole request under
// the version it started with. The next request sees the new one.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { CounterStore } from '../store/counter-store.js';
import { createEmbeddedStore } from '../store/embedded-store.js';
import { createLimiter } from './limiter.js';
import { reloadable } from './reloadable-limiter.js';

const policies = (limit: number, extra: object = {}) => ({
  events: {
    llm: {
      limits: [{ limit, window: '1m' }],
      lease: { maxUnits: 10, life: '5s' },
      reservations: { life: '30s' },
      ...extra,
    },
    api: { limits: [{ limit, window: '1m' }] },
  },
});

/**
 * A reloadable limiter on `v1` whose store puts `v2` in force right after the `at`-th store call
 * that follows `arm()`: between two awaits of whatever request is under way.
 */
function reloadingAt(at: number) {
  const clock = { ms: Date.UTC(2026, 10, 28, 12, 0, 0) };
  const now = () => clock.ms;
  const store = createEmbeddedStore({ now });
  let calls = -1;
  // Set once the limiters exist: the store is theirs before they are made.
  const hook: { reload: () => void } = { reload: () => undefined };
  const after = async <T>(answer: Promise<T>): Promise<T> => {
    const value = await answer;
    if (calls >= 0 && ++calls === at) hook.reload();
    return value;
  };
  const watched: CounterStore = {
    ...store,
    incrementAndRead: (increments, reads, options) => after(store.incrementAndRead(increments, reads, options)),
    decrement: (decrements) => after(store.decrement(decrements)),
    readVersioned: (key) => after(store.readVersioned(key)),
    swap: (key, value, ttl, expected) => after(store.swap(key, value, ttl, expected)),
  };
  const v1 = createLimiter({ policies: policies(5), store: watched, now, version: 'v1' });
  const v2 = createLimiter({
    policies: policies(500, { reservations: undefined }),
    store: watched,
    now,
    version: 'v2',
  });
  const limiter = reloadable(v1);
  hook.reload = () => {
    limiter.replace(v2);
  };
  const arm = () => {
    calls = 0;
    limiter.replace(v1);
  };
  return { limiter, arm, v1, v2 };
}

describe('one policy snapshot per request', () => {
  it('decides a reservation and writes its record under the version it started with', async () => {
    const { limiter, arm } = reloadingAt(1);
    arm();
    const reserved = await limiter.check({ event: 'llm', feature: 'a', reserve: 3 });
    expect(reserved).toMatchObject({ allowed: true, policyVersion: 'v1', limits: [{ limit: 5, remaining: 2 }] });
    expect(reserved.reservation?.units).toBe(3);
    // The reload landed: the next request is decided under v2.
    expect(limiter.version).toBe('v2');
    expect(await limiter.peek({ event: 'llm', feature: 'a' })).toMatchObject({
      policyVersion: 'v2',
      limits: [{ limit: 500 }],
    });
  });

  it('settles under the version it started with, though the next one takes no reservations', async () => {
    const { limiter, arm } = reloadingAt(1);
    const made = await limiter.check({ event: 'llm', feature: 'b', reserve: 4 });
    arm();
    // The claim is the settle's first store call; the reload lands before its recount.
    expect(await limiter.settle({ event: 'llm', feature: 'b', id: made.reservation?.id ?? '', cost: 1 })).toEqual({
      reserved: 4,
      cost: 1,
      counted: -3,
    });
    await expect(limiter.settle({ event: 'llm', feature: 'b', id: 'x', cost: 1 })).rejects.toMatchObject({
      code: 'reserve_off',
    });
  });

  it('decides checks together, the reservation among them included, under one version', async () => {
    const { limiter, arm } = reloadingAt(1);
    arm();
    const together = await limiter.checkTogether([
      { event: 'api', feature: 'c' },
      { event: 'llm', feature: 'c', cost: 2, reserve: true },
    ]);
    expect(together.allowed).toBe(true);
    expect(together.checks.map((check) => check.policyVersion)).toEqual(['v1', 'v1']);
    expect(together.checks[1]).toMatchObject({ limits: [{ limit: 5, remaining: 3 }], reservation: { units: 2 } });
  });

  it('takes a lease and writes its record under one version', async () => {
    const { limiter, arm } = reloadingAt(1);
    arm();
    const lease = await limiter.lease({ event: 'llm', feature: 'd', units: 8 });
    expect(lease).toMatchObject({ allowed: true, policyVersion: 'v1', lease: { units: 5 } });
  });

  it('is the limiter itself when not reloadable, and the snapshot in force when it is', () => {
    const { limiter, v1, v2 } = reloadingAt(1);
    expect(v1.current()).toBe(v1);
    limiter.replace(v2);
    expect(limiter.current()).toBe(v2);
    expect(limiter.current().current()).toBe(v2);
  });

  it('names a version made from the policies when none is given, the same for the same policies', () => {
    const store = createEmbeddedStore();
    const a = createLimiter({ policies: policies(5), store });
    const b = createLimiter({ policies: policies(5), store });
    const c = createLimiter({ policies: policies(6), store });
    expect(a.version).toMatch(/^[0-9a-f]{12}$/);
    expect(b.version).toBe(a.version);
    expect(c.version).not.toBe(a.version);
  });
});

describe('a chain of reloads', () => {
  it('keeps no limiter it replaced: each is collected once the next is in force', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const store = createEmbeddedStore();
    const limiter = reloadable(createLimiter({ policies: policies(1), store }));
    const replaced: WeakRef<object>[] = [];
    const reload = (limit: number) => {
      const before = limiter.current();
      replaced.push(new WeakRef(before));
      limiter.replace(createLimiter({ policies: policies(limit), store, replacing: before }));
    };
    for (let limit = 2; limit <= 5; limit++) {
      reload(limit);
      await limiter.check({ event: 'llm', feature: 'a' });
    }
    // WeakRefs let go of their targets only after the job that made them.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(replaced.map((ref) => ref.deref() === undefined)).toEqual([true, true, true, true]);
  });
});
