// The one check step every surface composes (check, peek, batch items, checks together, lease
// takes, Envoy's descriptors, /gate): validated items grouped by counter, one store call per
// counter and round, a pure decision over the counts, and one follow-up for denials. Rounds:
//
//   count: increment and read in one call. Allowed by every enforced check: done (the hot path,
//          one round trip). Denied: take the increments back, pause, and read, since the counts
//          may have held other requests' increments that are being taken back too.
//   read:  counts only. Room: count again. No room, and the counts as the last look saw them a
//          pause before: the denial stands (no one was counting or taking back meanwhile, so
//          what fills the window was admitted), with its exact retryAfter, remembered. No
//          room but the counts moved: pause longer and read again.
//
// A request that memory says will find no room (a denial not yet released, or too little room
// left this second) starts with a read, so that requests bound to be refused never add their
// cost to counts that others decide on. docs/design.md, "Exact in both directions", says why.
import { StoreMovedError, StoreUnavailableError, type IncrementAndReadResult } from '../store/counter-store.js';
import { repeatDenial, shortOfRoom } from './cached-denial.js';
import { FROM_DENIED_CACHE, type CheckContext, type HowDecided } from './check-context.js';
import type { CheckItem, LeaseRecord } from './check-request.js';
import { counterCall, countsOf, type CounterCall, type RecordWrite, type RoundMode } from './counter-call.js';
import { decide, degradedDecision, listedDecision, shadowDecision, windowTotals, type Decision } from './decision.js';
import { exactDenial, takeBack, unconfirmedDenial, type DeniedCounts } from './denial.js';
import type { FeatureState } from './feature-cache.js';
import { leaseId, leaseUnitsKey, type TakenLease } from './lease.js';
import type { EventPlan } from './plan.js';

/**
 * Count rounds, and reads, a request may take before its denial is given up on as unconfirmed.
 * Measured: bursts of 150 requests of costs 1 to 12 racing for the last room of one limit from
 * two instances never needed more (scripts/bench/exactness.ts, test/exactness.test.ts).
 */
export const MAX_COUNT_ROUNDS = 5;
const MAX_READS = 8;
/** The first pause before a denied request reads the counts again, in milliseconds; it doubles with each look, up to LOOK_AGAIN_MAX_MS. */
const LOOK_AGAIN_MS = 1;
const LOOK_AGAIN_MAX_MS = 16;
/** The longest a pause waits for take-backs as slow as the last round (see pauseBeforeLookingAgain). */
const LOOK_AGAIN_SLOW_ROUND_MAX_MS = 64;
/** How often one round's call is built again because its server failed over (a second server failing meanwhile is rare). */
const MAX_MOVES = 2;

/** A check of a counter answered by the call of an earlier check of the same counter, or by a list: nothing read. */
const SHARED_CALL: HowDecided = { fromDeniedCache: false, keysRead: 0, settledMiss: false };

/** What the step decided for a request. */
export interface StepOutcome {
  /** Every enforced check was allowed, so the request counted. */
  readonly allowed: boolean;
  /**
   * Each check's decision by its own limits, in order. A check its limits allow, in a request
   * another check denied, shows its counts without its cost (nothing was counted).
   */
  readonly decisions: readonly Decision[];
  /** On a deny: the longest retryAfter of the enforced checks denied. */
  readonly retryAfter: number | undefined;
  /** What the request counted for each check: its cost (a lease: the units it took), or 0. */
  readonly counted: readonly number[];
  /** What an allowed lease took. */
  readonly lease: TakenLease | undefined;
}

/** One counter of a request (an event and a feature), and what the request asks of it. */
interface Counter {
  readonly plan: EventPlan;
  readonly state: FeatureState;
  /** The second the request found it at, by its server's clock. */
  readonly second: number;
  /** When the request found it: the time of its first round, which follows at once (the clock is read once). */
  foundAtMs: number | undefined;
  /** What the request counts here when allowed: its counting checks' costs summed (a lease: the units it takes now). */
  cost: number;
  /** A lease: takes what remains, from 1 up to `cost`. */
  readonly upTo: boolean;
  readonly record: LeaseRecord | undefined;
  /** A lease's id in its last count round, and that round's time. */
  leaseId: string | undefined;
  countedAtMs: number;
  /** The costs its peeks ask room for, in the order of the request's peeks of it. */
  readonly peekCosts: number[];
  /** A lone check's denial repeated from memory: the counter is not asked. */
  repeated: Decision | undefined;
  /** Keys read over every round, and whether any round read settled buckets (for metrics). */
  keysRead: number;
  settledMiss: boolean;
}

