// The IETF RateLimit headers of a decision: pure functions, shared by the service's routes and
// the express and fastify entries of memgate/client's package.
import type { Decision, LimitStatus } from './decision.js';

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

/** RateLimit-Policy: the same for every decision of one event. */
export function policyHeader(limits: readonly LimitStatus[]): string {
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
