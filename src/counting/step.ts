// The one check step every surface composes (check, peek, batch items, checks together, lease
// takes, reservations, Envoy's descriptors, /gate): checks resolved into items (resolve.ts)
// grouped by counter, one store call per counter and round through the counter's algorithm
// (algorithms/), all-or-nothing across counters, and every check reported once (report.ts).
// Rounds:
//
//   count: count and read in one call. Allowed by every enforced check: done (the hot path,
//          one round trip). Denied: give back what was counted, pause, and read, since the
//          counts may have held other requests' costs that are being given back too.
//   read:  counts only. Room: count again. No room, and the counts as the last look saw them a
//          pause before: the denial stands (no one was counting or giving back meanwhile, so
//          what fills the window was admitted), with its exact retryAfter, remembered. No
//          room but the counts moved: pause longer and read again.
//
// Counts over a limit are the exception: what was admitted fits in the limit, so while others
// count beside the request they hold cost still on its way back, however still they stand (an
// instance slow to hear that its request was refused, or Memcached slow to apply its take-back
// behind this request's read on another connection). Their sameness confirms nothing: the
// request pauses longer with each look and looks again, until they come within the limits, or
// have stood still for as long as the store's deadline (algorithms/windows/overfull.ts). Past
// its last read it is refused unconfirmed: asked again in a second, nothing remembered.
// docs/design.md, "Exact in both directions", says what no reading can tell apart.
//
// A request that memory says will find no room (a denial not yet released, or too little room
// left this second) starts with a read, so that requests bound to be refused never add their
// cost to counts that others decide on. docs/design.md, "Exact in both directions", says why.
// A listed check is decided by its list, counting nothing; a check with shadow limits beside
// its enforced ones brings them as a companion item, decided with it, its answer saying what
// they would have done.
import { partOf } from './algorithms/parts.js';
import type { AlgorithmPart, Counter, CounterRound, RoundMode } from './algorithms/part.js';
import type { Context } from './context.js';
import { overLimits, shadowDecision, unconfirmedDenial, type Decision } from './decision.js';
import type { CheckItem } from './check-item.js';
import type { EventPlan, Listed } from './plan-types.js';
import { FROM_MEMORY, NOTHING_READ, reportDecision, type HowDecided } from './report.js';

/**
 * Count rounds, and reads, a request may take before its denial is given up on as unconfirmed.
 * Measured: bursts of 150 requests of costs 1 to 12 racing for the last room of one limit from
 * two instances never needed more (scripts/bench/exactness.ts, test/exactness.test.ts).
 */
export const MAX_COUNT_ROUNDS = 5;
export const MAX_READS = 8;
/**
 * The first pause after a look at counts over a limit, in milliseconds; it doubles with each
 * look that finds them the same, up to LOOK_AGAIN_SLOW_ROUND_MAX_MS: their take-backs are late.
 */
const OVERFULL_PAUSE_MS = 16;
/** The first pause before a denied request reads the counts again, in milliseconds; it doubles with each look, up to LOOK_AGAIN_MAX_MS. */
const LOOK_AGAIN_MS = 1;
const LOOK_AGAIN_MAX_MS = 16;
/** The longest a pause waits for take-backs as slow as the last round (see pauseBeforeLookingAgain). */
const LOOK_AGAIN_SLOW_ROUND_MAX_MS = 64;

/** What the step decided for a request. */
export interface StepOutcome {
  /** Every enforced check was allowed, so the request counted. */
  readonly allowed: boolean;
  /**
   * Each check's answer by its own limits, in order. A check its limits allow, in a request
   * another check denied, shows its counts without its cost (nothing was counted).
   */
  readonly decisions: readonly Decision[];
  /** On a deny: the longest retryAfter of the enforced checks denied. */
  readonly retryAfter: number | undefined;
  /** What the request counted for each check (a lease: the units it took), or 0, and when. */
  readonly counted: readonly Counted[];
  /** Per check, whether its denial was repeated from memory without the store; absent when none was. */
  readonly fromMemory?: readonly boolean[];
}

/** The fromMemory of a lone check denied from memory. */
const REPEATED_ALONE: readonly boolean[] = [true];