/** One counter's answer in one round, decided as soon as it came. */
interface CounterRound {
  /** For the counter's cost: counted (a count round) or asked (a read round). */
  readonly decision: Decision;
  /** A count round's counts decided without its cost: what it shows when the request is refused. */
  readonly uncounted: Decision | undefined;
  readonly peeks: readonly Decision[];
  /** The call, when it counted and its increments reached the store. */
  readonly counted: CounterCall | undefined;
  /** Its counts, when something was denied: for the exact retryAfter. */
  readonly denied: Omit<DeniedCounts, 'cost'> | undefined;
  /** What each limit's window held before the request, when something was denied. */
  readonly totals: readonly number[] | undefined;
}

/** What each counter's windows held before the request, at one round: compared to see whether the counts move. */
type Look = readonly (readonly number[] | undefined)[];

function lookOf(rounds: readonly CounterRound[]): Look {
  return rounds.map((round) => round.totals);
}

function sameLook(a: Look, b: Look): boolean {
  return a.every((totals, i) => {
    const other = b[i];
    return totals === undefined || other === undefined
      ? totals === other
      : totals.length === other.length && totals.every((total, j) => total === other[j]);
  });
}

/** A request as the step works on it: its counters, and where each check sits among them. */
interface StepRequest {
  readonly items: readonly CheckItem[];
  readonly counters: readonly Counter[];
  /** Per check, the index of its counter. */
  readonly counterOf: readonly number[];
  /** Per check, its place among its counter's peeks; -1 when it counts. */
  readonly peekOf: readonly number[];
}

/**
 * Decides `items` as one request: allowed when every enforced check is; then each counting
 * check's cost is counted, otherwise none is. Tells `context.onDecision` of each check.
 */
export function decideItems(context: CheckContext, items: readonly CheckItem[]): Promise<StepOutcome> {
  if (items.length !== 1) return runRounds(context, stepRequest(context, items));
  // A lone check (a lease take, a check-together of one) asks memory first, as decideItem does.
  const item = items[0] as CheckItem;
  const state = context.features.state(item.plan, item.feature);
  const nowMs = context.now(state.base);
  const repeated = remembered(state, item, nowMs);
  if (!repeated) return runRounds(context, stepRequestOfOne(context, items, state, nowMs));
  tell(context, item, repeated, FROM_DENIED_CACHE);
  const retryAfter = item.enforced ? repeated.retryAfter : undefined;
  return Promise.resolve({ allowed: false, decisions: [repeated], retryAfter, counted: [0], lease: undefined });
}

/**
 * Decides one check (a check, a peek, a batch's item, /gate): decideItems' decision of it. A
 * denial still held in memory is answered here, before anything else is built: it is what a
 * client far over its limit costs.
 */
export function decideItem(context: CheckContext, item: CheckItem): Promise<Decision> {
  if (item.listed) {
    const decision = listedDecision(item.listed);
    tell(context, item, decision, SHARED_CALL);
    return Promise.resolve(decision);
  }
  const state = context.features.state(item.plan, item.feature);
  const nowMs = context.now(state.base);
  const repeated = remembered(state, item, nowMs);
  if (!repeated) return runRounds(context, stepRequestOfOne(context, [item], state, nowMs)).then(firstDecision);
  tell(context, item, repeated, FROM_DENIED_CACHE);
  return Promise.resolve(repeated);
}

/** A denial of `item` that memory still holds at `nowMs`: a lease's, when even one unit was refused. */
function remembered(state: FeatureState, item: CheckItem, nowMs: number): Decision | undefined {
  return item.impossible ? undefined : repeatDenial(state.denial, item.upTo ? 1 : item.cost, nowMs);
}

function firstDecision(outcome: StepOutcome): Decision {
  return outcome.decisions[0] as Decision;
}

