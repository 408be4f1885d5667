// Token buckets (`algorithm: token-bucket`): GCRA, the generic cell rate algorithm, on one
// value per client, its theoretical arrival time (TAT). A bucket of `burst` tokens refilled at
// `rate` admits a request of cost n at time t when max(TAT, t) + n·T − burst·T ≤ t, T being
// the time one token takes to come back; admitting moves TAT to max(TAT, t) + n·T.
//
// Exact across instances: each round reads the value with its version and writes it back only
// if nobody wrote it meanwhile (the store's compare-and-swap), else reads again. An instance
// sends one round at a time per client: requests arriving meanwhile are decided together in
// the next, in order, so a client hammering one instance costs one read and one swap per round
// trip, not one per request, and swaps only race with other instances.
import { StoreUnavailableError, type StoreVersion } from '../store/counter-store.js';
import type { CheckContext } from './check-context.js';
import type { CheckItem } from './check-request.js';
import { degradedDecision, shadowDecision, type Decision } from './decision.js';
import type { EventPlan, LimitPlan, TokenBucketPlan } from './plan-types.js';
import { TTL_MARGIN_SECONDS } from './plan.js';

/**
 * Rounds of read and swap a request may take before it is given up on: each failed swap means
 * another instance decided the same client meanwhile. When they run out, the request is refused
 * (`retryAfter` 1, `degraded`), whatever the event's onStoreError: admitting it unread could
 * admit past the burst.
 */
export const MAX_SWAP_ROUNDS = 10;

/** Where a client's TAT is kept, beside its event's counters (same hash tag, same server). */
export function tokenBucketKey(base: string): string {
  return `${base}tb`;
}

/** One request's step through a bucket: the decision's figures, and the TAT it leaves. */
export interface GcraStep {
  readonly allowed: boolean;
  /** The TAT after the request: moved on when it was allowed and counts. */
  readonly tatUs: number;
  /** Tokens left after it. */
  readonly remaining: number;
  /** Microseconds until a request of this cost fits (0 when allowed). */
  readonly retryAfterUs: number;
  /** Microseconds until the bucket is full again. */
  readonly fullInUs: number;
}

/** GCRA for one request of `cost` at `nowUs`, given the stored TAT (undefined: a full bucket). */
export function gcraStep(
  bucket: TokenBucketPlan,
  storedUs: number | undefined,
  nowUs: number,
  cost: number,
  counts: boolean,
): GcraStep {
  const { emissionUs, burst } = bucket;
  const tat = Math.max(storedUs ?? nowUs, nowUs);
  const next = tat + cost * emissionUs;
  const allowAt = next - burst * emissionUs;
  const allowed = allowAt <= nowUs;
  const after = allowed && counts ? next : tat;
  return {
    allowed,
    tatUs: after,
    remaining: Math.max(0, Math.floor((nowUs + burst * emissionUs - after) / emissionUs)),
    retryAfterUs: allowed ? 0 : allowAt - nowUs,
    fullInUs: after - nowUs,
  };
}

/** Seconds a client waits for `us`: to the millisecond, then up to the second (never 0 for a wait). */
function secondsOf(us: number): number {
  return Math.ceil(Math.ceil(us / 1000) / 1000);
}

/** The decision of a step, as any other limit's: `limit` is the burst, `resetSeconds` when the bucket is full. */
export function gcraDecision(limit: LimitPlan, step: GcraStep): Decision {
  const status = {
    name: limit.policy.name,
    limit: limit.policy.limit,
    window: limit.policy.window,
    remaining: step.remaining,
    resetSeconds: secondsOf(step.fullInUs),
  };
  return step.allowed
    ? { allowed: true, limits: [status] }
    : { allowed: false, limits: [status], retryAfter: Math.max(1, secondsOf(step.retryAfterUs)) };
}

/** The longest a bucket can be overdrawn for, in µs: ten years, within Memcached's expirations and 2^53 µs. */
const MAX_OVERDRAFT_US = 10 * 365 * 86_400 * 1_000_000;

/** A request waiting for its round. */
interface Ask {
  readonly item: CheckItem;
  /**
   * Moves the bucket by this many microseconds instead of deciding: negative gives tokens back
   * (a refund), positive takes them whatever is left (a settled cost larger than reserved).
   */
  readonly adjustUs: number | undefined;
  readonly resolve: (outcome: Decision) => void;
  readonly reject: (error: unknown) => void;
}

/** Per limiter (its context), per bucket key: the requests waiting for the round in flight to end. */
const waiting = new WeakMap<CheckContext, Map<string, Ask[]>>();

/** The refusal of a request whose rounds all lost their swaps to other instances. */
const CONTENDED: Decision = Object.freeze({ allowed: false, limits: [], retryAfter: 1, degraded: true });

