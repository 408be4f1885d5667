import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Decision } from '../../counting/decision.js';
import type { CheckRequest } from '../../counting/check-request.js';
import type { Limiter } from '../../counting/limiter.js';
import { DEFAULTS } from '../../config/defaults.js';
import { batchItemError, errorBody } from '../errors.js';
import { rateLimitHeaderWriter } from '../rate-limit-headers.js';
import {
  checkBatchRoute,
  checkBodyRoute,
  checkQueryRoute,
  peekBodyRoute,
  peekQueryRoute,
  type CheckBody,
  type CheckQuerystring,
} from '../schemas.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Whether the URL's query string decodes to text. fastify's parser turns a %XX sequence
 * that is not UTF-8 (or not hex) into U+FFFD or leaves it as is, so different bytes would
 * count as one feature: such a query is refused instead. Most queries hold no %.
 */
function wellEncodedQuery(url: string): boolean {
  const start = url.indexOf('?');
  if (start === -1 || !url.includes('%', start)) return true;
  try {
    decodeURIComponent(url.slice(start + 1));
    return true;
  } catch {
    return false;
  }
}

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
      if (!wellEncodedQuery(request.url)) {
        return reply
          .code(400)
          .send(errorBody('invalid_request', 'the query string is not valid percent-encoded UTF-8'));
      }
      const { event, feature, cost } = request.query;
      return send(reply, event, await decide({ event, feature, cost: cost === undefined ? undefined : Number(cost) }));
    });
    app.post<{ Body: CheckBody }>(url, { schema: schema.body }, async (request, reply) => {
      return send(reply, request.body.event, await decide(request.body));
    });
  }
  // Each check of a batch is decided on its own, as concurrent /checks would be: one refused
  // or shed answers its own error, and the others stand.
  app.post<{ Body: CheckBody[] }>(
    '/check/batch',
    { schema: checkBatchRoute, bodyLimit: DEFAULTS.bodyLimitBytes * DEFAULTS.batchMaxChecks },
    async (request) => Promise.all(request.body.map((check) => limiter.check(check).catch(batchItemError))),
  );
}