/** What a check counted, and when (milliseconds, by its server's clock): a record's units and second. */
export interface Counted {
  readonly cost: number;
  readonly atMs: number;
}

const NOTHING_COUNTED: Counted = Object.freeze({ cost: 0, atMs: 0 });

/** The state of every part's client carries its keys' base: the clock is read by it. */
interface KeyedState {
  readonly base: string;
}

/** A counter of the step: the part's counter, with the part that counts it. */
interface StepCounter extends Counter<EventPlan, KeyedState> {
  readonly part: AlgorithmPart;
}

/** A request as the step works on it: its items (each check, then companions), their counters. */
interface StepRequest {
  readonly items: readonly CheckItem[];
  /** How many of `items` are the request's checks; companions follow them. */
  readonly checks: number;
  /** Per companion (items past `checks`), the check it belongs to. */
  readonly companionOf: readonly number[];
  readonly counters: readonly StepCounter[];
  /** Per item, the index of its counter; -1 when a list decides it. */
  readonly counterOf: readonly number[];
  /** Per item, its place among its counter's peeks; -1 when it counts. */
  readonly peekOf: readonly number[];
}

/** What each counter held before the request, at one round: compared to see whether the counts move. */
type Look = readonly (readonly number[] | undefined)[];

/**
 * Decides `checks` as one request: allowed when every enforced check is; then each counting
 * check's cost is counted, otherwise none is. Reports each check once.
 */
export function decideChecks(context: Context, checks: readonly CheckItem[]): Promise<StepOutcome> {
  const only = checks[0] as CheckItem;
  if (checks.length === 1 && only.listed) {
    const decision = decidedByList(context, only, only.listed);
    const retryAfter = undefined;
    return Promise.resolve({
      allowed: decision.allowed,
      decisions: [decision],
      retryAfter,
      counted: [NOTHING_COUNTED],
    });
  }
  if (checks.length !== 1 || only.shadow || admitsNothing(only))
    return runRounds(context, stepRequest(context, checks), finish);
  // A lone check asks memory first: a denial still held is what a client far over its limit costs.
  const counter = newCounter(context, only);
  const repeated = remembered(context, counter, only);
  if (!repeated) return runRounds(context, requestOfOne(checks, counter), finish);
  reportDecision(context.onDecision, only, repeated, FROM_MEMORY);
  const retryAfter = only.enforced ? repeated.retryAfter : undefined;
  return Promise.resolve({
    allowed: false,
    decisions: [repeated],
    retryAfter,
    counted: [NOTHING_COUNTED],
    fromMemory: REPEATED_ALONE,
  });
}

/** Decides one check: decideChecks' answer of it, without building the outcome of many. */
export function decideCheck(context: Context, item: CheckItem): Promise<Decision> {
  // A listed client is what a deny list's abuser costs: answered at once.
  if (item.listed) return Promise.resolve(decidedByList(context, item, item.listed));
  if (item.shadow || admitsNothing(item))
    return runRounds(context, stepRequest(context, [item]), finish).then(firstDecision);
  const counter = newCounter(context, item);
  const repeated = remembered(context, counter, item);
  if (!repeated) return runRounds(context, requestOfOne([item], counter), finishOne);
  reportDecision(context.onDecision, item, repeated, FROM_MEMORY);
  return Promise.resolve(repeated);
}

/** A check whose limit is 0 (an Envoy limit of 0 requests): never allowed, whatever the counts, so none is read. */
function admitsNothing(item: CheckItem): boolean {
  return item.plan.maxCost === 0;
}

/** The answer of a check whose limits admit nothing: each over, nothing counted, nothing to wait for. */
function nothingAdmitted(context: Context, item: CheckItem): Decision {
  return {
    allowed: false,
    limits: item.plan.limits.map(({ policy }) => ({
      name: policy.name,
      limit: policy.limit,
      window: policy.window,
      remaining: 0,
      resetSeconds: 0,
    })),
    policyVersion: context.answers.version,
  };
}

/** A lone check a list holds: its list's answer, reported. */
function decidedByList(context: Context, item: CheckItem, listed: Listed): Decision {
  const decision = context.answers.listed(listed);
  reportDecision(context.onDecision, item, decision, NOTHING_READ);
  return decision;
}

