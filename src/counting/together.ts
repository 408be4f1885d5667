// Several checks decided as one request (Limiter.checkTogether): all of them counted, or none.
// Envoy's descriptors are decided so (grpc/envoy-decisions.ts); docs/design.md, "Several limits
// of one request", says why each rule keeps the limits.
import type { CounterIncrement, CounterStore } from '../store/counter-store.js';
import { repeatDenial } from './cached-denial.js';
import { FROM_DENIED_CACHE, unansweredBy, type HowDecided } from './check-call.js';
import { eventPlan, validCost, validFeature, type CheckRequest } from './check-request.js';
import { decide, degradedDecision, type Decision, type LimitCounts } from './decision.js';
import type { FeatureCache, FeatureState } from './feature-cache.js';
import type { CountsSnapshot } from './feature-window.js';
import type { EventPlan } from './plan.js';

/** A check of checkTogether answered by the store call of another check of the same counter. */
const SHARED_CALL: HowDecided = { fromDeniedCache: false, keysRead: 0, settledMiss: false };

/** One check of a request decided with others (see Limiter.checkTogether). */
export interface TogetherCheck extends CheckRequest {
  /** Decided without counting: whether a request of `cost` has room now. Default false. */
  readonly peek?: boolean;
  /**
   * Whether its denial denies the request. Default true. A check not enforced (a shadow
   * limit) is decided as if it were and counted only when its limits allow it, so its
   * counters hold what enforcing it would; it never denies the others.
   */
  readonly enforced?: boolean;
}

export interface TogetherDecision {
  /** Every enforced check was allowed, so the request counted. */
  readonly allowed: boolean;
  /**
   * Each check's decision by its own limits, in order. A check its limits allow, in a request
   * another check denied, shows its counts without its cost (nothing was counted).
   */
  readonly checks: readonly Decision[];
  /** On a deny: the longest retryAfter of the enforced checks denied. */
  readonly retryAfter?: number;
}

/** A check of checkTogether, validated, with its feature's state. */
interface TogetherItem {
  readonly plan: EventPlan;
  readonly feature: string;
  readonly cost: number;
  readonly state: FeatureState;
  readonly nowMs: number;
  readonly peek: boolean;
  readonly enforced: boolean;
  /** The cost exceeds a limit: no request of it can ever be allowed. */
  readonly impossible: boolean;
  readonly repeated: Decision | undefined;
}

/** The checks of one request that ask about one counter: the store is asked once for all of them. */
interface CounterAsk {
  /** The first of them: its plan, state and time are theirs. */
  readonly lead: TogetherItem;
  /** What the request counts there: the costs of its counting checks, summed (0: it only peeks). */
  cost: number;
  /** The cost each of its peeks asks room for. */
  readonly peekCosts: number[];
}

/** What the store said about one counter of checkTogether, decided at once (its window is shared). */
interface TogetherAnswer {
  /** For the counter's summed cost. */
  readonly decision: Decision;
  /** Each peek's, in the order of CounterAsk.peekCosts, on the counts before the request. */
  readonly peeks: readonly Decision[];
  readonly how: HowDecided;
  /** The increments it made, known to have reached the store. */
  readonly increments?: readonly CounterIncrement[];
  /** The same counts decided without its cost, for when the request is denied by another check. */
  readonly uncounted?: Decision;
  /** Its counts, for the exact retryAfter of its denial. */
  readonly counts?: CountsSnapshot;
}

/** What checkTogether needs of the limiter it belongs to (createLimiter builds it). */
export interface TogetherCore {
  readonly plans: ReadonlyMap<string, EventPlan>;
  readonly features: FeatureCache;
  readonly store: CounterStore;
  /** Now, in milliseconds, by the clock of the server holding `base`'s counters. */
  readonly nowFor: (base: string) => number;
  /** The store's answer, or undefined when it cannot answer in time. */
  readonly ask: <T>(call: Promise<T>, plan: EventPlan) => Promise<T | undefined>;
  /** A denial with its exact retryAfter, remembered while its answer cannot change. */
  readonly denial: (
    decision: Decision,
    counted: CountsSnapshot,
    plan: EventPlan,
    state: FeatureState,
    cost: number,
    nowMs: number,
  ) => Promise<Decision>;
  /** Tells onDecision how a decision was reached, and returns it. */
  readonly observed: (
    plan: EventPlan,
    feature: string,
    kind: 'check' | 'peek',
    decision: Decision,
    how: HowDecided,
  ) => Decision;
  /** A lone check of `cost`: counted when every limit has room, observed. */
  readonly count: (
    plan: EventPlan,
    state: FeatureState,
    feature: string,
    cost: number,
    nowMs: number,
  ) => Promise<Decision>;
  readonly onRollbackError?: ((error: unknown) => void) | undefined;
}

