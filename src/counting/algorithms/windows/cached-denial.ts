import { secondsUntil, type Decision, type LimitStatus } from '../../decision.js';
import type { WindowsPlan } from '../../plan-types.js';

/**
 * What a repeated denial says beside its numbers: each limit's name, limit and window, and the
 * policy version. The same for every client of a plan under one version, so it is made once per
 * plan and shared (see formOf).
 */
interface DenialForm {
  /** Each limit's status as decided, but its numbers (remaining, resetSeconds), which each denial keeps. */
  readonly statuses: readonly LimitStatus[];
  readonly version: string | undefined;
}

// Where a denial's numbers sit in its list, each limit's two after these.
const COST = 0;
const RELEASE_SECOND = 1;
const DECIDED_AT_MS = 2;
const UNTIL_MS = 3;
const LIMITS = 4;

/**
 * A denial remembered so the next identical request is answered without the store. Other
 * instances can only add to a window's count, so a denial stands until the second its
 * retryAfter names; memgate keeps it at most a short while less, so that a count lowered
 * outside memgate's view (a reset, a denial taken back elsewhere) is seen soon.
 *
 * Kept per cached client, so it holds numbers only, in one list of doubles (the request's cost,
 * its release second, when it was decided and until when it is repeated, and each limit's
 * remaining and resetSeconds), beside the form it shares with every denial of its plan.
 */
export class CachedDenial {
  constructor(
    private readonly form: DenialForm,
    private readonly numbers: readonly number[],
  ) {}

  get cost(): number {
    return this.numbers[COST] as number;
  }

  /** The second at which enough cost has left the exceeded windows. */
  get releaseSecond(): number {
    return this.numbers[RELEASE_SECOND] as number;
  }

  get decidedAtMs(): number {
    return this.numbers[DECIDED_AT_MS] as number;
  }

  get untilMs(): number {
    return this.numbers[UNTIL_MS] as number;
  }

  /** The denial as it was decided, its resetSeconds counted down by `elapsedMs`, telling `retryAfter`. */
  decision(retryAfter: number, elapsedMs: number): Decision {
    const { form, numbers } = this;
    const limits = form.statuses.map((status, i): LimitStatus => ({
      ...status,
      remaining: numbers[LIMITS + 2 * i] as number,
      resetSeconds: countedDown(numbers[LIMITS + 2 * i + 1] as number, elapsedMs),
    }));
    return {
      allowed: false,
      limits,
      retryAfter,
      ...(form.version === undefined ? {} : { policyVersion: form.version }),
    };
  }

  /** Whether `decision` shows the same resetSeconds as this denial counted down by `elapsedMs`. */
  sameCountdown(decision: Decision, elapsedMs: number): boolean {
    const { numbers } = this;
    return decision.limits.every(
      (status, i) => status.resetSeconds === countedDown(numbers[LIMITS + 2 * i + 1] as number, elapsedMs),
    );
  }
}

/** Each plan's form of its denials, as last made: a reload's new version makes a new one. */
const forms = new WeakMap<WindowsPlan, DenialForm>();

/** The statuses' keys as decide() makes them: a form shared by a plan's denials holds no more. */
const STATUS_KEYS = 'name,limit,window,remaining,resetSeconds';

/** The form of `decision`, shared with the plan's other denials when it is theirs. */
function formOf(plan: WindowsPlan, decision: Decision): DenialForm {
  const { limits, policyVersion } = decision;
  const known = forms.get(plan);
  if (
    known !== undefined &&
    known.version === policyVersion &&
    known.statuses.length === limits.length &&
    known.statuses.every((status, i) => {
      const decided = limits[i] as LimitStatus;
      return status.name === decided.name && status.limit === decided.limit && status.window === decided.window;
    })
  ) {
    return known;
  }
  // A status of another shape keeps its own form, spread as the decision's was.
  const form = {
    statuses: limits.map((status) => ({ ...status, remaining: 0, resetSeconds: 0 })),
    version: policyVersion,
  };
  if (limits.every((status) => Object.keys(status).join(',') === STATUS_KEYS)) forms.set(plan, form);
  return form;
}

/**
 * Remembers a denial for requests of the same cost, which are denied with the same retryAfter.
 * Only a denial whose release second is exact may be repeated: an early answer from the
 * cache would deny a request the store would allow. Past `untilMs` it is no longer repeated,
 * but still tells that a request of its cost or more finds no room before its release
 * second (see shortOfRoom).
 */
export function rememberDenial(
  plan: WindowsPlan,
  decision: Decision,
  cost: number,
  releaseSecond: number,
  nowMs: number,
  maxMs: number,
): CachedDenial {
  const untilMs = Math.min(releaseSecond * 1000, nowMs + maxMs);
  // As long as it needs to be, and doubles from the start (a list of small integers would be
  // made again as doubles at the first time stored in it).
  const numbers = new Array<number>(LIMITS + 2 * decision.limits.length).fill(0.5);
  numbers[COST] = cost;
  numbers[RELEASE_SECOND] = releaseSecond;
  numbers[DECIDED_AT_MS] = nowMs;
  numbers[UNTIL_MS] = untilMs;
  decision.limits.forEach((status, i) => {
    numbers[LIMITS + 2 * i] = status.remaining;
    numbers[LIMITS + 2 * i + 1] = status.resetSeconds;
  });
  return new CachedDenial(formOf(plan, decision), numbers);
}

/**
 * Whether a request of `cost` will likely find no room at `second`: a denial of this cost or
 * less has not reached its release second yet. Counts only rise meanwhile, unless a reset,
 * refund, returned lease or refused request lowers them: so this is a hint to read before
 * counting, never an answer.
 */
export function shortOfRoom(cached: CachedDenial | undefined, cost: number, second: number): boolean {
  return cached !== undefined && cost >= cached.cost && second < cached.releaseSecond;
}

/**
 * The last repeat given of the denials repeated lately: the same object while its countdown
 * shows the same seconds, so its HTTP form is built once a second. Kept here rather than with
 * each client's denial, so that a cached client holds numbers only; dropped whole when it
 * holds LAST_REPEATS (a busy denied client's repeat is made again at most once).
 */
const lastRepeats = new Map<CachedDenial, Decision>();
const LAST_REPEATS = 1024;

/** The cached denial as it stands at `nowMs`, or undefined when it does not answer this request. */
export function repeatDenial(cached: CachedDenial | undefined, cost: number, nowMs: number): Decision | undefined {
  if (cached?.cost !== cost || nowMs >= cached.untilMs || nowMs < cached.decidedAtMs) return undefined;
  const elapsedMs = nowMs - cached.decidedAtMs;
  const retryAfter = secondsUntil(cached.releaseSecond, nowMs);
  const last = lastRepeats.get(cached);
  if (last?.retryAfter === retryAfter && cached.sameCountdown(last, elapsedMs)) return last;
  const repeated = cached.decision(retryAfter, elapsedMs);
  if (lastRepeats.size >= LAST_REPEATS && !last) lastRepeats.clear();
  lastRepeats.set(cached, repeated);
  return repeated;
}

/** A resetSeconds counted down from the cached answer; never earlier than the store would say. */
function countedDown(resetSeconds: number, elapsedMs: number): number {
  return resetSeconds === 0 ? 0 : Math.max(1, Math.ceil((resetSeconds * 1000 - elapsedMs) / 1000));
}
