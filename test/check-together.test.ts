// Limiter.checkTogether against a real Memcached: several checks decided as one request, by two
// instances sharing the counters at once. Whatever the requests, no counter admits more than its
// limit, the store holds exactly what allowed requests counted, and a refused request counts nothing.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter, type TogetherCheck } from '../src/counting/limiter.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached();
const LIMITS = { fixed: 7, sliding: 3 } as const;
const policies = {
  events: {
    fixed: { algorithm: 'fixed', limits: [{ limit: LIMITS.fixed, window: '1h' }] },
    sliding: { limits: [{ limit: LIMITS.sliding, window: '1h', granularity: '1m' }] },
  },
};
// One moment for every instance: the fixed hour starts afresh at the hour's edge, and a run that
// crossed it would find the store holding none of what the requests before it had counted.
const AT_MS = Math.floor(Date.now() / 3_600_000) * 3_600_000 + 1_800_000;
const now = () => AT_MS;

let store: CounterStore;
let keyPrefix: string;
let instances: [Limiter, Limiter];
beforeAll(() => {
  store = createMemcachedStore({ servers: memcached().servers, timeoutMs: 5000 });
  keyPrefix = uniquePrefix();
  instances = [createLimiter({ policies, store, keyPrefix, now }), createLimiter({ policies, store, keyPrefix, now })];
});
afterAll(async () => {
  await store.close();
});

/** What the store holds for a counter, read by an instance with no memory of it. */
async function remaining(event: keyof typeof LIMITS, feature: string): Promise<number | undefined> {
  const fresh = createLimiter({ policies, store, keyPrefix, now });
  return (await fresh.peek({ event, feature, cost: 1 })).limits[0]?.remaining;
}

describe('checkTogether', () => {
  it('counts all of a request or none of it, never past a limit, over two instances at once (fast-check)', async () => {
    const check = fc.record({
      event: fc.constantFrom<keyof typeof LIMITS>('fixed', 'sliding'),
      who: fc.integer({ min: 0, max: 1 }),
      cost: fc.integer({ min: 1, max: 4 }),
      peek: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      enforced: fc.integer({ min: 0, max: 4 }).map((n) => n > 0),
    });
    const request = fc.record({
      instance: fc.integer({ min: 0, max: 1 }),
      checks: fc.array(check, { minLength: 1, maxLength: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 30 }), async (requests) => {
        const features = [`f${uniquePrefix()}`, `f${uniquePrefix()}`];
        const asked = requests.map(({ instance, checks }) => ({
          instance,
          checks: checks.map(
            ({ event, who, cost, peek, enforced }): TogetherCheck & { event: keyof typeof LIMITS } => ({
              event,
              feature: features[who] ?? '',
              cost,
              peek,
              enforced,
            }),
          ),
        }));
        const answers = await Promise.all(
          asked.map(({ instance, checks }) => instances[instance as 0 | 1].checkTogether(checks)),
        );
        const admitted = new Map<string, number>();
        answers.forEach((answer, r) => {
          const checks = asked[r]?.checks ?? [];
          expect(answer.checks).toHaveLength(checks.length);
          // Allowed exactly when every enforced check is.
          expect(answer.allowed).toBe(
            checks.every((c, i) => c.enforced === false || answer.checks[i]?.allowed === true),
          );
          if (!answer.allowed) {
            // A denial that time can lift says when; a cost beyond the limit never passes.
            const canPass = checks.some(
              (c, i) => c.enforced !== false && !answer.checks[i]?.allowed && (c.cost ?? 1) <= LIMITS[c.event],
            );
            if (canPass) expect(answer.retryAfter).toBeGreaterThanOrEqual(1);
            else expect(answer.retryAfter).toBeUndefined();
            return;
          }
          checks.forEach((c, i) => {
            // A shadow check answers as allowed, naming the limits it would have refused: beyond
            // them it is not counted; a peek never is.
            const refused =
              c.enforced === false ? (answer.checks[i]?.shadowDenied?.length ?? 0) > 0 : !answer.checks[i]?.allowed;
            if (c.peek || refused) return;
            const key = `${c.event}/${c.feature}`;
            admitted.set(key, (admitted.get(key) ?? 0) + (c.cost ?? 1));
          });
        });
        for (const event of ['fixed', 'sliding'] as const) {
          for (const feature of features) {
            const counted = admitted.get(`${event}/${feature}`) ?? 0;
            expect(counted).toBeLessThanOrEqual(LIMITS[event]);
            // The store holds exactly what allowed requests counted: refused ones took theirs back.
            expect(await remaining(event, feature)).toBe(LIMITS[event] - counted);
          }
        }
      }),
      { numRuns: 40 },
    );
  });

  it('answers a cost beyond the limit as a denial that counts nothing of the request', async () => {
    const [limiter] = instances;
    const feature = `f${uniquePrefix()}`;
    const answer = await limiter.checkTogether([
      { event: 'fixed', feature, cost: 2 },
      { event: 'sliding', feature, cost: LIMITS.sliding + 1 },
    ]);
    expect(answer.allowed).toBe(false);
    expect(answer.checks.map((c) => c.allowed)).toEqual([true, false]);
    expect(answer.checks[0]?.limits[0]?.remaining).toBe(LIMITS.fixed);
    expect(await remaining('fixed', feature)).toBe(LIMITS.fixed);
  });

  it('denies at once from a remembered denial, and only reads the other checks', async () => {
    const [limiter] = instances;
    const feature = `f${uniquePrefix()}`;
    expect((await limiter.checkTogether([{ event: 'sliding', feature, cost: LIMITS.sliding }])).allowed).toBe(true);
    expect((await limiter.checkTogether([{ event: 'sliding', feature }])).allowed).toBe(false);
    const answer = await limiter.checkTogether([
      { event: 'fixed', feature },
      { event: 'sliding', feature },
    ]);
    expect(answer.allowed).toBe(false);
    expect(answer.checks[0]).toMatchObject({ allowed: true, limits: [{ remaining: LIMITS.fixed }] });
    expect(await remaining('fixed', feature)).toBe(LIMITS.fixed);
  });

  it('refuses a check of an unknown event before counting any of the request', async () => {
    const [limiter] = instances;
    const feature = `f${uniquePrefix()}`;
    await expect(
      limiter.checkTogether([
        { event: 'fixed', feature },
        { event: 'nope', feature },
      ]),
    ).rejects.toMatchObject({ code: 'unknown_event' });
    expect(await remaining('fixed', feature)).toBe(LIMITS.fixed);
  });
});