function firstDecision(outcome: StepOutcome): Decision {
  return outcome.decisions[0] as Decision;
}

/** A denial of `item` that memory still holds: a lease's, when even one unit was refused. */
function remembered(context: Context, counter: StepCounter, item: CheckItem): Decision | undefined {
  if (item.impossible) return undefined;
  const nowMs = counter.foundAtMs ?? context.now(counter.state.base);
  return counter.part.remembered(context, counter, item.hold === 'lease' ? 1 : item.cost, nowMs);
}

/** What a request's rounds end in: the outcome of every check, or a lone check's decision. */
type Finisher<T> = (
  context: Context,
  request: StepRequest,
  rounds: readonly CounterRound[],
  settled: Settled,
) => T | Promise<T>;

/**
 * With a store no other process counts in, a request alone in its store's rounds
 * (context.storeRounds) need not pause before it looks again: no other request's count can be
 * on its way back (the accuracy lab replays one check at a time). Requests on another store
 * count nothing of its: counted over every store, seven replays side by side paused on each
 * other's rounds, in real time, and took four times as long.
 */
async function runRounds<T>(context: Context, request: StepRequest, finishWith: Finisher<T>): Promise<T> {
  const { storeRounds } = context;
  storeRounds.inRounds++;
  // Counted as in its rounds until its answer is finished: a finish may take back what it counted.
  try {
    let decidedBy: readonly CounterRound[];
    let settled: Settled;
    const { counters } = request;
    let mode = startMode(request);
    let countRounds = 0;
    let reads = 0;
    // What each counter held before the request at the last denied look, and how many looks in a row saw it.
    let lastLook: Look | undefined;
    let sameLooks = 0;
    for (;;) {
      const sentAt = performance.now();
      const rounds =
        counters.length === 1
          ? [await roundOf(context, counters[0] as StepCounter, mode, false)]
          : await Promise.all(counters.map((counter) => roundOf(context, counter, mode, true)));
      const allowed = enforcedAllowed(context, request, rounds);
      if (mode === 'count') countRounds++;
      else reads++;
      if (allowed && mode === 'count') {
        decidedBy = rounds;
        settled = { allowed, last: mode, gaveUp: false };
        break;
      }
      if (allowed) {
        // Room on a read: count it now, a lease only what remains.
        mode = 'count';
        continue;
      }
      // How long this process and the store took to answer (read only on a denial, off the hot
      // path): what another request's take-back may take too, here or on another instance.
      const roundMs = performance.now() - sentAt;
      await undoCounted(context, counters, rounds, () => true);
      // Decided without counts or exactly (the event's onStoreError rule, a list, a denial in
      // memory, a cost beyond a limit, a compare-and-swap): it stands.
      if (deniedForSure(context, request, rounds)) {
        decidedBy = rounds;
        settled = { allowed, last: mode, gaveUp: false };
        break;
      }
      const look = rounds.map((round) => round.look);
      sameLooks = lastLook !== undefined && sameLook(look, lastLook) ? sameLooks + 1 : 1;
      // Others count beside it: increments of theirs may be in the counts, on their way back.
      const contended = context.store.shared || storeRounds.inRounds > 1;
      const overfull = contended && rounds.some((round) => round.overfull === true);
      // No room on a read, and the counts as they were a pause before: no other request was
      // counting or taking back meanwhile, so what fills the window was admitted. The denial
      // stands, unless the counts are over a limit: then some of them are on their way back.
      if (mode === 'read' && sameLooks >= 2 && !overfull) {
        decidedBy = rounds;
        settled = { allowed, last: mode, gaveUp: false };
        break;
      }
      if (countRounds >= MAX_COUNT_ROUNDS || reads >= MAX_READS) {
        decidedBy = rounds;
        settled = { allowed, last: mode, gaveUp: true };
        break;
      }
      lastLook = look;
      mode = 'read';
      if (contended)
        await pauseBeforeLookingAgain(reads + countRounds, roundMs, { overfullLooks: overfull ? sameLooks : 0 });
    }
    const finished = finishWith(context, request, decidedBy, settled);
    return finished instanceof Promise ? await finished : finished;
  } finally {
    storeRounds.inRounds--;
  }
}

