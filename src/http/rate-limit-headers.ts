import type { Decision, LimitStatus } from '../counting/decision.js';

/**
 * Headers of the IETF httpapi RateLimit draft for a decision:
 *
 *     RateLimit-Policy: "login-1m";q=5;w=60, "login-1d";q=100;w=86400
 *     RateLimit: "login-1m";r=0;t=12
 *
 * RateLimit names the limit closest to exhaustion (least remaining; on a tie the one that
 * frees up last). Limit names are policy names, safe inside a quoted structured string.
 */
export function rateLimitHeaders(decision: Decision): Record<string, string> {
  const headers: Record<string, string> = { 'ratelimit-policy': policyHeader(decision.limits) };
  const closest = rateLimitHeader(decision.limits);
  if (closest !== undefined) headers.ratelimit = closest;
  if (!decision.allowed && decision.retryAfter !== undefined) headers['retry-after'] = String(decision.retryAfter);
  return headers;
}

/** RateLimit-Policy: the same for every decision of one event. */
export function policyHeader(limits: readonly LimitStatus[]): string {
  return limits.map((l) => `"${l.name}";q=${l.limit};w=${l.window}`).join(', ');
}

/** RateLimit: the limit closest to exhaustion, as it stands. */
export function rateLimitHeader(limits: readonly LimitStatus[]): string | undefined {
  const closest = closestToExhaustion(limits);
  return closest ? `"${closest.name}";r=${closest.remaining};t=${closest.resetSeconds}` : undefined;
}

function closestToExhaustion(limits: readonly LimitStatus[]): LimitStatus | undefined {
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