async function runRounds(context: CheckContext, request: StepRequest): Promise<StepOutcome> {
  const { counters } = request;
  let mode = startMode(request);
  let countRounds = 0;
  let reads = 0;
  // What each counter's window held before the request at the last denied look.
  let lastLook: Look | undefined;
  for (;;) {
    const sentAt = performance.now();
    const rounds =
      counters.length === 1
        ? [await roundOf(context, counters[0] as Counter, mode, false)]
        : await Promise.all(counters.map((counter) => roundOf(context, counter, mode, true)));
    const allowed = enforcedAllowed(request, rounds);
    if (mode === 'count') countRounds++;
    else reads++;
    if (allowed && mode === 'count') return finish(context, request, rounds, { allowed, last: mode, gaveUp: false });
    if (allowed) {
      // Room on a read: count it now, a lease only what remains.
      mode = 'count';
      continue;
    }
    // How long this process and the store took to answer (read only on a denial, off the hot
    // path): what another request's take-back may take too, here or on another instance.
    const roundMs = performance.now() - sentAt;
    const counted: CounterCall[] = [];
    for (const round of rounds) if (round.counted) counted.push(round.counted);
    if (counted.length > 0) await takeBack(context, counted);
    // Decided without counts (the event's onStoreError rule, a denial in memory, a cost beyond a limit): it stands.
    if (deniedForSure(request, rounds)) return finish(context, request, rounds, { allowed, last: mode, gaveUp: false });
    const look = lookOf(rounds);
    // No room on a read, and the counts as they were a pause before: no other request was
    // counting or taking back meanwhile, so what fills the window was admitted. The denial stands.
    if (mode === 'read' && lastLook !== undefined && sameLook(look, lastLook))
      return finish(context, request, rounds, { allowed, last: mode, gaveUp: false });
    if (countRounds >= MAX_COUNT_ROUNDS || reads >= MAX_READS)
      return finish(context, request, rounds, { allowed, last: mode, gaveUp: true });
    lastLook = look;
    mode = 'read';
    await pauseBeforeLookingAgain(reads + countRounds, roundMs);
  }
}

/** Groups the checks of a request of several by counter (one per event and feature), each with its state and what the request asks of it. */
function stepRequest(context: CheckContext, items: readonly CheckItem[]): StepRequest {
  const counters: Counter[] = [];
  const counterOf: number[] = [];
  const peekOf: number[] = [];
  const checksOf: number[] = [];
  const byKey = items.length > 1 ? new Map<string, number>() : undefined;
  for (const item of items) {
    const key = byKey && JSON.stringify([item.plan.event, item.feature]);
    let index = key === undefined ? undefined : byKey?.get(key);
    if (index === undefined) {
      index = counters.length;
      counters.push(newCounter(context, item));
      checksOf.push(0);
      if (key !== undefined) byKey?.set(key, index);
    }
    const counter = counters[index] as Counter;
    checksOf[index] = (checksOf[index] ?? 0) + 1;
    counterOf.push(index);
    if (item.counting) {
      // A lease asks one cost: its first, perhaps already shrunk to the room memory knows of.
      if (!(item.upTo && counter.cost > 0)) counter.cost += item.cost;
      peekOf.push(-1);
    } else peekOf.push(counter.peekCosts.push(item.cost) - 1);
  }
  // A counter asked by one check answers a denial of that check still in memory without the
  // store; a lease's, when even one unit was refused.
  counters.forEach((counter, index) => {
    const item = items[counterOf.indexOf(index)] as CheckItem;
    if (checksOf[index] === 1) counter.repeated = repeatedDenial(context, counter, item);
  });
  return { items, counters, counterOf, peekOf };
}

/** Where the only check of a request sits: its counter, the first, as what it counts or its first peek. */
const ONLY_COUNTER: readonly number[] = [0];
const COUNTS: readonly number[] = [-1];
const FIRST_PEEK: readonly number[] = [0];

/**
 * The request of one check, without the bookkeeping of many: memory was asked already
 * (remembered) and held no denial of it.
 */
function stepRequestOfOne(
  context: CheckContext,
  items: readonly CheckItem[],
  state: FeatureState,
  nowMs: number,
): StepRequest {
  const item = items[0] as CheckItem;
  const counter = newCounter(context, item, state, nowMs);
  if (item.counting) {
    if (counter.cost === 0) counter.cost = item.cost;
  } else counter.peekCosts.push(item.cost);
  return { items, counters: [counter], counterOf: ONLY_COUNTER, peekOf: item.counting ? COUNTS : FIRST_PEEK };
}

function repeatedDenial(context: CheckContext, counter: Counter, item: CheckItem): Decision | undefined {
  return remembered(counter.state, item, context.now(counter.state.base));
}