/** Gives back what the rounds of the counters `which` accepts counted, each through its part. */
async function undoCounted(
  context: Context,
  counters: readonly StepCounter[],
  rounds: readonly CounterRound[],
  which: (round: CounterRound) => boolean,
): Promise<void> {
  let byPart: Map<AlgorithmPart, unknown[]> | undefined;
  rounds.forEach((round, i) => {
    if (round.counted === undefined || !which(round)) return;
    const { part } = counters[i] as StepCounter;
    byPart ??= new Map();
    const counted = byPart.get(part);
    if (counted) counted.push(round.counted);
    else byPart.set(part, [round.counted]);
  });
  if (byPart) await Promise.all([...byPart].map(([part, counted]) => part.undo(context, counted)));
}

function sameLook(a: Look, b: Look): boolean {
  return a.every((totals, i) => {
    const other = b[i];
    return totals === undefined || other === undefined
      ? totals === other
      : totals.length === other.length && totals.every((total, j) => total === other[j]);
  });
}

/** Groups the items of a request (its checks, then their companions) by counter: one per event and feature. */
function stepRequest(context: Context, checks: readonly CheckItem[]): StepRequest {
  const items: CheckItem[] = [...checks];
  const companionOf: number[] = [];
  checks.forEach((check, i) => {
    if (!check.shadow) return;
    items.push(check.shadow);
    companionOf.push(i);
  });
  const counters: StepCounter[] = [];
  const counterOf: number[] = [];
  const peekOf: number[] = [];
  const checksOf: number[] = [];
  const byKey = new Map<string, number>();
  for (const item of items) {
    if (item.listed || admitsNothing(item)) {
      counterOf.push(-1);
      peekOf.push(-1);
      continue;
    }
    const key = JSON.stringify([item.plan.event, item.feature]);
    let index = byKey.get(key);
    if (index === undefined) {
      index = counters.length;
      counters.push(newCounter(context, item));
      checksOf.push(0);
      byKey.set(key, index);
    }
    const counter = counters[index] as StepCounter;
    checksOf[index] = (checksOf[index] ?? 0) + 1;
    counterOf.push(index);
    // An impossible check is asked as a peek of its cost: it is never counted.
    if (item.counting && !item.impossible) {
      // A lease asks one cost: its first.
      if (!(item.hold === 'lease' && counter.cost > 0)) counter.cost += item.cost;
      peekOf.push(-1);
    } else peekOf.push(counter.peekCosts.push(item.cost) - 1);
  }
  for (const counter of counters) counter.part.prepare(counter);
  // A counter asked by one check answers a denial of that check still in memory without the store.
  counters.forEach((counter, index) => {
    if (checksOf[index] !== 1) return;
    const item = items[counterOf.indexOf(index)] as CheckItem;
    counter.repeated = remembered(context, counter, item);
  });
  return { items, checks: checks.length, companionOf, counters, counterOf, peekOf };
}

/** Where the only check of a request sits: its counter, the first, as what it counts or its first peek. */
const ONLY_COUNTER: readonly number[] = [0];
const COUNTS: readonly number[] = [-1];
const FIRST_PEEK: readonly number[] = [0];
const NO_COMPANIONS: readonly number[] = [];

/** The request of one check without companions, without the bookkeeping of many: memory was asked already. */
function requestOfOne(items: readonly CheckItem[], counter: StepCounter): StepRequest {
  const item = items[0] as CheckItem;
  const counts = item.counting && !item.impossible;
  if (counts) counter.cost = item.cost;
  else counter.peekCosts.push(item.cost);
  counter.part.prepare(counter);
  return {
    items,
    checks: 1,
    companionOf: NO_COMPANIONS,
    counters: [counter],
    counterOf: ONLY_COUNTER,
    peekOf: counts ? COUNTS : FIRST_PEEK,
  };
}

