// Concurrency limits (`algorithm: concurrency`): at most `limit` requests of a client in flight
// at once, across every instance sharing the store. Each request in flight holds a slot: one
// key of `limit` (`slots.ts`), taken with the store's ADD (atomic: two instances can never hold
// one slot) and given back with a compare-and-delete naming the holder's token. A slot not
// given back within the limit's `timeout` expires with its key, so a crashed instance's slots
// free themselves. A check reads every slot in one call and adds one it saw free; it is refused
// only when that read found every slot held.
import { StoreUnavailableError } from '../../../store/counter-store.js';
import type { Context } from '../../context.js';
import type { Decision, LimitStatus } from '../../decision.js';
import { LimiterInputError } from '../../errors.js';
import { counterKeyBase } from '../../keys.js';
import type { AlgorithmPart, Counter, CounterRound, RoundMode } from '../part.js';
import {
  type ConcurrencyCounters,
  type ConcurrencyLimitPlan,
  type ConcurrencyPlan,
  concurrencyCounters,
  planConcurrencyLimit,
} from './plan.js';
import { parseSlotId, slotId, slotKey, slotToken } from './slots.js';

/**
 * Rounds of read and take a request may make before it is given up on: each lost take means
 * another request took the slot it saw free between its read and its take.
 */
export const MAX_TAKE_ROUNDS = 10;

/** What a concurrency limit keeps of a client: where its slots are, nothing more. */
interface SlotsState {
  readonly base: string;
}

type SlotsCounter = Counter<ConcurrencyPlan, SlotsState>;

/** The slots a round took, for `undo`. */
interface Taken {
  readonly base: string;
  readonly token: number;
  readonly indices: readonly number[];
}

export const concurrencyLimits: AlgorithmPart<ConcurrencyPlan, SlotsState, ConcurrencyCounters> = {
  planLimit: planConcurrencyLimit,
  counters: concurrencyCounters,
  eventPlan: (common, counters) => ({ ...common, algorithm: 'concurrency', slots: counters.slots }),

  state: (context, plan, feature) => ({ base: counterKeyBase(context.keyPrefix, plan.event, feature) }),
  remembered: () => undefined,
  prepare: () => undefined,
  readsFirst: () => false,
  round: slotsRound,

  async undo(context, counted) {
    await Promise.all(
      (counted as readonly Taken[]).flatMap(({ base, token, indices }) =>
        indices.map((index) => freeSlot(context, base, index, token).catch(() => false)),
      ),
    );
  },

  // A refusal is read at once from every slot: nothing to confirm.
  confirmDenial: (_context, _counter, _round, own) => own,
  forget: () => undefined,

  resetKeys: (plan, base) => ({
    deletes: Array.from({ length: plan.slots }, (_, index) => slotKey(base, index)),
    ttlSeconds: Math.max(...plan.limits.map((limit) => limit.timeoutSeconds)),
  }),

  recordKey: () => {
    throw new RangeError('a concurrency limit takes no leases or reservations');
  },
  recordedTime: () => undefined,
  recount: () => Promise.reject(new RangeError('a concurrency limit takes no leases or reservations')),
  // A slot is given back with release: a refund has nothing to take back.
  refund: () => Promise.resolve(false),

  async release(context, _plan, base, id) {
    const slot = parseSlotId(id);
    if (!slot) throw new LimiterInputError('unknown_slot', 'the slot id is not one memgate gave');
    const freed = await Promise.all(slot.indices.map((index) => freeSlot(context, base, index, slot.token)));
    return freed.some(Boolean);
  },

  sizing: (plan) => ({ incrementsPerCheck: 1, keysPerCheck: { max: plan.slots }, itemsPerFeature: plan.slots }),
  limitSizing: (limit) => ({
    bucketSizes: [],
    keysPerCheck: { max: limit.policy.limit, mean: limit.policy.limit },
    itemsPerFeature: limit.policy.limit,
  }),
};

/** Frees slot `index` if it still holds `token`: read with its version, deleted only over it. */
async function freeSlot(context: Context, base: string, index: number, token: number): Promise<boolean> {
  const key = slotKey(base, index);
  const held = await context.store.readVersioned(key);
  if (held.value !== token || held.version === undefined) return false;
  return context.store.remove(key, held.version);
}

