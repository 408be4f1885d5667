// What every algorithm's decisions share: the answers that are not decided on counts (the
// store not answering, a list holding the client) and what a shadow check's answer says.
import type { Decision, LimitStatus } from '../shared/decision.js';

export type { Decision, LimitStatus };

/** Seconds a client denied because the store could not answer is told to wait. */
export const DEGRADED_RETRY_AFTER = 1;

/**
 * The answers that are not decided on counts, made once per policy version (each names it): one
 * object each, so that a client refused a thousand times a second costs no allocation.
 */
export interface FixedAnswers {
  readonly version: string;
  /** The decision of an event's `onStoreError` rule, when its counts cannot be read. */
  degraded(onStoreError: 'allow' | 'deny'): Decision;
  /** The decision for a client an allow or deny list holds: no limits, nothing counted. */
  listed(listed: 'allow' | 'deny'): Decision;
  /** A request whose rounds all lost their compare-and-swap to other instances: ask again in a second. */
  readonly contended: Decision;
  /** A request no limit applies to (a gateway's path let through uncounted). */
  readonly uncounted: Decision;
}

export function fixedAnswers(version: string): FixedAnswers {
  const degradedAllow: Decision = Object.freeze({ allowed: true, limits: [], degraded: true, policyVersion: version });
  const degradedDeny: Decision = Object.freeze({
    allowed: false,
    limits: [],
    retryAfter: DEGRADED_RETRY_AFTER,
    degraded: true,
    policyVersion: version,
  });
  const allowListed: Decision = Object.freeze({ allowed: true, limits: [], listed: 'allow', policyVersion: version });
  const denyListed: Decision = Object.freeze({ allowed: false, limits: [], listed: 'deny', policyVersion: version });
  return {
    version,
    degraded: (onStoreError) => (onStoreError === 'allow' ? degradedAllow : degradedDeny),
    listed: (listed) => (listed === 'allow' ? allowListed : denyListed),
    contended: degradedDeny,
    uncounted: Object.freeze({ allowed: true, limits: [], policyVersion: version }),
  };
}

/** The names of the limits a decision of `cost` found over (a denied decision's statuses hold no cost). */
export function overLimits(decision: Decision, cost: number, impossible = false): string[] {
  if (decision.allowed || decision.degraded) return [];
  return decision.limits.filter((limit) => impossible || limit.remaining < cost).map((limit) => limit.name);
}

/** A shadow check's decision as a request sees it: allowed, saying what it would have refused. */
export function shadowDecision(decision: Decision, cost: number, impossible = false): Decision {
  const shadowDenied = overLimits(decision, cost, impossible);
  return {
    allowed: true,
    limits: [],
    shadowLimits: decision.limits,
    ...(shadowDenied.length > 0 ? { shadowDenied } : {}),
    ...(decision.degraded ? { degraded: true as const } : {}),
    ...(decision.policyVersion === undefined ? {} : { policyVersion: decision.policyVersion }),
  };
}

/** What a denial could not confirm tells its client: ask again in a second. */
export const UNCONFIRMED_RETRY_AFTER = 1;

/** A denial the rounds could not confirm (other requests kept racing for the same room): ask again soon, remembered by no one. */
export function unconfirmedDenial(decision: Decision): Decision {
  return { ...decision, retryAfter: UNCONFIRMED_RETRY_AFTER };
}

/** Whole seconds from `nowMs` until `second`, at least 1. */
export function secondsUntil(second: number, nowMs: number): number {
  return Math.max(1, Math.ceil((second * 1000 - nowMs) / 1000));
}