/** A counter for `item`: its part, the client's state there, and the time (read once). */
function newCounter(context: Context, item: CheckItem): StepCounter {
  const part = partOf(item.plan);
  const state = part.state(context, item.plan, item.feature) as KeyedState;
  const nowMs = context.now(state.base);
  return {
    part,
    plan: item.plan,
    feature: item.feature,
    state,
    second: Math.floor(nowMs / 1000),
    foundAtMs: nowMs,
    cost: 0,
    takesWhatRemains: item.hold === 'lease',
    recorded: item.hold !== undefined,
    countedAtMs: nowMs,
    peekCosts: [],
    repeated: undefined,
    keysRead: 0,
    settledMiss: false,
  };
}

/**
 * Whether the request counts in its first round, or reads first: it reads when an enforced
 * check cannot pass (its cost beyond a limit, a deny list, a denial repeated from memory) or
 * memory says it will likely find no room; then none of its checks adds cost others would see.
 */
function startMode({ items, counters, counterOf }: StepRequest): RoundMode {
  let counting = false;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as CheckItem;
    const index = counterOf[i] as number;
    counting ||= item.counting && index !== -1 && !item.impossible;
    if (!item.enforced) continue;
    if (item.impossible || item.listed === 'deny') return 'read';
    if (index === -1) continue;
    const counter = counters[index] as StepCounter;
    if (counter.repeated) return 'read';
    if (item.counting && counter.part.readsFirst(counter)) return 'read';
  }
  // A request that counts nothing (peeks) only reads.
  return counting ? 'count' : 'read';
}

/** One counter's round: a repeated denial answers it without the store. */
function roundOf(context: Context, counter: StepCounter, mode: RoundMode, several: boolean): Promise<CounterRound> {
  const { repeated } = counter;
  if (repeated)
    return Promise.resolve({
      decision: repeated,
      uncounted: undefined,
      peeks: [repeated],
      counted: undefined,
      denied: undefined,
      look: undefined,
      exact: true,
    });
  return counter.part.round(context, counter, mode, several);
}

/** An item's decision in a round: its list's, its counter's for what the request counts there, or its peek's. */
function ownDecision(context: Context, request: StepRequest, rounds: readonly CounterRound[], index: number): Decision {
  const item = request.items[index] as CheckItem;
  if (item.listed) return context.answers.listed(item.listed);
  if (admitsNothing(item)) return nothingAdmitted(context, item);
  const round = rounds[request.counterOf[index] as number] as CounterRound;
  const peek = request.peekOf[index] as number;
  return peek === -1 ? round.decision : (round.peeks[peek] as Decision);
}

function enforcedAllowed(context: Context, request: StepRequest, rounds: readonly CounterRound[]): boolean {
  const { items } = request;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as CheckItem;
    if (!item.enforced) continue;
    if (item.impossible || !ownDecision(context, request, rounds, i).allowed) return false;
  }
  return true;
}

/**
 * Whether an enforced denial was decided without counts, or exactly: by the event's
 * onStoreError rule, a deny list, a denial in memory, a cost beyond a limit, or a part that
 * reads and writes as one. Reading again would not change it.
 */
function deniedForSure(context: Context, request: StepRequest, rounds: readonly CounterRound[]): boolean {
  return request.items.some((item, i) => {
    if (!item.enforced) return false;
    if (item.impossible || item.listed === 'deny') return true;
    const index = request.counterOf[i] as number;
    if (index === -1) return false;
    const own = ownDecision(context, request, rounds, i);
    const round = rounds[index] as CounterRound;
    return !own.allowed && (own.degraded === true || round.exact);
  });
}

/**
 * A moment for requests in flight elsewhere to land or be taken back before the counts are read
 * again: doubling with each look and jittered, so that requests racing for the same room spread
 * out, and never shorter than two of the last round's time, so that a take-back as slow as that
 * round (a loaded process, a slow network) lands first. Then, once this process has read what
 * its sockets hold: a timer fires before the loop polls, and another request's increment
 * answered meanwhile would be taken back only after this one reads again, counted in its look.
 * `overfullLooks`: how many looks in a row found the same counts over a limit (0: none).
 */
