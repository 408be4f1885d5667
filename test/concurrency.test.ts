// Concurrency limits across two instances on one real memcached: never more requests in flight
// than the limit, and none refused while fewer were held, whatever the interleaving of takes and
// releases (fast-check); slots that are never released free themselves after their timeout.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached();
const stores: CounterStore[] = [];

afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

const LIMIT = 20;

/** Two instances, each with a Memcached store of its own, counting under one key prefix. */
function twoInstances(timeout = '1h'): [Limiter, Limiter] {
  const keyPrefix = uniquePrefix();
  const make = () => {
    const store = createMemcachedStore({ servers: memcached().servers });
    stores.push(store);
    return createLimiter({
      policies: { events: { job: { algorithm: 'concurrency', limits: [{ limit: LIMIT, timeout }] } } },
      store,
      keyPrefix,
    });
  };
  return [make(), make()];
}

/** One request: when it was sent and answered, and, taken, when its release was sent and answered. */
interface Flow {
  readonly sent: number;
  readonly answered: number;
  readonly allowed: boolean;
  readonly releaseSent?: number;
  readonly releaseAnswered?: number;
}

/** The most intervals that hold at one instant within [from, to] (intervals held at `from`, then every start within). */
function mostHeldWithin(intervals: readonly (readonly [number, number])[], from: number, to: number): number {
  const instants = [from, ...intervals.map(([start]) => start).filter((start) => start > from && start <= to)];
  return Math.max(...instants.map((t) => intervals.filter(([start, end]) => start <= t && t <= end).length));
}

describe('a concurrency limit on two instances', () => {
  it(`never holds more than ${LIMIT} requests in flight, and refuses none while fewer were held (fast-check)`, async () => {
    let refusals = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            instance: fc.integer({ min: 0, max: 1 }),
            startMs: fc.integer({ min: 0, max: 20 }),
            holdMs: fc.integer({ min: 0, max: 60 }),
          }),
          { minLength: 30, maxLength: 60 },
        ),
        async (requests) => {
          const instances = twoInstances();
          const feature = `f${uniquePrefix()}`;
          const flows = await Promise.all(
            requests.map(async ({ instance, startMs, holdMs }): Promise<Flow> => {
              await new Promise((resolve) => setTimeout(resolve, startMs));
              const limiter = instances[instance] as Limiter;
              const sent = performance.now();
              const decision = await limiter.check({ event: 'job', feature });
              const answered = performance.now();
              if (!decision.allowed) return { sent, answered, allowed: false };
              await new Promise((resolve) => setTimeout(resolve, holdMs));
              const releaseSent = performance.now();
              const { released } = await limiter.release({ event: 'job', feature, id: decision.slot?.id ?? '' });
              expect(released).toBe(true);
              return { sent, answered, allowed: true, releaseSent, releaseAnswered: performance.now() };
            }),
          );
          const taken = flows.filter((flow) => flow.allowed);
          // Surely held: from the take's answer to its release's sending. Never more than the limit at once.
          const surely = taken.map((flow) => [flow.answered, flow.releaseSent ?? flow.answered] as const);
          for (const [start] of surely) expect(mostHeldWithin(surely, start, start)).toBeLessThanOrEqual(LIMIT);
          // Perhaps held: from the take's sending to its release's answer. A refusal read every slot
          // held at some instant of its own call: as many perhaps-held requests at one instant then.
          const perhaps = taken.map((flow) => [flow.sent, flow.releaseAnswered ?? flow.answered] as const);
          for (const refused of flows.filter((flow) => !flow.allowed)) {
            refusals++;
            expect(mostHeldWithin(perhaps, refused.sent, refused.answered)).toBeGreaterThanOrEqual(LIMIT);
          }
          // Every request released: every slot is free again.
          expect((await instances[0].peek({ event: 'job', feature })).limits[0]?.remaining).toBe(LIMIT);
        },
      ),
      { numRuns: 40 },
    );
    // The runs did reach the limit: the refusals above were judged, not absent.
    expect(refusals).toBeGreaterThan(0);
  });

  it('frees the slots of an instance that never releases them once their timeout passes', async () => {
    const [crashed, alive] = twoInstances('2s');
    const feature = `f${uniquePrefix()}`;
    const held = await Promise.all(Array.from({ length: LIMIT }, () => crashed.check({ event: 'job', feature })));
    expect(held.every((decision) => decision.allowed)).toBe(true);
    expect((await alive.check({ event: 'job', feature })).allowed).toBe(false);
    // Memcached expires by whole seconds: past 2 s and its second's end, the slots are gone.
    await new Promise((resolve) => setTimeout(resolve, 3200));
    const after = await Promise.all(Array.from({ length: LIMIT }, () => alive.check({ event: 'job', feature })));
    expect(after.every((decision) => decision.allowed)).toBe(true);
  });
});