/**
 * Decides `item` (a check or a peek) on its client's bucket, and tells onDecision; or with
 * `adjustUs`, moves the bucket by that many microseconds without deciding. An adjustment's
 * answer says only whether the bucket held any of it (allowed: a refund gave something back).
 */
export function decideTokenBucket(context: CheckContext, item: CheckItem, adjustUs?: number): Promise<Decision> {
  const key = tokenBucketKey(context.features.baseOf(item.plan.event, item.feature));
  return new Promise<Decision>((resolve, reject) => {
    const ask: Ask = { item, adjustUs, resolve, reject };
    let byKey = waiting.get(context);
    if (!byKey) waiting.set(context, (byKey = new Map<string, Ask[]>()));
    const queue = byKey.get(key);
    if (queue) {
      queue.push(ask);
      return;
    }
    byKey.set(key, []);
    void runRounds(context, byKey, key, [ask]);
  });
}

async function runRounds(context: CheckContext, byKey: Map<string, Ask[]>, key: string, first: Ask[]): Promise<void> {
  let asks = first;
  for (;;) {
    try {
      const decisions = await decideRound(context, key, asks);
      asks.forEach((ask, i) => {
        const decision = decisions[i] as Decision | StoreUnavailableError;
        // An adjustment the store did not answer is the caller's to report (a settle's 503).
        if (decision instanceof StoreUnavailableError) ask.reject(decision);
        else {
          if (ask.adjustUs === undefined) tell(context, ask.item, decision);
          ask.resolve(decision);
        }
      });
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

/** One round for the asks of one bucket, read and swapped again until no other writer came between. */
async function decideRound(
  context: CheckContext,
  key: string,
  asks: readonly Ask[],
): Promise<(Decision | StoreUnavailableError)[]> {
  const plan = (asks[0] as Ask).item.plan;
  for (let round = 0; round < MAX_SWAP_ROUNDS; round++) {
    let read: { value: number | undefined; version: StoreVersion | undefined };
    try {
      read = await context.store.readVersioned(key);
    } catch (error) {
      return unanswered(context, plan, asks, error);
    }
    // The store clock reads fractions of a millisecond; the value is whole microseconds.
    const nowUs = Math.floor(context.now(key) * 1000);
    let tat = read.value;
    const decisions = asks.map((ask) => {
      const { item } = ask;
      const limit = item.plan.limits[0] as LimitPlan;
      const bucket = limit.tokenBucket as TokenBucketPlan;
      if (ask.adjustUs !== undefined) {
        const before = Math.max(tat ?? nowUs, nowUs);
        // A settled cost far past the burst waits at most MAX_OVERDRAFT_US: the value's life stays one memcached takes.
        tat = Math.min(Math.max(nowUs, before + ask.adjustUs), nowUs + MAX_OVERDRAFT_US);
        return { allowed: ask.adjustUs > 0 || before > nowUs, limits: [] };
      }
      const step = gcraStep(bucket, tat, nowUs, item.cost, item.counting && !item.impossible);
      if (step.allowed && item.counting) tat = step.tatUs;
      const decision = gcraDecision(limit, item.impossible ? { ...step, allowed: false } : step);
      return item.plan.shadowOnly ? shadowDecision(decision, item.cost, item.impossible) : decision;
    });
    if (tat === read.value) return decisions;
    const ttlSeconds = Math.max(1, Math.ceil(((tat ?? nowUs) - nowUs) / 1_000_000)) + TTL_MARGIN_SECONDS;
    let stored: boolean;
    try {
      stored = await context.store.swap(key, tat ?? nowUs, ttlSeconds, read.version);
    } catch (error) {
      // In doubt: the swap may have landed. Decided as the store not answering.
      return unanswered(context, plan, asks, error);
    }
    if (stored) return decisions;
  }
  // An adjustment decides nothing: it fails, for its caller to report (a settle's 503, sent again).
  return asks.map((ask) =>
    ask.adjustUs === undefined
      ? CONTENDED
      : new StoreUnavailableError(`${MAX_SWAP_ROUNDS} rounds lost to other writers`),
  );
}

function unanswered(
  context: CheckContext,
  plan: EventPlan,
  asks: readonly Ask[],
  error: unknown,
): (Decision | StoreUnavailableError)[] {
  if (!(error instanceof StoreUnavailableError)) throw error;
  context.onStoreUnavailable?.(error, plan.event);
  return asks.map((ask) => (ask.adjustUs !== undefined ? error : degradedDecision(plan.onStoreError)));
}

function tell(context: CheckContext, item: CheckItem, decision: Decision): void {
  context.onDecision?.({
    event: item.plan.event,
    feature: item.feature,
    kind: item.counting ? 'check' : 'peek',
    decision,
    fromDeniedCache: false,
    keysRead: 1,
    settledMiss: false,
  });
}
