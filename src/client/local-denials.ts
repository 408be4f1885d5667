/**
 * Denials answered in the caller's process: a denial of an event, feature and cost is
 * repeated locally until its retryAfter has passed (counted from when the check was sent,
 * so never longer than memgate meant), and while one check of a denied key is at memgate
 * the others of that key wait for its answer instead of sending their own. So while a key
 * stays over its limit, at most one check per retryAfter period reaches memgate.
 */
import type { Decision, LimitStatus } from '../shared/decision.js';

/** A decision as the client answers it: memgate's, or repeated in the caller's process. */
export type ClientDecision = Decision & { readonly source: 'server' | 'local' };

/** What one check sent to memgate came back with, and when it was sent (on the `now` clock). */
export interface Asked {
  readonly decision: ClientDecision;
  readonly sentAt: number;
}

export interface LocalDenialsOptions {
  /** Keys remembered at once; past it the oldest are forgotten. */
  readonly maxEntries: number;
  /** A monotonic clock in milliseconds. */
  readonly now: () => number;
}

interface Denial {
  readonly event: string;
  readonly feature: string;
  /** As memgate (or onError) decided it. */
  readonly decision: ClientDecision;
  readonly sentAt: number;
  /** The denial holds while now < until. */
  readonly until: number;
  /** Settles when the check of this key now at memgate has its answer. */
  probe?: Promise<void> | undefined;
  /** Checks of this key waiting for the probe. */
  waiting: number;
}

export interface LocalDenials {
  /**
   * Decides a check of `event`, `feature`, `cost`: locally while a denial of it holds, else
   * by `ask` (memgate), waiting first for a check of the same key already there.
   */
  /** `tier`: the one the check names, when it names one; a denial under one tier says nothing of another. */
  decide(
    event: string,
    feature: string,
    cost: number,
    ask: () => Promise<Asked>,
    tier?: string,
  ): Promise<ClientDecision>;
  /** Forgets every denial of `event` and `feature` (after a reset or a refund). */
  forget(event: string, feature: string): void;
  /** Keys remembered now. */
  readonly size: number;
}

export function createLocalDenials({ maxEntries, now }: LocalDenialsOptions): LocalDenials {
  const denials = new Map<string, Denial>();

  const remember = (key: string, event: string, feature: string, { decision, sentAt }: Asked) => {
    denials.delete(key);
    const retryAfter = decision.retryAfter ?? 0;
    if (decision.allowed || retryAfter <= 0) return;
    if (denials.size >= maxEntries) evictOne();
    denials.set(key, { event, feature, decision, sentAt, until: sentAt + retryAfter * 1000, waiting: 0 });
  };

  // The oldest key that no check is waiting on; Map keeps insertion order, and a key
  // denied again is inserted again.
  const evictOne = () => {
    for (const [key, denial] of denials) {
      if (denial.probe === undefined) {
        denials.delete(key);
        return;
      }
    }
  };

  return {
    async decide(event, feature, cost, ask, tier) {
      const key = JSON.stringify(tier === undefined ? [event, feature, cost] : [event, feature, cost, tier]);
      for (;;) {
        const denial = denials.get(key);
        if (!denial) {
          const asked = await ask();
          remember(key, event, feature, asked);
          return asked.decision;
        }
        const at = now();
        if (at < denial.until) return localAnswer(denial, at);
        if (denial.probe) {
          denial.waiting++;
          await denial.probe;
          denial.waiting--;
          continue;
        }
        return probe(key, denial, cost, ask);
      }
    },
    forget(event, feature) {
      for (const [key, denial] of denials) {
        if (denial.event === event && denial.feature === feature) denials.delete(key);
      }
    },
    get size() {
      return denials.size;
    },
  };

  /** The one check of a key whose denial has run out; the others wait for its answer. */
  async function probe(key: string, denial: Denial, cost: number, ask: () => Promise<Asked>): Promise<ClientDecision> {
    const probing: { settle?: () => void } = {};
    denial.probe = new Promise<void>((resolve) => {
      probing.settle = resolve;
    });
    try {
      const asked = await ask();
      const { decision } = asked;
      if (!decision.allowed) {
        remember(key, denial.event, denial.feature, asked);
      } else if (denials.get(key) === denial) {
        // Allowed: release the waiters together only if they all fit in what remains;
        // else they go on one at a time, and the first denied puts them back to local answers.
        if (fits(decision.limits, cost, denial.waiting)) denials.delete(key);
      }
      return decision;
    } finally {
      denial.probe = undefined;
      probing.settle?.();
    }
  }
}

/** Whether `count` more checks of `cost` fit in every limit's remaining (limits: [] is a degraded allow, which knows no limit). */
function fits(limits: readonly LimitStatus[], cost: number, count: number): boolean {
  return limits.every((limit) => limit.remaining >= cost * count);
}

/** The denial as it reads at `at`: retryAfter and each limit's resetSeconds counted down. */
function localAnswer(denial: Denial, at: number): ClientDecision {
  const secondsLeft = (from: number, seconds: number) => Math.max(0, Math.ceil((from + seconds * 1000 - at) / 1000));
  return {
    ...denial.decision,
    limits: denial.decision.limits.map((limit) => ({
      ...limit,
      resetSeconds: secondsLeft(denial.sentAt, limit.resetSeconds),
    })),
    retryAfter: Math.ceil((denial.until - at) / 1000),
    source: 'local',
  };
}
