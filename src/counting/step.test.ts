// The check step on the embedded store with a driven clock. Another client's requests are
// played at chosen points between the step's store calls: the races that two instances
// sharing Memcached run into, made to happen every time.
import { describe, expect, it } from 'vitest';
import { parsePolicies } from '../config/policies.js';
import type { CounterStore } from '../store/counter-store.js';
import { createEmbeddedStore } from '../store/embedded-store.js';
import { incrementsAt } from './algorithms/windows/counter-call.js';
import type { CheckItem } from './check-item.js';
import { createContext } from './context.js';
import { UNCONFIRMED_RETRY_AFTER } from './decision.js';
import { counterKeyBase } from './keys.js';
import { planEvents, type WindowsPlan } from './plan.js';
import type { ObservedDecision } from './report.js';
import { resolveAsk, type TogetherCheck } from './resolve.js';
import { decideChecks, MAX_COUNT_ROUNDS, MAX_READS } from './step.js';

const T0 = Date.UTC(2026, 10, 22, 0, 0, 0);
const PREFIX = 'u';
const plans = planEvents(
  parsePolicies(
    {
      events: {
        api: { limits: [{ limit: 30, window: '1m' }] },
        tenant: { limits: [{ limit: 1, window: '1h' }] },
        leased: { limits: [{ limit: 30, window: '1m' }], lease: { maxUnits: 10, life: '5s' } },
      },
    },
    'step.test.yaml',
  ),
);

const now = () => T0;
const checkItem = (request: { event: string; feature: string; cost?: number }, kind: 'check' | 'peek') =>
  resolveAsk(plans, kind, request, { now, beyondLimit: 'refuse' });
const togetherItem = (check: TogetherCheck) =>
  resolveAsk(plans, check.peek === true ? 'peek' : 'check', check, { now, beyondLimit: 'answer' });
const leaseItem = (request: { event: string; feature: string; units: number }) =>
  resolveAsk(plans, 'lease', { ...request, cost: request.units }, { now, beyondLimit: 'refuse', maxUnits: 10 });

/** What reached the store, in order. */
type Call = 'count' | 'read' | 'take back';

/**
 * A step over the embedded store, recording its calls; `between(call)` runs after the step's
 * call number `call` (from 1) answered and before the step goes on: another client's turn.
 */
function setup(
  between: (call: number, calls: readonly Call[]) => Promise<void> | void = () => undefined,
  { shared = false }: { shared?: boolean } = {},
) {
  const clock = { ms: T0 + 30_000 };
  const now = () => clock.ms;
  const store = createEmbeddedStore({ now });
  const calls: Call[] = [];
  const recorded: CounterStore = {
    ...store,
    // Shared: other instances count in the same counters (the `other` client below plays one).
    shared,
    async incrementAndRead(increments, reads, options) {
      calls.push(increments.length > 0 ? 'count' : 'read');
      const answer = await store.incrementAndRead(increments, reads, options);
      await between(calls.length, calls);
      return answer;
    },
    async decrement(decrements) {
      calls.push('take back');
      await store.decrement(decrements);
      await between(calls.length, calls);
    },
  };
  const observed: ObservedDecision[] = [];
  // The driven clock also times how long counts over a limit stood still, as real time would pass.
  const context = {
    ...createContext({ store: recorded, now, keyPrefix: PREFIX, onDecision: (o) => observed.push(o) }, 'v1'),
    monotonicNow: now,
  };
  /** Another client's cost counted at this second, as its instance would, and how to take it back. */
  const other = {
    count: (event: string, feature: string, cost: number) =>
      store.incrementAndRead(incrementsAt(plan(event), counterKeyBase(PREFIX, event, feature), second(), cost), []),
    takeBack: (event: string, feature: string, cost: number) =>
      store.decrement(incrementsAt(plan(event), counterKeyBase(PREFIX, event, feature), second(), cost)),
  };
  const second = () => Math.floor(clock.ms / 1000);
  const check = (feature: string, cost = 1, event = 'api') =>
    decideChecks(context, [checkItem({ event, feature, cost }, 'check')]).then((o) => o.decisions[0]);
  return { clock, calls, observed, context, other, check, store };
}

