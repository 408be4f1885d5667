import type { FastifyReply } from 'fastify';
import type { Decision } from '../counting/decision.js';
import { policyHeader, rateLimitHeaders } from '../shared/rate-limit-headers.js';
import type { Limiter } from '../counting/limiter.js';

export { closestToExhaustion, rateLimitHeaders } from '../shared/rate-limit-headers.js';

/** The snapshot of the policies a decision was made under: its headers are built from the same. */
export type DecidedUnder = Pick<Limiter, 'policies' | 'plans'>;

/**
 * Sets decisions' headers on replies. An event's RateLimit-Policy never changes while its
 * policies are loaded, so it is built once per event and snapshot of the policies (an admin may
 * reload them); not for an event with tiers or overrides, whose clients have limits of their own.
 */
export function rateLimitHeaderWriter(): (
  reply: FastifyReply,
  snapshot: DecidedUnder,
  event: string,
  decision: Decision,
) => void {
  /** Per event, its policy header, or null when it depends on the client. */
  const byPolicies = new WeakMap<object, Map<string, string | null>>();
  // A decision repeated as the same object (a denial from memory) has the same headers.
  const byDecision = new WeakMap<Decision, Record<string, string>>();
  return (reply, snapshot, event, decision) => {
    let headers = byDecision.get(decision);
    if (!headers) {
      let policies = byPolicies.get(snapshot.policies);
      if (!policies) byPolicies.set(snapshot.policies, (policies = new Map<string, string | null>()));
      let policy = policies.get(event);
      if (policy === undefined && decision.limits.length > 0) {
        policy = snapshot.plans.get(event)?.clients ? null : policyHeader(decision.limits);
        policies.set(event, policy);
      }
      headers = rateLimitHeaders(decision, policy ?? undefined);
      if (!decision.allowed) byDecision.set(decision, headers);
    }
    void reply.headers(headers);
  };
}