async function pauseBeforeLookingAgain(
  looks: number,
  roundMs: number,
  { overfullLooks }: { overfullLooks: number },
): Promise<void> {
  const backoffMs = Math.min(LOOK_AGAIN_MS * 2 ** (looks - 1), LOOK_AGAIN_MAX_MS) * (0.5 + Math.random());
  // Counts over a limit hold take-backs in flight for sure: the more looks found them so, the later those are.
  const leastMs =
    overfullLooks > 0 ? Math.min(OVERFULL_PAUSE_MS * 2 ** (overfullLooks - 1), LOOK_AGAIN_SLOW_ROUND_MAX_MS) : 0;
  await new Promise((resolve) =>
    setTimeout(resolve, Math.max(backoffMs, leastMs, Math.min(2 * roundMs, LOOK_AGAIN_SLOW_ROUND_MAX_MS))),
  );
  await new Promise<void>((resolve) => {
    setImmediate(resolve);
  });
}

interface Settled {
  readonly allowed: boolean;
  readonly last: RoundMode;
  readonly gaveUp: boolean;
}

/**
 * The request's answer after its last round: shadow checks over their limits taken back from
 * an allowed request, each denial's exact retryAfter, and every check reported. A denial is
 * remembered only when the last round read (its counts held none of the request's own
 * counts); a request that `gaveUp` is told to ask again in a second.
 */
function finish(
  context: Context,
  request: StepRequest,
  rounds: readonly CounterRound[],
  settled: Settled,
): StepOutcome | Promise<StepOutcome> {
  // The hot path: one check, allowed.
  const allowedAlone = allowedAloneDecision(context, request, rounds, settled);
  if (allowedAlone) return outcomeOf(request, rounds, [allowedAlone], true);
  return finishFollowingUp(context, request, rounds, settled);
}

/** finish for a lone check: its decision alone. */
function finishOne(
  context: Context,
  request: StepRequest,
  rounds: readonly CounterRound[],
  settled: Settled,
): Decision | Promise<Decision> {
  return (
    allowedAloneDecision(context, request, rounds, settled) ??
    finishFollowingUp(context, request, rounds, settled).then(firstDecision)
  );
}

/** The decision of a request of one check its count round allowed, reported; undefined for any other request. */
function allowedAloneDecision(
  context: Context,
  request: StepRequest,
  rounds: readonly CounterRound[],
  settled: Settled,
): Decision | undefined {
  if (!settled.allowed || request.items.length !== 1 || request.peekOf[0] !== -1 || request.counterOf[0] !== 0)
    return undefined;
  const round = rounds[0] as CounterRound;
  if (!round.decision.allowed) return undefined;
  const item = request.items[0] as CheckItem;
  const decision = answerOf(item, round.decision, item.cost);
  report(context, request, [decision], true);
  return decision;
}

async function finishFollowingUp(
  context: Context,
  request: StepRequest,
  rounds: readonly CounterRound[],
  { allowed, last, gaveUp }: Settled,
): Promise<StepOutcome> {
  const { items, counters, counterOf, peekOf } = request;
  // Nothing of a shadow check beyond its limits stays counted.
  if (allowed) await undoCounted(context, counters, rounds, (round) => !round.decision.allowed);
  const remember = last === 'read' && !gaveUp;
  // A counter's denial of what the request counted there is worked out, and remembered, once.
  const counterDenials: (Decision | Promise<Decision> | undefined)[] = [];
  // What each item's decision asked room for: a peek its cost, a counting check its counter's
  // (the request's checks of one counter counted together), a lease one unit.
  const asked = items.map((item, i) => {
    const counter = counters[counterOf[i] as number];
    if (!counter || peekOf[i] !== -1) return item.cost;
    return counter.takesWhatRemains ? 1 : counter.cost;
  });
  const own = await Promise.all(
    items.map(async (item, i): Promise<Decision> => {
      const decision = ownDecision(context, request, rounds, i);
      const index = counterOf[i] as number;
      if (index === -1) return decision;
      const counter = counters[index] as StepCounter;
      const round = rounds[index] as CounterRound;
      const peek = peekOf[i] as number;
      // A cost beyond the limit never passes: no time to wait says when it would.
      if (item.impossible) return { allowed: false, limits: decision.limits, policyVersion: context.answers.version };
      if (decision.allowed) return !allowed && peek === -1 && round.uncounted ? round.uncounted : decision;
      // Decided without counts, or exactly: nothing to work out.
      if (decision.degraded || round.exact) return decision;
      const { part } = counter;
      if (peek !== -1) return part.confirmDenial(context, counter, round, decision, { cost: item.cost, remember });
      if (gaveUp) return unconfirmedDenial(decision);
      // A lease is refused when not even one unit fits.
      return (counterDenials[index] ??= part.confirmDenial(context, counter, round, decision, {
        cost: asked[i] as number,
        remember,
      }));
    }),
  );
  const decisions = answersOf(request, own, asked);
  const outcome = outcomeOf(request, rounds, decisions, allowed);
  report(context, request, decisions, allowed);
  return outcome;
}

