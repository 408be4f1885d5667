// Token buckets (`algorithm: token-bucket`): GCRA (gcra.ts) on one value per client.
//
// Exact across instances: each round reads the value with its version and writes it back only
// if nobody wrote it meanwhile (the store's compare-and-swap), else reads again. An instance
// sends one round at a time per client: requests arriving meanwhile are decided together in
// the next, in order, so a client hammering one instance costs one read and one swap per round
// trip, not one per request, and swaps only race with other instances.
import { StoreUnavailableError, type StoreVersion } from '../../../store/counter-store.js';
import type { Context } from '../../context.js';
import type { Decision } from '../../decision.js';
import { counterKeyBase, recordUnitsKey, tokenBucketKey, TTL_MARGIN_SECONDS } from '../../keys.js';
import type { TokenBucketLimitPlan, TokenBucketPlan } from '../../plan-types.js';
import type { AlgorithmPart, Counter, CounterRound, RoundMode } from '../part.js';
import { gcraDecision, gcraStep, planTokenBucketLimit } from './gcra.js';
import { seededTat, tokenBucketCarry, type TokenBucketCarry } from './seed.js';

/**
 * Rounds of read and swap a request may take before it is given up on: each failed swap means
 * another instance decided the same client meanwhile. When they run out, the request is refused
 * (`retryAfter` 1, `degraded`), whatever the event's onStoreError: admitting it unread could
 * admit past the burst.
 */
export const MAX_SWAP_ROUNDS = 10;

/** The longest a bucket can be overdrawn for, in µs: ten years, within Memcached's expirations and 2^53 µs. */
const MAX_OVERDRAFT_US = 10 * 365 * 86_400 * 1_000_000;

/** What a token bucket keeps of a client: where its value is, nothing more (the store holds the rest). */
interface BucketState {
  readonly base: string;
  readonly key: string;
}

type BucketCounter = Counter<TokenBucketPlan, BucketState>;

/** What a counted round took: given back, as time, when its request is refused. */
interface Taken {
  readonly key: string;
  readonly plan: TokenBucketPlan;
  readonly us: number;
}

/** A request waiting for its round: a counter's, or a move of the bucket by `adjustUs` (a refund, a settle). */
type Ask =
  | {
      readonly counter: BucketCounter;
      readonly mode: RoundMode;
      readonly several: boolean;
      readonly resolve: (round: CounterRound) => void;
      readonly reject: (error: unknown) => void;
    }
  | {
      readonly plan: TokenBucketPlan;
      readonly adjustUs: number;
      readonly resolve: (moved: boolean) => void;
      readonly reject: (error: unknown) => void;
    };

/** Per limiter (its context), per bucket key: the requests waiting for the round in flight to end. */
const waiting = new WeakMap<Context, Map<string, Ask[]>>();

function limitOf(plan: TokenBucketPlan): TokenBucketLimitPlan {
  return plan.limits[0] as TokenBucketLimitPlan;
}

