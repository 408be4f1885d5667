// Counting in buckets of time, what sliding and fixed (and calendar) windows share: a round
// increments the current bucket of each level and reads the rest in one call (or only reads),
// decided as soon as it answers; a refused request's increments are taken back; a denial gets
// its exact retryAfter and is remembered while its answer cannot change. Each algorithm adds
// how its limits cover time (sliding/plan.ts, fixed/plan.ts).
import type { Context } from '../../context.js';
import type { Decision } from '../../decision.js';
import { bucketKey, recordUnitsKey, resetMarkerKey, TTL_MARGIN_SECONDS } from '../../keys.js';
import type { BucketCarry, WindowsPlan } from '../../plan-types.js';
import { StoreMovedError, StoreUnavailableError, type IncrementAndReadResult } from '../../../store/counter-store.js';
import type { AlgorithmPart, Counter, CounterRound, RoundMode } from '../part.js';
import { levelName, levelStart } from './buckets.js';
import { repeatDenial, shortOfRoom } from './cached-denial.js';
import { counterCall, countsOf, incrementsAt, type CounterCall } from './counter-call.js';
import { decide, windowTotals } from './counts.js';
import { exactDenial, takeBack, type DeniedCounts } from './denial.js';
import type { FeatureState } from './feature-cache.js';
import { overfull } from './overfull.js';
import { itemsPerFeature, type WindowCounters } from './plan.js';
import { carriedLimit, carryCounters, windowOf } from './carry-over.js';
import { bucketCarryAt, readOldBucket, withOldBucket } from './bucket-carry.js';

/** How often one round's call is built again because its server failed over (a second server failing meanwhile is rare). */
const MAX_MOVES = 2;

type WindowCounter = Counter<WindowsPlan, FeatureState>;

const NO_PEEKS: Decision[] = [];

/** What a round of windows knows of a denial: the counts it was decided on. */
type WindowDenial = Omit<DeniedCounts, 'cost'>;

/** The part of sliding and fixed windows, but how their limits cover time (`planLimit`) and what their plans are called (`counters`). */
export const bucketWindows: Omit<AlgorithmPart<WindowsPlan, FeatureState, WindowCounters>, 'planLimit' | 'counters'> &
  Required<Pick<AlgorithmPart<WindowsPlan, FeatureState, WindowCounters>, 'carryOver'>> = {
  eventPlan: (common, counters) => {
    const { transition } = counters;
    if (!transition) return { ...common, ...counters };
    // Until the transition is exact, every limit of every plan of the event is judged on complete buckets.
    return { ...common, ...counters, limits: common.limits.map((limit) => carriedLimit(limit, transition)) };
  },

  carryOver: carryCounters,

  state: (context, plan, feature) => context.features.state(plan, feature),

  remembered(_context, counter, cost, nowMs) {
    return repeatDenial(counter.state.denial, cost, nowMs);
  },

  prepare(counter) {
    if (!counter.takesWhatRemains) return;
    const { state, second } = counter;
    // A lease asks at first for no more than the room its last decision this second left.
    const room = state.roomSecond === second ? (state.room ?? 0) : 0;
    if (room >= 1) counter.cost = Math.min(counter.cost, room);
  },

  readsFirst(counter) {
    const { state, second } = counter;
    const asked = counter.takesWhatRemains ? 1 : counter.cost;
    if (shortOfRoom(state.denial, asked, second)) return true;
    return state.roomSecond === second && state.room !== undefined && asked > state.room;
  },

  round: windowRound,

  async undo(context, counted) {
    await takeBack(context, counted as readonly CounterCall[]);
  },

  confirmDenial(context, counter, round, own, { cost, remember }) {
    const denied = round.denied as WindowDenial | undefined;
    if (!denied) return own;
    return exactDenial(context, own, { ...denied, cost }, { remember });
  },

  forget(context, plan, feature) {
    context.features.forget(plan, feature);
  },

  resetKeys(plan, base, second) {
    return {
      deletes: plan.levels.map((level) => bucketKey(base, levelName(level), levelStart(level, second))),
      ttlSeconds: Math.max(TTL_MARGIN_SECONDS, ...plan.levels.map((level) => level.ttlSeconds)),
    };
  },

  recordKey: (plan, base, id) =>
    recordUnitsKey(
      base,
      plan.levels.map((level) => levelName(level)),
      id,
    ),

  recordedTime: () => undefined,

  async recount(context, plan, base, { now, count, second, takeBack: units }) {
    // Counted at this second first, so no window is short of them meanwhile.
    if (count > 0) await context.store.incrementAndRead(incrementsAt(plan, base, now, count), []);
    if (units > 0) await context.store.decrement(incrementsAt(plan, base, second, units));
  },

  async refund(context, plan, base, { cost, second, now, longestWindow }) {
    // That second has left every window the client could be judged by: nothing is left to take back.
    if (second + longestWindow <= now) return false;
    const skewSeconds = Math.ceil(context.maxClockSkewMs / 1000);
    // `at` is the caller's clock, taken before its check left: memgate may have counted it in a
    // neighbouring second (a check sent at 12.999 s, counted at 13.001 s). The seconds within the
    // skew are read, nearest first, and the cost taken back from the first that holds it.
    const finest = plan.levels.reduce((a, b) => (b.size < a.size ? b : a));
    const candidates = nearestFirst(second, skewSeconds);
    const keys = candidates.map((s) => bucketKey(base, levelName(finest), levelStart(finest, s)));
    const { read } = await context.store.incrementAndRead([], [resetMarkerKey(base), ...keys]);
    // A reset since then forgot the check, and its bucket may now hold only checks counted
    // after it. A reset within the skew of `at` may be after it too.
    if ((read[0] ?? 0) >= second - skewSeconds) return false;
    const holding = candidates.findIndex((_, i) => (read[i + 1] ?? 0) >= cost);
    await context.store.decrement(incrementsAt(plan, base, candidates[Math.max(0, holding)] ?? second, cost));
    return true;
  },

  sizing: (plan) => ({
    incrementsPerCheck: plan.levels.length,
    // Limits may share buckets, so this is an upper bound on the keys one check touches.
    keysPerCheck: { max: plan.limits.reduce((sum, limit) => sum + limit.keysPerCheck.max, 0) },
    itemsPerFeature: itemsPerFeature(plan.levels),
  }),

  limitSizing: (limit) => ({
    bucketSizes: limit.levels,
    keysPerCheck: limit.keysPerCheck,
    itemsPerFeature: itemsPerFeature(
      limit.levels.map((size) => ({ size, ttlSeconds: limit.retention(size) + TTL_MARGIN_SECONDS })),
    ),
  }),
};

