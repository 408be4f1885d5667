import type { FastifyReply } from 'fastify';
import type { Decision, LimitStatus } from '../counting/decision.js';
import type { Limiter } from '../counting/limiter.js';

/**
 * Headers of the IETF httpapi RateLimit draft for a decision:
 *
 *     RateLimit-Policy: "login-1m";q=5;w=60, "login-1d";q=100;w=86400
 *     RateLimit: "login-1m";r=0;t=12
 *
 * RateLimit names the limit closest to exhaustion (least remaining; on a tie the one that
 * frees up last). Limit names are policy names, safe inside a quoted structured string.
 */
export function rateLimitHeaders(decision: Decision, policy?: string): Record<string, string> {
  const headers: Record<string, string> = {};
  // A degraded decision knows no counts, so it has no RateLimit headers.
  if (decision.limits.length > 0) headers['ratelimit-policy'] = policy ?? policyHeader(decision.limits);
  const closest = closestToExhaustion(decision.limits);
  if (closest) headers.ratelimit = `"${closest.name}";r=${closest.remaining};t=${closest.resetSeconds}`;
  if (!decision.allowed && decision.retryAfter !== undefined) headers['retry-after'] = String(decision.retryAfter);
  return headers;
}

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

/** RateLimit-Policy: the same for every decision of one event. */
function policyHeader(limits: readonly LimitStatus[]): string {
  return limits.map((l) => `"${l.name}";q=${l.limit};w=${l.window}`).join(', ');
}

/** The limit RateLimit names: least remaining; on a tie, the one that frees up last. */
export function closestToExhaustion(limits: readonly LimitStatus[]): LimitStatus | undefined {
  let closest: LimitStatus | undefined;
  for (const limit of limits) {
    if (
      !closest ||
      limit.remaining < closest.remaining ||
      (limit.remaining === closest.remaining && limit.resetSeconds > closest.resetSeconds)
    ) {
      closest = limit;
    }
  }
  return closest;
}
