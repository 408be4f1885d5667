import type { FastifyReply } from 'fastify';
import type { Decision } from '../counting/decision.js';
import { policyHeader, rateLimitHeaders } from '../shared/rate-limit-headers.js';
import type { Limiter } from '../counting/limiter.js';

export { closestToExhaustion, rateLimitHeaders } from '../shared/rate-limit-headers.js';

/**
 * Sets decisions' headers on replies. An event's RateLimit-Policy never changes while its
 * policies are loaded, so it is built once per event and loaded policy set (an admin may
 * reload them).
 */
export function rateLimitHeaderWriter(
  limiter: Pick<Limiter, 'policies'>,
): (reply: FastifyReply, event: string, decision: Decision) => void {
  const byPolicies = new WeakMap<object, Map<string, string>>();
  // A decision repeated as the same object (a denial from memory) has the same headers.
  const byDecision = new WeakMap<Decision, Record<string, string>>();
  return (reply, event, decision) => {
    let headers = byDecision.get(decision);
    if (!headers) {
      let policies = byPolicies.get(limiter.policies);
      if (!policies) byPolicies.set(limiter.policies, (policies = new Map<string, string>()));
      let policy = policies.get(event);
      if (policy === undefined && decision.limits.length > 0)
        policies.set(event, (policy = policyHeader(decision.limits)));
      headers = rateLimitHeaders(decision, policy);
      if (!decision.allowed) byDecision.set(decision, headers);
    }
    void reply.headers(headers);
  };
}