/**
 * Each check's answer: its own decision, a shadow check's as allowed, with its companion's
 * shadow limits. A shadow check names the limits that refused what it asked (`asked`: with the
 * request's other checks of its counter), which then counted none of it.
 */
function answersOf(request: StepRequest, own: readonly Decision[], asked: readonly number[]): Decision[] {
  const answers: Decision[] = [];
  for (let i = 0; i < request.checks; i++)
    answers.push(answerOf(request.items[i] as CheckItem, own[i] as Decision, asked[i] as number));
  request.companionOf.forEach((check, c) => {
    const companion = request.items[request.checks + c] as CheckItem;
    const shadow = own[request.checks + c] as Decision;
    const shadowDenied = overLimits(shadow, asked[request.checks + c] as number, companion.impossible);
    answers[check] = {
      ...(answers[check] as Decision),
      shadowLimits: shadow.limits,
      ...(shadowDenied.length > 0 ? { shadowDenied } : {}),
    };
  });
  return answers;
}

/** A check's answer from its own decision: one that does not enforce says what it would have refused, and allows. */
function answerOf(item: CheckItem, decision: Decision, asked: number): Decision {
  return item.enforced || item.listed ? decision : shadowDecision(decision, asked, item.impossible);
}

function outcomeOf(
  request: StepRequest,
  rounds: readonly CounterRound[],
  decisions: readonly Decision[],
  allowed: boolean,
): StepOutcome {
  const { items, counters, counterOf, peekOf } = request;
  let retryAfter: number | undefined;
  const counted: Counted[] = [];
  let fromMemory: boolean[] | undefined;
  for (let i = 0; i < request.checks; i++) {
    const item = items[i] as CheckItem;
    const decision = decisions[i] as Decision;
    if (!allowed && item.enforced && !decision.allowed && decision.retryAfter !== undefined)
      retryAfter = Math.max(retryAfter ?? 0, decision.retryAfter);
    const index = counterOf[i] as number;
    if (index !== -1 && counters[index]?.repeated)
      (fromMemory ??= Array<boolean>(request.checks).fill(false))[i] = true;
    if (!allowed || index === -1 || peekOf[i] !== -1 || !rounds[index]?.decision.allowed) {
      counted.push(NOTHING_COUNTED);
      continue;
    }
    const counter = counters[index] as StepCounter;
    counted.push({ cost: item.hold === 'lease' ? counter.cost : item.cost, atMs: counter.countedAtMs });
  }
  return fromMemory
    ? { allowed, decisions, retryAfter, counted, fromMemory }
    : { allowed, decisions, retryAfter, counted };
}

/** Reports each check's answer once: a check of a refused request as refused, with how its counter was read. */
function report(context: Context, request: StepRequest, decisions: readonly Decision[], allowed: boolean): void {
  const { onDecision } = context;
  if (!onDecision) return;
  const { items, counters, counterOf } = request;
  const told: boolean[] = [];
  for (let i = 0; i < request.checks; i++) {
    const item = items[i] as CheckItem;
    const decision = decisions[i] as Decision;
    const index = counterOf[i] as number;
    const counter = counters[index];
    const lead = index !== -1 && told[index] !== true;
    if (index !== -1) told[index] = true;
    const how: HowDecided = counter?.repeated
      ? FROM_MEMORY
      : lead && counter
        ? { fromDeniedCache: false, keysRead: counter.keysRead, settledMiss: counter.settledMiss }
        : NOTHING_READ;
    reportDecision(
      context.onDecision,
      item,
      !allowed && decision.allowed && item.counting && item.enforced && !item.listed
        ? { ...decision, allowed: false }
        : decision,
      how,
    );
  }
}