/** One counter's store call in this round, decided as soon as it answers (its window is shared). */
async function windowRound(
  context: Context,
  counter: WindowCounter,
  mode: RoundMode,
  several: boolean,
): Promise<CounterRound> {
  const { plan, state, peekCosts } = counter;
  const counting = mode === 'count' && counter.cost > 0;
  let nowMs: number;
  let second: number;
  let window: ReturnType<Context['features']['windowAt']>;
  let call: CounterCall;
  let answer: IncrementAndReadResult;
  let fromBucket: BucketCarry | undefined;
  let oldTatUs = 0;
  for (let moves = 0; ; moves++) {
    nowMs = counter.foundAtMs ?? context.now(state.base);
    counter.foundAtMs = undefined;
    second = Math.floor(nowMs / 1000);
    window = context.features.windowAt(state, plan, second);
    if (counting) counter.countedAtMs = nowMs;
    call = counterCall(window, counting ? 'count' : 'read', {
      cost: counter.cost,
      onStoreError: plan.onStoreError,
      recorded: counter.recorded,
    });
    counter.keysRead += call.keys.length;
    if (window.readsSettled(call.reads)) counter.settledMiss = true;
    fromBucket = bucketCarryAt(plan.fromBucket, second);
    try {
      const reading = context.store.incrementAndRead(call.increments, call.keys, call.options);
      if (fromBucket) {
        counter.keysRead += 1;
        [answer, oldTatUs] = await Promise.all([reading, readOldBucket(context, state.base)]);
      } else {
        answer = await reading;
      }
      break;
    } catch (error) {
      // The store cannot answer in time: the event's onStoreError rule decides (any other error is a bug).
      if (!(error instanceof StoreUnavailableError)) throw error;
      // Its server failed and its clients moved to another: built again, in buckets timed by that one's clock.
      if (error instanceof StoreMovedError && moves < MAX_MOVES) continue;
      context.onStoreUnavailable?.(error, plan.event);
      return degradedRound(context.answers.degraded(plan.onStoreError), peekCosts);
    }
  }
  const counts = fromBucket
    ? withOldBucket(countsOf(call, answer), fromBucket, oldTatUs, second, windowOf)
    : countsOf(call, answer);
  context.features.filled(state, window);
  // A read asks whether the counter's cost fits now (a lease: whether one unit does).
  const asked = !counting && counter.takesWhatRemains ? 1 : Math.max(1, counter.cost);
  const { version } = context.answers;
  const decision = decide(counts, { cost: asked, nowMs, kind: counting ? 'check' : 'peek', version });
  let peeks: Decision[] = NO_PEEKS;
  let denied = !decision.allowed;
  if (peekCosts.length > 0) {
    peeks = peekCosts.map((cost) => decide(counts, { cost, nowMs, kind: 'peek', version }));
    denied ||= peeks.some((peek) => !peek.allowed);
  }
  // The least room any limit has left: a request asking more this second reads first.
  let room = Infinity;
  for (const status of decision.limits) if (status.remaining < room) room = status.remaining;
  state.room = room;
  state.roomSecond = second;
  if (!counting && counter.takesWhatRemains && decision.allowed) counter.cost = Math.min(counter.cost, room);
  const deniedOn: WindowDenial | undefined = denied ? { plan, state, counts: window.snapshot(), nowMs } : undefined;
  const look = denied ? windowTotals(counts, second) : undefined;
  let over = false;
  if (look !== undefined) {
    const kept = state.overfull !== undefined;
    over = overfull(state, counts, look, context.monotonicNow());
    if (!kept && state.overfull !== undefined) context.features.keptOverfull(counter.feature);
  }
  return {
    decision,
    uncounted: counting && several ? decide(counts, { cost: asked, nowMs, kind: 'peek', version }) : undefined,
    peeks,
    counted: counting ? call : undefined,
    denied: deniedOn,
    look,
    overfull: over,
    exact: false,
  };
}

/** A round the store did not answer: the event's onStoreError rule decides. */
function degradedRound(degraded: Decision, peekCosts: readonly number[]): CounterRound {
  return {
    decision: degraded,
    uncounted: undefined,
    peeks: peekCosts.map(() => degraded),
    counted: undefined,
    denied: undefined,
    look: undefined,
    exact: true,
  };
}

/** `second`, then the seconds around it up to `skew` away, nearest first, later before earlier. */
function nearestFirst(second: number, skew: number): number[] {
  const seconds = [second];
  for (let away = 1; away <= skew; away++) seconds.push(second + away, second - away);
  return seconds;
}