function plan(event: string) {
  const found = plans.get(event) as WindowsPlan | undefined;
  if (!found) throw new Error(`no event ${event}`);
  return found;
}

describe('the check step', () => {
  it('allows in one count round: one store call', async () => {
    const { check, calls } = setup();
    expect(await check('ann')).toMatchObject({ allowed: true, limits: [{ remaining: 29 }] });
    expect(calls).toEqual(['count']);
  });

  it('confirms a denial by reading after taking its increment back, and remembers it', async () => {
    const { check, calls, other } = setup();
    await other.count('api', 'bob', 30);
    const denied = await check('bob');
    expect(denied).toMatchObject({ allowed: false, retryAfter: 60, limits: [{ remaining: 0 }] });
    // The last read: the current minute's seconds, for the exact retryAfter.
    expect(calls).toEqual(['count', 'take back', 'read', 'read']);
    // Remembered: the next identical check asks nothing.
    expect(await check('bob')).toMatchObject({ allowed: false, retryAfter: 60 });
    expect(calls).toHaveLength(4);
  });

  it('admits a request refused only because of another request that is being taken back', async () => {
    // Room for 1; another client's cost 6, which can never fit, is in the counts when the
    // check counts, and taken back before its confirming read.
    let taken = false;
    const { check, calls, other } = setup(async (call) => {
      if (call === 1 && !taken) {
        taken = true;
        await other.takeBack('api', 'cat', 6);
      }
    });
    await other.count('api', 'cat', 29);
    await other.count('api', 'cat', 6);
    expect(await check('cat')).toMatchObject({ allowed: true, limits: [{ remaining: 0 }] });
    expect(calls).toEqual(['count', 'take back', 'read', 'count']);
  });

  it('looks again while the counts are over the limit: another instance is still taking its cost back', async () => {
    // Room for 1; another instance's cost 6, which can never fit, is in the counts when the
    // check counts and still at its first read (that instance's take-back is slow), and taken
    // back before its second. Counts over the limit hold cost on its way back for sure: the
    // first read's sameness confirms nothing.
    const { check, calls, other } = setup(
      async (call, seen) => {
        if (call === 3 && seen[2] === 'read') await other.takeBack('api', 'gus', 6);
      },
      { shared: true },
    );
    await other.count('api', 'gus', 29);
    await other.count('api', 'gus', 6);
    expect(await check('gus')).toMatchObject({ allowed: true, limits: [{ remaining: 0 }] });
    expect(calls).toEqual(['count', 'take back', 'read', 'read', 'count']);
  });

  it('refuses on counts that stay over the limit only unconfirmed, after its last read: asked again in a second, nothing remembered', async () => {
    // Another instance's cost 6 is never taken back while the check looks (its process stalls),
    // and the driven clock stands still: the counts never outlast the patience.
    const { check, calls, other } = setup(() => undefined, { shared: true });
    await other.count('api', 'hal', 29);
    await other.count('api', 'hal', 6);
    expect(await check('hal')).toMatchObject({ allowed: false, retryAfter: UNCONFIRMED_RETRY_AFTER });
    expect(calls).toEqual(['count', 'take back', ...Array<Call>(MAX_READS).fill('read')]);
    // Nothing remembered: the next check asks the store again, and counts once the cost is back.
    await other.takeBack('api', 'hal', 6);
    expect(await check('hal')).toMatchObject({ allowed: true, limits: [{ remaining: 0 }] });
  });

  it('takes counts over the limit as they are once they stood still for the store deadline (a limit lowered below them)', async () => {
    // 100 ms pass with each read: the third finds the same counts OVERFULL_PATIENCE_MS after the count's answer.
    const { check, calls, other, clock } = setup(
      (call, seen) => {
        if (seen[call - 1] === 'read') clock.ms += 100;
      },
      { shared: true },
    );
    await other.count('api', 'ida', 35);
    expect(await check('ida')).toMatchObject({ allowed: false, retryAfter: 60 });
    // The last read: the current minute's seconds, for the exact retryAfter.
    expect(calls).toEqual(['count', 'take back', 'read', 'read', 'read', 'read']);
    calls.length = 0;
    expect(await check('ida')).toMatchObject({ allowed: false, retryAfter: 60 });
    expect(calls).toEqual([]);
  });

  it('confirms and remembers a denial on counts over the limit when nobody else can be counting', async () => {
    // An unshared store and no other request in its rounds: nothing in the counts is on its way back.
    const { check, calls, other } = setup();
    await other.count('api', 'jo', 35);
    expect(await check('jo')).toMatchObject({ allowed: false, retryAfter: 60 });
    expect(calls).toEqual(['count', 'take back', 'read', 'read']);
    calls.length = 0;
    expect(await check('jo')).toMatchObject({ allowed: false, retryAfter: 60 });
    expect(calls).toEqual([]);
  });

  it('is not contended by a request in its rounds on another store: it counts nothing there', async () => {
    // Another limiter's request, on a store of its own, held in its rounds until released.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const elsewhere = setup(() => held);
    const pending = elsewhere.check('kim');
    const { check, calls, other } = setup();
    await other.count('api', 'jo', 35);
    expect(await check('jo')).toMatchObject({ allowed: false, retryAfter: 60 });
    // As alone: no look again, and remembered.
    expect(calls).toEqual(['count', 'take back', 'read', 'read']);
    release();
    expect(await pending).toMatchObject({ allowed: true });
  });

  it('reads before it counts while a remembered denial says there is no room, adding nothing for others to see', async () => {
    const { check, calls, other, clock, store } = setup();
    await other.count('api', 'dan', 30);
    await check('dan');
    // Past the memory of the denial (a second), before its release: a read, no increment.
    clock.ms += 5_000;
    calls.length = 0;
    const again = await check('dan');
    expect(again).toMatchObject({ allowed: false });
    expect(calls[0]).toBe('read');
    expect(calls).not.toContain('count');
    // Nothing of it reached the counters.
    const base = counterKeyBase(PREFIX, 'api', 'dan');
    const { read } = await store.incrementAndRead([], [`${base}60:${Math.floor(clock.ms / 60_000) * 60}`]);
    expect(read[0]).toBe(30);
  });

  it('gives up after its last count round when others keep crowding it out, saying to ask again in a second and remembering nothing', async () => {
    // Another client's cost lands before each count and is taken back before each read.
    const { check, calls, other } = setup(async (call, seen) => {
      const last = seen[call - 1];
      if (last === 'read') await other.count('api', 'eve', 6);
      if (last === 'count') await other.takeBack('api', 'eve', 6);
    });
    await other.count('api', 'eve', 29);
    await other.count('api', 'eve', 6);
    // The crowding request is taken back after each count: the check's read sees room, its count none.
    const decision = await check('eve');
    expect(decision).toMatchObject({ allowed: false, retryAfter: UNCONFIRMED_RETRY_AFTER });
    expect(calls.filter((c) => c === 'count')).toHaveLength(MAX_COUNT_ROUNDS);
    calls.length = 0;
    await check('eve');
    expect(calls.length).toBeGreaterThan(0);
  });

  it('tells onDecision once per decision, with the keys it read over every round', async () => {
    const { check, observed, other } = setup();
    await other.count('api', 'fay', 30);
    await check('fay');
    await check('fay');
    expect(observed.map((o) => [o.kind, o.decision.allowed, o.fromDeniedCache])).toEqual([
      ['check', false, false],
      ['check', false, true],
    ]);
    // The count round's (the reset marker and the 29 seconds before the current minute) and the
    // confirming read's (the marker and the current minute and second: the rest is known now).
    expect(observed[0]?.keysRead).toBe(30 + 3);
  });
});