/**
 * One counter's round: every slot read in one call; counting, as many free ones taken as the
 * request costs, each with ADD under one new token. A take another request won is given back,
 * and the round reads again.
 */
async function slotsRound(
  context: Context,
  counter: SlotsCounter,
  mode: RoundMode,
  several: boolean,
): Promise<CounterRound> {
  const { plan, state, peekCosts } = counter;
  const limit = plan.limits[0] as ConcurrencyLimitPlan;
  const { version } = context.answers;
  const counting = mode === 'count' && counter.cost > 0;
  const asked = Math.max(1, counter.cost);
  const keys = Array.from({ length: limit.policy.limit }, (_, index) => slotKey(state.base, index));
  try {
    for (let round = 0; round < MAX_TAKE_ROUNDS; round++) {
      counter.keysRead += keys.length;
      const nowMs = context.now(state.base);
      const { read } = await context.store.incrementAndRead([], keys);
      const free: number[] = [];
      read.forEach((value, index) => {
        if (value === 0) free.push(index);
      });
      const peeks = peekCosts.map((cost) => slotsDecision(limit, free.length, cost, 0, version));
      if (!counting || free.length < asked) {
        const decision = slotsDecision(limit, free.length, asked, 0, version);
        return {
          decision,
          uncounted: undefined,
          peeks,
          counted: undefined,
          denied: undefined,
          look: undefined,
          exact: true,
        };
      }
      const token = slotToken();
      const chosen = shuffled(free).slice(0, asked);
      const ttlSeconds = limit.timeoutSeconds;
      const added = await Promise.all(
        chosen.map((index) => context.store.swap(keys[index] as string, token, ttlSeconds, undefined)),
      );
      const indices = chosen.filter((_, i) => added[i]);
      if (indices.length === asked) {
        counter.countedAtMs = nowMs;
        const taken: Taken = { base: state.base, token, indices };
        const decision: Decision = {
          ...slotsDecision(limit, free.length, asked, asked, version),
          slot: { id: slotId(indices, token), expiresAt: Math.floor(nowMs) + ttlSeconds * 1000 },
        };
        return {
          decision,
          uncounted: several ? slotsDecision(limit, free.length, asked, 0, version) : undefined,
          peeks,
          counted: taken,
          denied: undefined,
          look: undefined,
          exact: true,
        };
      }
      // Another request took a slot between the read and the take: give back what was taken, read again.
      await Promise.all(indices.map((index) => freeSlot(context, state.base, index, token).catch(() => false)));
    }
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    context.onStoreUnavailable?.(error, plan.event);
    return fixedRound(context.answers.degraded(plan.onStoreError), peekCosts);
  }
  // Refused: taking unread could hold more slots than the limit, whatever the event's onStoreError.
  return fixedRound(context.answers.contended, peekCosts);
}

/** The decision of `asked` slots when `free` were free, `taken` of them now held by this request. */
function slotsDecision(
  limit: ConcurrencyLimitPlan,
  free: number,
  asked: number,
  taken: number,
  version: string,
): Decision {
  const { policy, timeoutSeconds } = limit;
  const status: LimitStatus = {
    name: policy.name,
    limit: policy.limit,
    window: timeoutSeconds,
    remaining: free - taken,
    // A slot frees itself within its timeout at the latest.
    resetSeconds: free === policy.limit && taken === 0 ? 0 : timeoutSeconds,
  };
  return free >= asked
    ? { allowed: true, limits: [status], policyVersion: version }
    : // When a request in flight ends is not known: ask again in a second.
      { allowed: false, limits: [status], retryAfter: 1, policyVersion: version };
}

function fixedRound(decision: Decision, peekCosts: readonly number[]): CounterRound {
  return {
    decision,
    uncounted: undefined,
    peeks: peekCosts.map(() => decision),
    counted: undefined,
    denied: undefined,
    look: undefined,
    exact: true,
  };
}

/** The free slots in a random order: requests racing for the last ones try different ones first. */
function shuffled(indices: readonly number[]): number[] {
  const order = [...indices];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order;
}