export const tokenBuckets: AlgorithmPart<TokenBucketPlan, BucketState, TokenBucketCarry | undefined> = {
  planLimit: planTokenBucketLimit,
  // One value per client: nothing shared between its plans but the key, and what a reload kept.
  counters: () => undefined,
  carryOver: (_counters, _limits, previous, moment) => tokenBucketCarry(previous, moment),
  eventPlan: (common, carried) => ({
    ...common,
    algorithm: 'token-bucket',
    ...(carried?.seed ? { seed: carried.seed } : {}),
    ...(carried?.carry ? { carry: carried.carry } : {}),
  }),

  state(context, plan, feature) {
    const base = counterKeyBase(context.keyPrefix, plan.event, feature);
    return { base, key: tokenBucketKey(base) };
  },

  remembered: () => undefined,
  prepare: () => undefined,
  readsFirst: () => false,

  round: (context, counter, mode, several) =>
    new Promise<CounterRound>((resolve, reject) => {
      enqueue(context, counter.state.key, { counter, mode, several, resolve, reject });
    }),

  async undo(context, counted) {
    await Promise.all(
      (counted as readonly Taken[]).map(({ key, plan, us }) => adjust(context, plan, key, -us).catch(() => false)),
    );
  },

  confirmDenial: (_context, _counter, _round, own) => own,
  forget: () => undefined,
  // Its one value, forgotten whole: the client starts again with a full bucket.
  resetKeys: (_plan, base) => ({ deletes: [tokenBucketKey(base)], ttlSeconds: TTL_MARGIN_SECONDS }),
  // A token bucket has no buckets of time: its records name none.
  recordKey: (_plan, base, id) => recordUnitsKey(base, [], id),
  recordedTime: (plan, cost) => cost * limitOf(plan).emissionUs,

  async recount(context, plan, base, { count, takeBack, unitUs }) {
    // Both at the rate recorded with the units (the plan they were counted under), whatever the
    // client's rate is now or the settle names: reserve 5 slow tokens and settle 5, and the
    // bucket is where the reservation left it.
    const perUnitUs = unitUs !== undefined && unitUs > 0 ? unitUs : limitOf(plan).emissionUs;
    const moved = await adjustOrFail(context, plan, tokenBucketKey(base), Math.round((count - takeBack) * perUnitUs));
    if (!moved.answered) throw moved.error;
  },

  // Its tokens go back into the client's bucket now, up to a full one.
  refund: async (context, plan, base, { cost }) => {
    const moved = await adjustOrFail(context, plan, tokenBucketKey(base), -cost * limitOf(plan).emissionUs);
    if (!moved.answered) throw moved.error;
    return moved.moved;
  },

  sizing: () => ({ incrementsPerCheck: 1, keysPerCheck: { max: 1 }, itemsPerFeature: 1 }),
  limitSizing: () => ({ bucketSizes: [], keysPerCheck: { max: 1, mean: 1 }, itemsPerFeature: 1 }),
};

/** Moves a bucket by `us` (negative gives tokens back); whether it held any of it. */
function adjust(context: Context, plan: TokenBucketPlan, key: string, us: number): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    enqueue(context, key, { plan, adjustUs: us, resolve, reject });
  });
}

async function adjustOrFail(
  context: Context,
  plan: TokenBucketPlan,
  key: string,
  us: number,
): Promise<{ answered: true; moved: boolean } | { answered: false; error: unknown }> {
  try {
    return { answered: true, moved: await adjust(context, plan, key, us) };
  } catch (error) {
    return { answered: false, error };
  }
}

function enqueue(context: Context, key: string, ask: Ask): void {
  let byKey = waiting.get(context);
  if (!byKey) waiting.set(context, (byKey = new Map<string, Ask[]>()));
  const queue = byKey.get(key);
  if (queue) {
    queue.push(ask);
    return;
  }
  byKey.set(key, []);
  void runRounds(context, byKey, key, [ask]);
}

async function runRounds(context: Context, byKey: Map<string, Ask[]>, key: string, first: Ask[]): Promise<void> {
  let asks = first;
  for (;;) {
    try {
      await decideRound(context, key, asks);
    } catch (error) {
      for (const ask of asks) ask.reject(error);
    }
    const next = byKey.get(key) ?? [];
    if (next.length === 0) {
      byKey.delete(key);
      return;
    }
    byKey.set(key, []);
    asks = next;
  }
}

/** What one ask comes to in a round, before the swap says whether it stands. */
type Outcome = { readonly round: CounterRound } | { readonly moved: boolean };

