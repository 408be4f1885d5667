import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Decision } from '../../counting/decision.js';
import type { CheckRequest } from '../../counting/check-request.js';
import type { Limiter } from '../../counting/limiter.js';
import { rateLimitHeaderWriter } from '../rate-limit-headers.js';
import {
  checkBodyRoute,
  checkQueryRoute,
  peekBodyRoute,
  peekQueryRoute,
  type CheckBody,
  type CheckQuerystring,
} from '../schemas.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * /check decides and counts; /peek gives the same decision and counts nothing. Both take
 * the query string (GET) or a JSON body (POST) and answer 200 when allowed, 429 when not.
 */
export function registerDecisionRoutes(app: FastifyInstance, limiter: Limiter): void {
  const setHeaders = rateLimitHeaderWriter(limiter);
  // A denial repeated from memory is one object for as long as its answer reads the same
  // (a second at most): the traffic of a client far over its limit, serialized once.
  const denialBodies = new WeakMap<Decision, string>();
  const send = (reply: FastifyReply, event: string, decision: Decision): Decision | FastifyReply => {
    setHeaders(reply.code(decision.allowed ? 200 : 429), event, decision);
    if (decision.allowed) return decision;
    let body = denialBodies.get(decision);
    if (body === undefined) denialBodies.set(decision, (body = reply.serialize(decision) as string));
    return reply.type(JSON_TYPE).send(body);
  };
  const routes: [string, (request: CheckRequest) => Promise<Decision>, { query: object; body: object }][] = [
    ['/check', (request) => limiter.check(request), { query: checkQueryRoute, body: checkBodyRoute }],
    ['/peek', (request) => limiter.peek(request), { query: peekQueryRoute, body: peekBodyRoute }],
  ];
  for (const [url, decide, schema] of routes) {
    app.get<{ Querystring: CheckQuerystring }>(url, { schema: schema.query }, async (request, reply) => {
      const { event, feature, cost } = request.query;
      return send(reply, event, await decide({ event, feature, cost: cost === undefined ? undefined : Number(cost) }));
    });
    app.post<{ Body: CheckBody }>(url, { schema: schema.body }, async (request, reply) => {
      return send(reply, request.body.event, await decide(request.body));
    });
  }
}