/** A counter for `item`, with the feature's state and the time (each read once, when the caller has them not). */
function newCounter(
  context: CheckContext,
  item: CheckItem,
  state = context.features.state(item.plan, item.feature),
  nowMs = context.now(state.base),
): Counter {
  const second = Math.floor(nowMs / 1000);
  // A lease asks at first for no more than the room its last decision this second left.
  const room = state.roomSecond === second ? (state.room ?? 0) : 0;
  return {
    plan: item.plan,
    state,
    second,
    foundAtMs: nowMs,
    cost: item.upTo && item.counting && room >= 1 ? Math.min(item.cost, room) : 0,
    upTo: item.upTo === true,
    record: item.record,
    leaseId: undefined,
    countedAtMs: nowMs,
    peekCosts: [],
    repeated: undefined,
    keysRead: 0,
    settledMiss: false,
  };
}

/**
 * Whether the request counts in its first round, or reads first: it reads when an enforced
 * check cannot pass (its cost beyond a limit, a denial repeated from memory) or memory says it
 * will likely find no room; then none of its checks adds cost that others would see.
 */
function startMode({ items, counters, counterOf }: StepRequest): RoundMode {
  let counting = false;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as CheckItem;
    counting ||= item.counting;
    if (!item.enforced) continue;
    if (item.impossible) return 'read';
    const counter = counters[counterOf[i] as number] as Counter;
    if (counter.repeated) return 'read';
    if (!item.counting) continue;
    const { state, second } = counter;
    const asked = counter.upTo ? 1 : counter.cost;
    if (shortOfRoom(state.denial, asked, second)) return 'read';
    if (state.roomSecond === second && state.room !== undefined && asked > state.room) return 'read';
  }
  // A request that counts nothing (peeks) only reads.
  return counting ? 'count' : 'read';
}

/** One counter's store call in this round, decided as soon as it answers (its window is shared). */
async function roundOf(
  context: CheckContext,
  counter: Counter,
  mode: RoundMode,
  several: boolean,
): Promise<CounterRound> {
  const { plan, state, peekCosts, repeated } = counter;
  if (repeated)
    return {
      decision: repeated,
      uncounted: undefined,
      peeks: [repeated],
      counted: undefined,
      denied: undefined,
      totals: undefined,
    };
  const counting = mode === 'count' && counter.cost > 0;
  let nowMs: number;
  let second: number;
  let window: ReturnType<CheckContext['features']['windowAt']>;
  let call: ReturnType<typeof counterCall>;
  let answer: IncrementAndReadResult;
  for (let moves = 0; ; moves++) {
    nowMs = counter.foundAtMs ?? context.now(state.base);
    counter.foundAtMs = undefined;
    second = Math.floor(nowMs / 1000);
    window = context.features.windowAt(state, plan, second);
    let record: RecordWrite | undefined;
    if (counting && counter.record) {
      // A lease's units are recorded under an id naming the second they are counted at.
      counter.leaseId = leaseId(second, counter.record.token);
      counter.countedAtMs = nowMs;
      record = { key: leaseUnitsKey(state.base, plan, counter.leaseId), ttlSeconds: counter.record.ttlSeconds };
    }
    call = counterCall(window, counting ? 'count' : 'read', {
      cost: counter.cost,
      onStoreError: plan.onStoreError,
      record,
    });
    counter.keysRead += call.keys.length;
    if (window.readsSettled(call.reads)) counter.settledMiss = true;
    try {
      answer = await context.store.incrementAndRead(call.increments, call.keys, call.options);
      break;
    } catch (error) {
      // The store cannot answer in time: the event's onStoreError rule decides (any other error is a bug).
      if (!(error instanceof StoreUnavailableError)) throw error;
      // Its server failed and its clients moved to another: built again, in buckets timed by that one's clock.
      if (error instanceof StoreMovedError && moves < MAX_MOVES) continue;
      context.onStoreUnavailable?.(error, plan.event);
      const degraded = degradedDecision(plan.onStoreError);
      return {
        decision: degraded,
        uncounted: undefined,
        peeks: peekCosts.map(() => degraded),
        counted: undefined,
        denied: undefined,
        totals: undefined,
      };
    }
  }
  const counts = countsOf(call, answer);
  // A read asks whether the counter's cost fits now (a lease: whether one unit does).
  const asked = !counting && counter.upTo ? 1 : Math.max(1, counter.cost);
  const decision = decide(counts, { cost: asked, nowMs, kind: counting ? 'check' : 'peek' });
  let peeks: Decision[] = NO_PEEKS;
  let denied = !decision.allowed;
  if (peekCosts.length > 0) {
    peeks = peekCosts.map((cost) => decide(counts, { cost, nowMs, kind: 'peek' }));
    denied ||= peeks.some((peek) => !peek.allowed);
  }
  // The least room any limit has left: a request asking more this second reads first.
  let room = Infinity;
  for (const status of decision.limits) if (status.remaining < room) room = status.remaining;
  state.room = room;
  state.roomSecond = second;
  if (!counting && counter.upTo && decision.allowed) counter.cost = Math.min(counter.cost, room);
  return {
    decision,
    uncounted: counting && several ? decide(counts, { cost: asked, nowMs, kind: 'peek' }) : undefined,
    peeks,
    counted: counting ? call : undefined,
    denied: denied ? { plan, state, counts: window.snapshot(), nowMs } : undefined,
    totals: denied ? windowTotals(counts, second) : undefined,
  };
}

