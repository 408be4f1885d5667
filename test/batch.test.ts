// POST /check/batch against a real Memcached: each check decided as /check would decide it,
// a refused check answering its own error, and a malformed batch counting nothing.
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { loadPolicyFile } from '../src/config/policies.js';
import { createLimiter } from '../src/counting/limiter.js';
import type { Decision } from '../src/counting/decision.js';
import { buildApp } from '../src/http/app.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { counterWrites, uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached({ own: true });
let app: FastifyInstance;
let store: CounterStore;
let freshPeek: (check: Check) => Promise<Decision>;

beforeAll(async () => {
  store = createMemcachedStore({ servers: memcached().servers, timeoutMs: 5000 });
  const policies = await loadPolicyFile('config/policies.yaml');
  const keyPrefix = uniquePrefix();
  // The host's clock: the store's would name each turn of the server's clock in the background (clock-sync.ts), which the write counts below would see.
  const limiter = createLimiter({ policies, store, keyPrefix, now: Date.now });
  // Another instance on the same counters, to read them without this one's memory of denials.
  freshPeek = (check) => createLimiter({ policies, store, keyPrefix, now: Date.now }).peek({ ...check, cost: 1 });
  app = buildApp({ validateResponses: true, limiter, store, maxEventLoopDelayMs: 0 });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await store.close();
});

interface Check {
  event: string;
  feature: string;
  cost?: number;
}
type Answer = Decision | { error: { code: string; message: string }; status: number };

const batch = (checks: unknown) => app.inject({ method: 'POST', url: '/check/batch', payload: checks as string });
const peek = async (check: Check) =>
  (await app.inject({ method: 'POST', url: '/peek', payload: { ...check, cost: 1 } })).json<Decision>();
let features = 0;
const newFeature = () => `batch-client-${String(++features)}`;

describe('POST /check/batch', () => {
  it('decides each check as /check does, in order, with an error for a check /check would refuse', async () => {
    const alice = newFeature();
    const response = await batch([
      { event: 'login', feature: alice },
      { event: 'url_shorten', feature: alice, cost: 30 },
      { event: 'signup', feature: alice },
      { event: 'login', feature: alice, cost: 6 },
    ]);
    expect(response.statusCode).toBe(200);
    const answers = response.json<Answer[]>();
    expect(answers).toHaveLength(4);
    expect(answers[0]).toMatchObject({ allowed: true, limits: [{ name: 'login-1m', remaining: 4 }, {}] });
    expect(answers[1]).toMatchObject({ allowed: true, limits: [{ name: 'url_shorten-1m', remaining: 70 }] });
    expect(answers[2]).toMatchObject({ status: 400, error: { code: 'unknown_event' } });
    expect(answers[3]).toMatchObject({ status: 400, error: { code: 'cost_exceeds_limit' } });
    // The refused checks counted nothing; the allowed ones counted their cost.
    expect((await peek({ event: 'login', feature: alice })).limits[0]?.remaining).toBe(4);
  });

  it('admits exactly the limit when a batch holds more checks of one feature than it allows', async () => {
    const bob = newFeature();
    const answers = (await batch(Array.from({ length: 12 }, () => ({ event: 'login', feature: bob })))).json<
      Decision[]
    >();
    expect(answers.filter((a) => a.allowed)).toHaveLength(5);
    for (const denied of answers.filter((a) => !a.allowed)) expect(denied.retryAfter).toBeGreaterThan(0);
    expect((await peek({ event: 'login', feature: bob })).allowed).toBe(false);
  });

  it('never admits more cost than the limit, whatever the batch (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ who: fc.integer({ min: 0, max: 2 }), cost: fc.integer({ min: 1, max: 40 }) }), {
          minLength: 1,
          maxLength: DEFAULTS.batchMaxChecks,
        }),
        async (asked) => {
          const who = [newFeature(), newFeature(), newFeature()];
          const checks = asked.map(({ who: w, cost }) => ({ event: 'url_shorten', feature: who[w] ?? '', cost }));
          const answers = (await batch(checks)).json<Decision[]>();
          expect(answers).toHaveLength(checks.length);
          for (const [w, feature] of who.entries()) {
            const admitted = checks
              .map((check, i) => (answers[i]?.allowed && asked[i]?.who === w ? check.cost : 0))
              .reduce((a, b) => a + b, 0);
            expect(admitted).toBeLessThanOrEqual(100);
            // What the store holds is exactly what the batch admitted: denials took theirs back.
            // (This instance may repeat a denial made while concurrent checks were counted, for up to a second.)
            const remaining = (await freshPeek({ event: 'url_shorten', feature })).limits[0]?.remaining;
            expect(remaining).toBe(100 - admitted);
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  const malformed: [string, unknown, string][] = [
    ['not an array', { event: 'login', feature: 'x' }, 'invalid_request'],
    ['empty', [], 'invalid_request'],
    [
      'too many checks',
      Array.from({ length: DEFAULTS.batchMaxChecks + 1 }, () => ({ event: 'login', feature: 'x' })),
      'invalid_request',
    ],
    ['a check without a feature', [{ event: 'login', feature: 'x' }, { event: 'login' }], 'invalid_feature'],
    ['a check with an unknown field', [{ event: 'login', feature: 'x', user: 1 }], 'invalid_request'],
    ['a cost that is not an integer', [{ event: 'login', feature: 'x', cost: 1.5 }], 'invalid_cost'],
    ['a check that is not an object', [{ event: 'login', feature: 'x' }, 'login'], 'invalid_request'],
  ];
  for (const [what, body, code] of malformed) {
    it(`refuses a batch with ${what} as a whole, counting nothing`, async () => {
      const feature = newFeature();
      const payload = JSON.parse(JSON.stringify(body).replaceAll('"x"', JSON.stringify(feature))) as unknown;
      const writes = await counterWrites(memcached().servers);
      const response = await batch(payload);
      expect(response.statusCode).toBe(400);
      expect(response.json<{ error: { code: string; message: string } }>().error.code).toBe(code);
      expect(await counterWrites(memcached().servers)).toBe(writes);
    });
  }

  it('names the check at fault', async () => {
    const response = await batch([
      { event: 'login', feature: 'a' },
      { event: 'login', feature: 'b' },
      { event: 7, feature: 'c' },
    ]);
    expect(response.json()).toEqual({
      error: { code: 'invalid_event', message: 'check 2 of the batch: event must be a string' },
    });
  });
});
