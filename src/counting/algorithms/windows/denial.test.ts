// The follow-up of a denial on the embedded store with a driven clock: taking increments back,
// the exact retryAfter (reading a coarse bucket's parts), and what is remembered.
import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../../../config/policies.js';
import { createEmbeddedStore } from '../../../store/embedded-store.js';
import type { CounterStore } from '../../../store/counter-store.js';
import { repeatDenial } from './cached-denial.js';
import { createContext } from '../../context.js';
import { incrementsAt } from './counter-call.js';
import { decide } from './counts.js';
import { unconfirmedDenial, UNCONFIRMED_RETRY_AFTER } from '../../decision.js';
import { exactDenial, takeBack } from './denial.js';
import { counterKeyBase } from '../../keys.js';
import { planEvents } from '../../plan.js';
import type { WindowsPlan } from '../../plan-types.js';

const T0 = Date.UTC(2026, 10, 22, 0, 0, 0);
const plans = planEvents(
  parsePolicies(
    {
      events: {
        api: { limits: [{ limit: 10, window: '1m' }] },
        leased: { limits: [{ limit: 10, window: '1m' }], lease: { maxUnits: 5, life: '5s' } },
      },
    },
    'denial.test.yaml',
  ),
);

function setup(store?: (now: () => number) => CounterStore) {
  const clock = { ms: T0 + 30_500 };
  const now = () => clock.ms;
  const errors: unknown[] = [];
  const context = createContext(
    {
      store: store ? store(now) : createEmbeddedStore({ now }),
      now,
      keyPrefix: 'd',
      onRollbackError: (error) => errors.push(error),
    },
    'v1',
  );
  return { clock, context, errors };
}

/** A denial of `event` for `feature` decided on what the store holds now, and its counts. */
async function denied(context: ReturnType<typeof setup>['context'], event: string, feature: string, nowMs: number) {
  const plan = plans.get(event) as WindowsPlan | undefined;
  if (!plan) throw new Error('no plan');
  const state = context.features.state(plan, feature);
  const window = context.features.windowAt(state, plan, Math.floor(nowMs / 1000));
  const { read } = await context.store.incrementAndRead([], [...window.reads.keys, ...window.currentKeys]);
  const counts = window.fill(window.reads, read, read.slice(window.reads.keys.length), 0);
  const decision = decide(counts, { cost: 1, nowMs, kind: 'peek', version: 'v1' });
  return { decision, at: { plan, state, counts: window.snapshot(), cost: 1, nowMs } };
}

describe('a denial’s follow-up', () => {
  it('finds the exact second enough leaves, reading the current minute’s seconds', async () => {
    const { context } = setup();
    const plan = plans.get('api') as WindowsPlan | undefined;
    if (!plan) throw new Error('no plan');
    const base = counterKeyBase('d', 'api', 'ann');
    // 4 at second 10 of the minute, 6 at second 20: all in the current minute's bucket.
    await context.store.incrementAndRead(incrementsAt(plan, base, T0 / 1000 + 10, 4), []);
    await context.store.incrementAndRead(incrementsAt(plan, base, T0 / 1000 + 20, 6), []);
    const nowMs = T0 + 30_500;
    const { decision, at } = await denied(context, 'api', 'ann', nowMs);
    // From the minute bucket alone, it could only say when its newest second (now) has left.
    expect(decision.retryAfter).toBe(60);
    const exact = await exactDenial(context, decision, at, { remember: true });
    // The first unit to leave is one of second 10's, at second 70: 40 s from 30.5.
    expect(exact.retryAfter).toBe(40);
    expect(repeatDenial(at.state.denial, 1, nowMs + 100)?.retryAfter).toBe(40);
  });

  it('remembers nothing when asked not to, and an unconfirmed denial says to ask again in a second', async () => {
    const { context } = setup();
    const plan = plans.get('api') as WindowsPlan | undefined;
    if (!plan) throw new Error('no plan');
    await context.store.incrementAndRead(incrementsAt(plan, counterKeyBase('d', 'api', 'bob'), T0 / 1000 + 10, 10), []);
    const { decision, at } = await denied(context, 'api', 'bob', T0 + 30_500);
    await exactDenial(context, decision, at, { remember: false });
    expect(at.state.denial).toBeUndefined();
    expect(unconfirmedDenial(decision).retryAfter).toBe(UNCONFIRMED_RETRY_AFTER);
  });

  it('on an event with leases, says no more than a lease’s hold, since a returned lease frees units sooner', async () => {
    const { context } = setup();
    const plan = plans.get('leased') as WindowsPlan | undefined;
    if (!plan) throw new Error('no plan');
    await context.store.incrementAndRead(
      incrementsAt(plan, counterKeyBase('d', 'leased', 'cat'), T0 / 1000 + 10, 10),
      [],
    );
    const { decision, at } = await denied(context, 'leased', 'cat', T0 + 30_500);
    const exact = await exactDenial(context, decision, at, { remember: true });
    expect(exact.retryAfter).toBeLessThanOrEqual(plan.lease?.holdSeconds ?? 0);
  });

  it('takes increments back, each by what it counted, and tells a failure without throwing', async () => {
    const { context } = setup();
    const plan = plans.get('api') as WindowsPlan | undefined;
    if (!plan) throw new Error('no plan');
    const increments = incrementsAt(plan, counterKeyBase('d', 'api', 'dan'), T0 / 1000 + 30, 3);
    await context.store.incrementAndRead(increments, []);
    await takeBack(context, [{ increments }]);
    expect(
      (
        await context.store.incrementAndRead(
          [],
          increments.map((i) => i.key),
        )
      ).read,
    ).toEqual([0, 0]);
    const failing = setup((now) => ({
      ...createEmbeddedStore({ now }),
      decrement: () => Promise.reject(new Error('no answer')),
    }));
    await takeBack(failing.context, [{ increments }]);
    expect(failing.errors).toHaveLength(1);
  });
});
