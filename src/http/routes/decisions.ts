import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Decision } from '../../counting/decision.js';
import type { CheckRequest, Limiter } from '../../counting/limiter.js';
import { policyHeader, rateLimitHeader } from '../rate-limit-headers.js';
import { checkBody, checkQuerystring, decisionResponse, errorResponses, type CheckBody, type CheckQuerystring } from '../schemas.js';

const response = { 200: decisionResponse, 429: decisionResponse, ...errorResponses } as const;

/**
 * /check decides and counts; /peek gives the same decision and counts nothing. Both take
 * the query string (GET) or a JSON body (POST) and answer 200 when allowed, 429 when not.
 */
export function registerDecisionRoutes(app: FastifyInstance, limiter: Limiter): void {
  // An event's RateLimit-Policy never changes while its policies are loaded: build it once
  // per loaded policy set (an admin may reload them).
  const headersByPolicies = new WeakMap<object, Map<string, string>>();
  const send = (reply: FastifyReply, event: string, decision: Decision): Decision => {
    let policyHeaders = headersByPolicies.get(limiter.policies);
    if (!policyHeaders) headersByPolicies.set(limiter.policies, (policyHeaders = new Map<string, string>()));
    reply.code(decision.allowed ? 200 : 429);
    // A degraded decision knows no counts, so it sends no RateLimit headers.
    if (decision.limits.length > 0) {
      let policy = policyHeaders.get(event);
      if (policy === undefined) policyHeaders.set(event, (policy = policyHeader(decision.limits)));
      reply.header('ratelimit-policy', policy);
    }
    const current = rateLimitHeader(decision.limits);
    if (current !== undefined) reply.header('ratelimit', current);
    if (!decision.allowed && decision.retryAfter !== undefined) reply.header('retry-after', decision.retryAfter);
    return decision;
  };
  const routes: [string, (request: CheckRequest) => Promise<Decision>][] = [
    ['/check', (request) => limiter.check(request)],
    ['/peek', (request) => limiter.peek(request)],
  ];
  for (const [url, decide] of routes) {
    app.get<{ Querystring: CheckQuerystring }>(url, { schema: { querystring: checkQuerystring, response } }, async (request, reply) => {
      const { event, feature, cost } = request.query;
      return send(reply, event, await decide({ event, feature, cost: cost === undefined ? undefined : Number(cost) }));
    });
    app.post<{ Body: CheckBody }>(url, { schema: { body: checkBody, response } }, async (request, reply) => {
      return send(reply, request.body.event, await decide(request.body));
    });
  }
}