/** Limiter.checkTogether over `core`. */
export function createCheckTogether(
  core: TogetherCore,
): (checks: readonly TogetherCheck[]) => Promise<TogetherDecision> {
  const { plans, features, store, nowFor, ask, denial, observed, count, onRollbackError } = core;

  /** A check of checkTogether, validated before anything is counted. */
  function togetherItem(check: TogetherCheck): TogetherItem {
    const plan = eventPlan(plans, check.event);
    const feature = validFeature(check.feature);
    // Any positive cost is a question; one beyond a limit is answered "never" without counting.
    const cost =
      check.cost === undefined || check.cost > plan.maxCost
        ? validCost(check.cost, { ...plan, maxCost: Infinity })
        : validCost(check.cost, plan);
    const impossible = cost > plan.maxCost;
    const state = features.state(plan, feature);
    const nowMs = nowFor(state.base);
    return {
      plan,
      feature,
      cost,
      state,
      nowMs,
      peek: check.peek === true || impossible,
      enforced: check.enforced !== false,
      impossible,
      repeated: repeatDenial(state.denial, cost, nowMs),
    };
  }

  /**
   * One counter's store call for the checks of a request that ask about it, decided as soon as it
   * answers: `cost` (their counting costs summed) is incremented when `counting`, else only read;
   * each of `peekCosts` is decided on the counts before the request.
   */
  async function answerTogether(item: TogetherItem, asked: CounterAsk, counting: boolean): Promise<TogetherAnswer> {
    const { plan, state, nowMs } = item;
    const { cost, peekCosts } = asked;
    const window = features.windowAt(state, plan, Math.floor(nowMs / 1000));
    const reads = window.reads;
    let how: HowDecided = {
      keysRead: reads.keys.length,
      settledMiss: window.readsSettled(reads),
      fromDeniedCache: false,
    };
    let counts: readonly LimitCounts[] | undefined;
    let increments: readonly CounterIncrement[] | undefined;
    if (counting) {
      increments = window.increments(cost);
      // As a lone check: a store that never answers keeps the increment only where its rule admits.
      const answer = await ask(store.incrementAndRead(increments, reads.keys, unansweredBy(plan.onStoreError)), plan);
      if (answer) counts = window.fill(reads, answer.read, answer.incremented, cost);
    } else {
      const keys = [...reads.keys, ...window.currentKeys];
      how = { ...how, keysRead: keys.length };
      const answer = await ask(store.incrementAndRead([], keys), plan);
      if (answer) counts = window.fill(reads, answer.read, answer.read.slice(reads.keys.length), 0);
    }
    if (!counts) {
      const degraded = degradedDecision(plan.onStoreError);
      return { decision: degraded, peeks: peekCosts.map(() => degraded), how };
    }
    const decision = decide(counts, { cost, nowMs, kind: counting ? 'check' : 'peek' });
    const peeks = peekCosts.map((peekCost) => decide(counts, { cost: peekCost, nowMs, kind: 'peek' }));
    return {
      decision,
      peeks,
      how,
      ...(increments ? { increments, uncounted: decide(counts, { cost, nowMs, kind: 'peek' }) } : {}),
      ...(decision.allowed && peeks.every((peek) => peek.allowed) ? {} : { counts: window.snapshot() }),
    };
  }

  function checkAlone(item: TogetherItem): Promise<TogetherDecision> {
    const decided = item.repeated
      ? Promise.resolve(observed(item.plan, item.feature, 'check', item.repeated, FROM_DENIED_CACHE))
      : count(item.plan, item.state, item.feature, item.cost, item.nowMs);
    return decided.then((decision): TogetherDecision => {
      const { allowed, retryAfter } = decision;
      return retryAfter === undefined || allowed
        ? { allowed, checks: [decision] }
        : { allowed, checks: [decision], retryAfter };
    });
  }

  async function countTogether(items: readonly TogetherItem[]): Promise<TogetherDecision> {
    // A remembered denial of an enforced check denies the request: the others are only read.
    const denied = items.some((item) => item.enforced && item.repeated);
    // The checks of one counter (one event and feature) are one store call: their counting costs
    // summed, so each sees the others' (a limit of 1 asked twice is over it, and a denial is
    // remembered for what the request asked), and their peeks see the counts before the request.
    const asks = new Map<string, CounterAsk>();
    const askOf = items.map((item): { asked: CounterAsk; peekIndex: number; lead: boolean } | undefined => {
      if (item.repeated) return undefined;
      const key = JSON.stringify([item.plan.event, item.feature]);
      let asked = asks.get(key);
      const lead = asked === undefined;
      if (!asked) {
        asked = { lead: item, cost: 0, peekCosts: [] };
        asks.set(key, asked);
      }
      if (!item.peek) asked.cost += item.cost;
      return { asked, peekIndex: item.peek ? asked.peekCosts.push(item.cost) - 1 : -1, lead };
    });
    const counters = [...asks.values()];
    const answered = await Promise.all(
      counters.map((asked) =>
        answerTogether(
          asked.lead,
          asked.cost > 0 ? asked : { ...asked, cost: asked.lead.cost },
          asked.cost > 0 && !denied,
        ),
      ),
    );
    const answers = new Map(counters.map((asked, i) => [asked, answered[i] as TogetherAnswer]));
    // Each check's decision by its own limits (a counting one's: by what the request counts there).
    const own = items.map((item, i): Decision => {
      const place = askOf[i];
      if (!place) return item.repeated as Decision;
      const answer = answers.get(place.asked) as TogetherAnswer;
      return item.peek ? (answer.peeks[place.peekIndex] as Decision) : answer.decision;
    });
    const allowed = items.every((item, i) => !item.enforced || own[i]?.allowed === true);
    // Nothing of a denied request stays counted, nor a shadow check beyond its limits. Increments
    // whose call got no answer are the store's to keep or take back, by the check's own rule.
    const takeBack = counters.flatMap((asked) => {
      const answer = answers.get(asked);
      return answer?.increments && (!allowed || !answer.decision.allowed)
        ? answer.increments.map(({ key }) => ({ key, delta: asked.cost }))
        : [];
    });
    if (takeBack.length > 0) await store.decrement(takeBack).catch((error: unknown) => onRollbackError?.(error));
    // A counter's denial of what the request counted there is remembered once.
    const counterDenials = new Map<CounterAsk, Promise<Decision>>();
    const checks = await Promise.all(
      items.map(async (item, i): Promise<Decision> => {
        const place = askOf[i];
        const answer = place && answers.get(place.asked);
        const decision = own[i] as Decision;
        let final = decision;
        if (item.impossible) final = { allowed: false, limits: decision.limits };
        else if (!decision.allowed && place && answer?.counts) {
          const { counts } = answer;
          if (item.peek) final = await denial(decision, counts, item.plan, item.state, item.cost, item.nowMs);
          else {
            let remembered = counterDenials.get(place.asked);
            if (!remembered) {
              remembered = denial(decision, counts, item.plan, item.state, place.asked.cost, item.nowMs);
              counterDenials.set(place.asked, remembered);
            }
            final = await remembered;
          }
        } else if (!allowed && !item.peek && answer?.uncounted) final = answer.uncounted;
        // A check of a denied request counted nothing: observed as the denial it was.
        const seen = !allowed && final.allowed && !item.peek ? { ...final, allowed: false } : final;
        // The keys a counter's call read are told once, with its first check.
        const how = !place ? FROM_DENIED_CACHE : place.lead ? (answer as TogetherAnswer).how : SHARED_CALL;
        observed(item.plan, item.feature, item.peek ? 'peek' : 'check', seen, how);
        return final;
      }),
    );
    if (allowed) return { allowed, checks };
    let retryAfter: number | undefined;
    checks.forEach((decision, i) => {
      if (items[i]?.enforced && !decision.allowed && decision.retryAfter !== undefined)
        retryAfter = Math.max(retryAfter ?? 0, decision.retryAfter);
    });
    return retryAfter === undefined ? { allowed, checks } : { allowed, checks, retryAfter };
  }

  return (checks) => {
    try {
      // Nothing to decide is a caller's bug, not a client's request.
      if (checks.length === 0) throw new RangeError('checkTogether takes at least one check');
      const items = checks.map(togetherItem);
      const [only] = items;
      // A lone enforced check that counts is a plain check: one store call, one async frame.
      if (items.length === 1 && only?.enforced && !only.peek) return checkAlone(only);
      return countTogether(items);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  };
}