const NO_PEEKS: Decision[] = [];

/** A check's decision in a round: its counter's for what the request counts there, or its peek's. */
function ownDecision(request: StepRequest, rounds: readonly CounterRound[], check: number): Decision {
  const round = rounds[request.counterOf[check] as number] as CounterRound;
  const peek = request.peekOf[check] as number;
  return peek === -1 ? round.decision : (round.peeks[peek] as Decision);
}

function enforcedAllowed(request: StepRequest, rounds: readonly CounterRound[]): boolean {
  const { items } = request;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as CheckItem;
    if (!item.enforced) continue;
    if (item.impossible || !ownDecision(request, rounds, i).allowed) return false;
  }
  return true;
}

/**
 * Whether an enforced denial was decided without counts: by the event's onStoreError rule, by a
 * denial in memory, or for a cost beyond a limit. Reading again would not change it.
 */
function deniedForSure(request: StepRequest, rounds: readonly CounterRound[]): boolean {
  return request.items.some((item, i) => {
    if (!item.enforced) return false;
    if (item.impossible) return true;
    const own = ownDecision(request, rounds, i);
    return (
      !own.allowed &&
      (own.degraded === true || request.counters[request.counterOf[i] as number]?.repeated !== undefined)
    );
  });
}

/**
 * A moment for requests in flight elsewhere to land or be taken back before the counts are read
 * again: doubling with each look and jittered, so that requests racing for the same room spread
 * out, and never shorter than two of the last round's time, so that a take-back as slow as that
 * round (a loaded process, a slow network) lands first. Then, once this process has read what
 * its sockets hold: a timer fires before the loop polls, and another request's increment
 * answered meanwhile would be taken back only after this one reads again, counted in its look.
 */
async function pauseBeforeLookingAgain(looks: number, roundMs: number): Promise<void> {
  const backoffMs = Math.min(LOOK_AGAIN_MS * 2 ** (looks - 1), LOOK_AGAIN_MAX_MS) * (0.5 + Math.random());
  await new Promise((resolve) =>
    setTimeout(resolve, Math.max(backoffMs, Math.min(2 * roundMs, LOOK_AGAIN_SLOW_ROUND_MAX_MS))),
  );
  await new Promise<void>((resolve) => {
    setImmediate(resolve);
  });
}

/**
 * The request's answer after its last round: shadow checks over their limits taken back from
 * an allowed request, each denial's exact retryAfter, and every check told to onDecision. A
 * denial is remembered only when the last round read (its counts held none of the request's
 * own increments); a request that `gaveUp` is told to ask again in a second.
 */
function finish(
  context: CheckContext,
  request: StepRequest,
  rounds: readonly CounterRound[],
  settled: { allowed: boolean; last: RoundMode; gaveUp: boolean },
): StepOutcome | Promise<StepOutcome> {
  const { items } = request;
  // The hot path: one check, allowed.
  if (
    settled.allowed &&
    items.length === 1 &&
    request.peekOf[0] === -1 &&
    (rounds[0] as CounterRound).decision.allowed
  ) {
    const decision = (rounds[0] as CounterRound).decision;
    const outcome = outcomeOf(request, rounds, [decision], true);
    observe(context, request, outcome.decisions, true);
    return outcome;
  }
  return finishFollowingUp(context, request, rounds, settled);
}

