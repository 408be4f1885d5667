import { secondsUntil, type Decision } from '../../decision.js';

/**
 * A denial remembered so the next identical request is answered without the store. Other
 * instances can only add to a window's count, so a denial stands until the second its
 * retryAfter names; memgate keeps it at most a short while less, so that a count lowered
 * outside memgate's view (a reset, a denial taken back elsewhere) is seen soon.
 */
export interface CachedDenial {
  readonly cost: number;
  readonly decidedAtMs: number;
  readonly untilMs: number;
  /** The second at which enough cost has left the exceeded windows. */
  readonly releaseSecond: number;
  readonly decision: Decision;
  /** The last repeat given: the same object while its countdown shows the same seconds. */
  last?: Decision;
}

/**
 * Remembers a denial for requests of the same cost, which are denied with the same retryAfter.
 * Only a denial whose release second is exact may be repeated: an early answer from the
 * cache would deny a request the store would allow. Past `untilMs` it is no longer repeated,
 * but still tells that a request of its cost or more finds no room before its release
 * second (see shortOfRoom).
 */
export function rememberDenial(
  decision: Decision,
  cost: number,
  releaseSecond: number,
  nowMs: number,
  maxMs: number,
): CachedDenial {
  const untilMs = Math.min(releaseSecond * 1000, nowMs + maxMs);
  return { cost, decidedAtMs: nowMs, untilMs, releaseSecond, decision };
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

/** The cached denial as it stands at `nowMs`, or undefined when it does not answer this request. */
export function repeatDenial(cached: CachedDenial | undefined, cost: number, nowMs: number): Decision | undefined {
  if (cached?.cost !== cost || nowMs >= cached.untilMs || nowMs < cached.decidedAtMs) return undefined;
  const elapsedMs = nowMs - cached.decidedAtMs;
  const { decision, last } = cached;
  const retryAfter = secondsUntil(cached.releaseSecond, nowMs);
  // The same answer as the last repeat is the same object, so its HTTP form is built once a second.
  if (
    last?.retryAfter === retryAfter &&
    decision.limits.every((status, i) => last.limits[i]?.resetSeconds === countedDown(status.resetSeconds, elapsedMs))
  ) {
    return last;
  }
  const repeated: Decision = {
    allowed: false,
    limits: decision.limits.map((status) => ({ ...status, resetSeconds: countedDown(status.resetSeconds, elapsedMs) })),
    retryAfter,
    ...(decision.policyVersion === undefined ? {} : { policyVersion: decision.policyVersion }),
  };
  cached.last = repeated;
  return repeated;
}

/** A resetSeconds counted down from the cached answer; never earlier than the store would say. */
function countedDown(resetSeconds: number, elapsedMs: number): number {
  return resetSeconds === 0 ? 0 : Math.max(1, Math.ceil((resetSeconds * 1000 - elapsedMs) / 1000));
}