describe('checks decided together', () => {
  const together = (context: ReturnType<typeof setup>['context'], items: CheckItem[]) => decideChecks(context, items);

  it('counts none of a request another check refuses, reading the exhausted counter before counting anything', async () => {
    const { context, calls, other, store, clock } = setup();
    await other.count('tenant', 't1', 1);
    const item = (event: string, feature: string) => togetherItem({ event, feature });
    const first = await together(context, [item('api', 'u1'), item('tenant', 't1')]);
    expect(first).toMatchObject({ allowed: false, retryAfter: 3600 });
    // The user's check shows its counts without the request's cost.
    expect(first.decisions[0]).toMatchObject({ allowed: true, limits: [{ remaining: 30 }] });
    // Now the tenant is known to be full: the next such request reads both, counting neither.
    calls.length = 0;
    clock.ms += 2_000;
    await together(context, [item('api', 'u1'), item('tenant', 't1')]);
    expect(calls).not.toContain('count');
    const base = counterKeyBase(PREFIX, 'api', 'u1');
    const { read } = await store.incrementAndRead([], [`${base}60:${Math.floor(clock.ms / 60_000) * 60}`]);
    expect(read[0]).toBe(0);
  });

  it('tells which checks memory denied without the store: a lone one, and one of a pair', async () => {
    const { context, other, calls } = setup();
    await other.count('tenant', 't2', 1);
    const item = (event: string, feature: string) => togetherItem({ event, feature });
    // Denied by what the store holds, then remembered.
    expect(await together(context, [item('tenant', 't2')])).not.toHaveProperty('fromMemory');
    calls.length = 0;
    expect(await together(context, [item('tenant', 't2')])).toMatchObject({ allowed: false, fromMemory: [true] });
    expect(calls).toEqual([]);
    expect(await together(context, [item('api', 'u2'), item('tenant', 't2')])).toMatchObject({
      allowed: false,
      fromMemory: [false, true],
    });
    expect(await together(context, [item('api', 'u3')])).not.toHaveProperty('fromMemory');
  });

  it('answers a cost beyond a limit "never", counting nothing, and a shadow check over its limit without refusing', async () => {
    const { context } = setup();
    const never = await together(context, [
      togetherItem({ event: 'api', feature: 'g', cost: 2 }),
      togetherItem({ event: 'tenant', feature: 'g', cost: 2 }),
    ]);
    expect(never.allowed).toBe(false);
    expect(never.decisions[1]).toEqual({
      allowed: false,
      limits: [expect.objectContaining({ remaining: 1 })],
      policyVersion: 'v1',
    });
    expect(never.retryAfter).toBeUndefined();
    const shadow = await together(context, [
      togetherItem({ event: 'api', feature: 'h' }),
      togetherItem({ event: 'tenant', feature: 'h', cost: 1, enforced: false }),
      togetherItem({ event: 'tenant', feature: 'h', cost: 1, enforced: false }),
    ]);
    expect(shadow.allowed).toBe(true);
    expect(shadow.counted.map(({ cost }) => cost)).toEqual([1, 0, 0]);
  });
});

describe('leases', () => {
  it('take what remains, saying when they were counted (the second their record names)', async () => {
    const { context, other, clock } = setup();
    await other.count('leased', 'l1', 26);
    const outcome = await decideChecks(context, [leaseItem({ event: 'leased', feature: 'l1', units: 10 })]);
    expect(outcome.allowed).toBe(true);
    expect(outcome.counted).toEqual([{ cost: 4, atMs: clock.ms }]);
  });

  it('are refused from memory once even one unit was', async () => {
    const { context, other, calls } = setup();
    await other.count('leased', 'l2', 30);
    const take = () => decideChecks(context, [leaseItem({ event: 'leased', feature: 'l2', units: 10 })]);
    expect((await take()).allowed).toBe(false);
    calls.length = 0;
    expect((await take()).allowed).toBe(false);
    expect(calls).toEqual([]);
  });
});