async function finishFollowingUp(
  context: CheckContext,
  request: StepRequest,
  rounds: readonly CounterRound[],
  { allowed, last, gaveUp }: { allowed: boolean; last: RoundMode; gaveUp: boolean },
): Promise<StepOutcome> {
  const { items, counters, counterOf, peekOf } = request;
  if (allowed) {
    // Nothing of a shadow check beyond its limits stays counted.
    const over: CounterCall[] = [];
    for (const round of rounds) if (round.counted && !round.decision.allowed) over.push(round.counted);
    if (over.length > 0) await takeBack(context, over);
  }
  const remember = last === 'read' && !gaveUp;
  // A counter's denial of what the request counted there is worked out, and remembered, once.
  const counterDenials: (Promise<Decision> | undefined)[] = [];
  const decisions = await Promise.all(
    items.map(async (item, i): Promise<Decision> => {
      const index = counterOf[i] as number;
      const counter = counters[index] as Counter;
      const round = rounds[index] as CounterRound;
      const peek = peekOf[i] as number;
      const own = ownDecision(request, rounds, i);
      // A cost beyond the limit never passes: no time to wait says when it would.
      if (item.impossible) return { allowed: false, limits: own.limits };
      if (own.allowed) return !allowed && peek === -1 && round.uncounted ? round.uncounted : own;
      if (own.degraded || !round.denied) return own;
      if (peek !== -1) return exactDenial(context, own, { ...round.denied, cost: item.cost }, { remember });
      if (gaveUp) return unconfirmedDenial(own);
      return (counterDenials[index] ??= exactDenial(
        context,
        own,
        // A lease is refused when not even one unit fits.
        { ...round.denied, cost: counter.upTo ? 1 : counter.cost },
        { remember },
      ));
    }),
  );
  const outcome = outcomeOf(request, rounds, decisions, allowed);
  observe(context, request, decisions, allowed);
  return outcome;
}

function outcomeOf(
  request: StepRequest,
  rounds: readonly CounterRound[],
  decisions: readonly Decision[],
  allowed: boolean,
): StepOutcome {
  const { items, counters, counterOf, peekOf } = request;
  let retryAfter: number | undefined;
  let lease: TakenLease | undefined;
  // The hot path: one check, allowed, no lease.
  const [only] = items;
  if (items.length === 1 && allowed && only && !only.record)
    return { allowed, decisions, retryAfter, counted: [only.counting ? only.cost : 0], lease };
  const counted = items.map((item, i) => {
    const decision = decisions[i] as Decision;
    if (!allowed && item.enforced && !decision.allowed && decision.retryAfter !== undefined)
      retryAfter = Math.max(retryAfter ?? 0, decision.retryAfter);
    const index = counterOf[i] as number;
    if (!allowed || peekOf[i] !== -1 || !rounds[index]?.decision.allowed) return 0;
    const counter = counters[index] as Counter;
    // A lease's or a reservation's units, recorded under an id.
    if (item.record && counter.leaseId !== undefined)
      lease = { id: counter.leaseId, units: counter.cost, countedAtMs: counter.countedAtMs };
    return item.upTo ? counter.cost : item.cost;
  });
  return { allowed, decisions, retryAfter, counted, lease };
}

/** Tells onDecision of each check: a counter's call with its first check, a check of a refused request as refused. */
function observe(context: CheckContext, request: StepRequest, decisions: readonly Decision[], allowed: boolean): void {
  if (!context.onDecision) return;
  const { items, counters, counterOf } = request;
  const told: boolean[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as CheckItem;
    const index = counterOf[i] as number;
    const counter = counters[index] as Counter;
    const decision = decisions[i] as Decision;
    const lead = told[index] !== true;
    told[index] = true;
    const how: HowDecided = counter.repeated
      ? FROM_DENIED_CACHE
      : lead
        ? { fromDeniedCache: false, keysRead: counter.keysRead, settledMiss: counter.settledMiss }
        : SHARED_CALL;
    tell(
      context,
      item,
      !allowed && decision.allowed && item.counting ? { ...decision, allowed: false } : decision,
      how,
    );
  }
}

/** Tells onDecision of one check's decision, and how it was reached. */
function tell(context: CheckContext, item: CheckItem, decision: Decision, how: HowDecided): void {
  if (item.told) {
    item.told(decision, how);
    return;
  }
  // Fields named, not spread: this runs for every decision, the repeated denials of an abusive client too.
  context.onDecision?.({
    event: item.plan.event,
    feature: item.feature,
    kind: item.counting ? 'check' : 'peek',
    // A check not enforced (Envoy's shadow_mode) refused nothing: told as what it would have refused.
    decision: item.enforced || decision.allowed ? decision : shadowDecision(decision, item.cost, item.impossible),
    fromDeniedCache: how.fromDeniedCache,
    keysRead: how.keysRead,
    settledMiss: how.settledMiss,
  });
}