/** One round for the asks of one bucket, read and swapped again until no other writer came between. */
async function decideRound(context: Context, key: string, asks: readonly Ask[]): Promise<void> {
  const first = asks[0] as Ask;
  const plan = 'counter' in first ? first.counter.plan : first.plan;
  for (let round = 0; round < MAX_SWAP_ROUNDS; round++) {
    let read: { value: number | undefined; version: StoreVersion | undefined };
    try {
      read = await context.store.readVersioned(key);
    } catch (error) {
      unanswered(context, plan, asks, error);
      return;
    }
    // The store clock reads fractions of a millisecond; the value is whole microseconds.
    let nowUs = Math.floor(context.now(key) * 1000);
    let tat = read.value;
    const { seed } = plan;
    if (tat === undefined && seed && 'counter' in first && nowUs < seed.until * 1_000_000) {
      try {
        tat = await seededTat(context, seed, limitOf(plan), first.counter.state.base, nowUs);
      } catch (error) {
        unanswered(context, plan, asks, error);
        return;
      }
      nowUs = Math.max(nowUs, Math.floor(context.now(key) * 1000));
    }
    const outcomes = asks.map((ask): Outcome => {
      if (!('counter' in ask)) {
        const before = Math.max(tat ?? nowUs, nowUs);
        // A settled cost far past the burst waits at most MAX_OVERDRAFT_US: the value's life stays one memcached takes.
        tat = Math.min(Math.max(nowUs, before + ask.adjustUs), nowUs + MAX_OVERDRAFT_US);
        return { moved: ask.adjustUs > 0 || before > nowUs };
      }
      const { counter, mode, several } = ask;
      counter.keysRead += 1;
      const limit = limitOf(counter.plan);
      const counting = mode === 'count' && counter.cost > 0;
      const { version } = context.answers;
      const peeks = counter.peekCosts.map((cost) =>
        gcraDecision(limit, gcraStep(limit, tat, nowUs, cost, false), version),
      );
      const asked = Math.max(1, counter.cost);
      const step = gcraStep(limit, tat, nowUs, asked, counting);
      const counted = counting && step.allowed;
      const uncounted =
        counted && several ? gcraDecision(limit, gcraStep(limit, tat, nowUs, asked, false), version) : undefined;
      if (counted) {
        tat = step.tatUs;
        counter.countedAtMs = nowUs / 1000;
      }
      const decision = gcraDecision(limit, step, version);
      return {
        round: {
          decision,
          uncounted,
          peeks,
          counted: counted ? ({ key, plan: counter.plan, us: asked * limit.emissionUs } satisfies Taken) : undefined,
          denied: undefined,
          look: undefined,
          exact: true,
        },
      };
    });
    if (tat !== read.value) {
      const ttlSeconds = Math.max(1, Math.ceil(((tat ?? nowUs) - nowUs) / 1_000_000)) + TTL_MARGIN_SECONDS;
      let stored: boolean;
      try {
        stored = await context.store.swap(key, tat ?? nowUs, ttlSeconds, read.version);
      } catch (error) {
        // In doubt: the swap may have landed. Decided as the store not answering.
        unanswered(context, plan, asks, error);
        return;
      }
      if (!stored) continue;
    }
    asks.forEach((ask, i) => {
      const outcome = outcomes[i] as Outcome;
      if ('counter' in ask && 'round' in outcome) ask.resolve(outcome.round);
      else if (!('counter' in ask) && 'moved' in outcome) ask.resolve(outcome.moved);
    });
    return;
  }
  // An adjustment decides nothing: it fails, for its caller to report (a settle's 503, sent again).
  for (const ask of asks) {
    // Refused: admitting it unread could admit past the burst, whatever the event's onStoreError.
    if ('counter' in ask) ask.resolve(decidedRound(context.answers.contended, ask.counter));
    else ask.reject(new StoreUnavailableError(`${MAX_SWAP_ROUNDS} rounds lost to other writers`));
  }
}

function unanswered(context: Context, plan: TokenBucketPlan, asks: readonly Ask[], error: unknown): void {
  if (!(error instanceof StoreUnavailableError)) throw error;
  context.onStoreUnavailable?.(error, plan.event);
  for (const ask of asks) {
    if ('counter' in ask) ask.resolve(decidedRound(context.answers.degraded(plan.onStoreError), ask.counter));
    else ask.reject(error);
  }
}

/** A round decided without the bucket's value: every check of the counter gets `decision`. */
function decidedRound(decision: Decision, counter: BucketCounter): CounterRound {
  return {
    decision,
    uncounted: undefined,
    peeks: counter.peekCosts.map(() => decision),
    counted: undefined,
    denied: undefined,
    look: undefined,
    exact: true,
  };
}
