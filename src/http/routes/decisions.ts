import type { FastifyInstance } from 'fastify';
import type { Decision } from '../../counting/decision.js';
import type { CheckOrReserve, Limiter } from '../../counting/limiter.js';
import { DEFAULTS } from '../../config/defaults.js';
import type { ErrorCode } from '../../config/error-codes.js';
import { batchItemError, errorBody, type ErrorBody } from '../errors.js';
import { decisionSender } from '../decision-sender.js';
import {
  checkBatchRoute,
  checkBodyRoute,
  checkQueryRoute,
  peekBodyRoute,
  peekQueryRoute,
  settleRoute,
  type CheckBody,
  type SettleBody,
  type CheckQuerystring,
} from '../schemas.js';

/** The code a query parameter that does not decode is refused with: its field's, as JSON's. */
const FIELD_CODES: ReadonlyMap<string, ErrorCode> = new Map([
  ['event', 'invalid_event'],
  ['feature', 'invalid_feature'],
  ['tier', 'invalid_tier'],
]);

/**
 * Why the URL's query string does not decode to text, or undefined when it does. fastify's
 * parser leaves a %XX sequence that is not UTF-8 (or not hex) as it is, so `%E9` would count
 * as the three characters: such a query is refused, naming the parameter. Most queries hold no %.
 */
function queryProblem(url: string): ErrorBody | undefined {
  const start = url.indexOf('?');
  if (start === -1 || !url.includes('%', start)) return undefined;
  const query = url.slice(start + 1);
  if (decodes(query)) return undefined;
  const bad = query.split('&').find((parameter) => !decodes(parameter)) ?? '';
  const name = bad.slice(0, bad.includes('=') ? bad.indexOf('=') : undefined);
  const field = decodes(name) ? decodeURIComponent(name) : '';
  const code = FIELD_CODES.get(field);
  return errorBody(
    code ?? 'invalid_request',
    `${code ? field : 'the query string'} is not valid percent-encoded UTF-8`,
  );
}

function decodes(text: string): boolean {
  try {
    decodeURIComponent(text);
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
  // /check and /peek answer by one schema.
  const send = decisionSender(limiter);
  const routes: [string, (request: CheckOrReserve) => Promise<Decision>, { query: object; body: object }][] = [
    ['/check', (request) => limiter.check(request), { query: checkQueryRoute, body: checkBodyRoute }],
    // /peek's schemas take no `reserve`.
    ['/peek', (request) => limiter.peek(request), { query: peekQueryRoute, body: peekBodyRoute }],
  ];
  for (const [url, decide, schema] of routes) {
    app.get<{ Querystring: CheckQuerystring }>(url, { schema: schema.query }, async (request, reply) => {
      const problem = queryProblem(request.url);
      if (problem) return reply.code(400).send(problem);
      const { event, feature, cost, tier, reserve } = request.query;
      return send(
        reply,
        event,
        await decide({
          event,
          feature,
          cost: cost === undefined ? undefined : Number(cost),
          tier,
          // One shape for every request, no spread: this runs for every GET /check.
          reserve: reserve === undefined ? undefined : Number(reserve),
        }),
      );
    });
    app.post<{ Body: CheckBody }>(url, { schema: schema.body }, async (request, reply) => {
      return send(reply, request.body.event, await decide(request.body));
    });
  }
  app.post<{ Body: SettleBody }>('/settle', { schema: settleRoute }, async (request) => limiter.settle(request.body));
  // Each check of a batch is decided on its own, as concurrent /checks would be: one refused
  // or shed answers its own error, and the others stand.
  app.post<{ Body: CheckBody[] }>(
    '/check/batch',
    { schema: checkBatchRoute, bodyLimit: DEFAULTS.batchBodyLimitBytes },
    async (request) => Promise.all(request.body.map((check) => limiter.check(check).catch(batchItemError))),
  );
}
