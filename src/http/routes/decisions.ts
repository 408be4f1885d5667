import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { CheckOrReserve, Limiter } from '../../counting/limiter.js';
import { DEFAULTS } from '../../config/defaults.js';
import type { ErrorCode } from '../../config/error-codes.js';
import { batchItemError, errorBody, type ErrorBody } from '../errors.js';
import { decisionSender } from '../decision-sender.js';
import { UNTRACED, type RouteSpans } from '../route-spans.js';
import {
  checkBatchRoute,
  checkBodyRoute,
  checkQueryRoute,
  peekBodyRoute,
  peekQueryRoute,
  releaseRoute,
  settleRoute,
} from '../schemas.js';
import type { CheckQuery } from '../../shared/contract.js';

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
 * With `spans` (tracing on), each of their requests is a span.
 */
export function registerDecisionRoutes(
  fastify: FastifyInstance,
  limiter: Limiter,
  { spans = UNTRACED }: { readonly spans?: RouteSpans } = {},
): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  // /check and /peek answer by one schema.
  const send = decisionSender({ onDecision: spans.describe });
  const check = (snapshot: Limiter, request: CheckOrReserve) => snapshot.check(request);
  const peek = (snapshot: Limiter, request: CheckOrReserve) => snapshot.peek(request);
  /** A query string's request: its numbers as numbers, in one shape, no spread (this runs for every GET /check). */
  const fromQuery = ({ event, feature, cost, tier, reserve }: CheckQuery): CheckOrReserve => ({
    event,
    feature,
    cost: cost === undefined ? undefined : Number(cost),
    tier,
    reserve: reserve === undefined ? undefined : Number(reserve),
  });
  // Each request is decided under the snapshot of the policies in force when it arrives, and its headers built from it.
  for (const [url, decide, schema] of [
    ['/check', check, checkQueryRoute],
    ['/peek', peek, peekQueryRoute],
  ] as const) {
    app.get(
      url,
      { schema, ...spans.hooks },
      spans.wrap(async (request, reply) => {
        const problem = queryProblem(request.url);
        if (problem) return reply.code(400).send(problem);
        const snapshot = limiter.current();
        return send(reply, snapshot, request.query.event, await decide(snapshot, fromQuery(request.query)));
      }),
    );
  }
  for (const [url, decide, schema] of [
    ['/check', check, checkBodyRoute],
    ['/peek', peek, peekBodyRoute],
  ] as const) {
    app.post(
      url,
      { schema, ...spans.hooks },
      spans.wrap(async (request, reply) => {
        const snapshot = limiter.current();
        return send(reply, snapshot, request.body.event, await decide(snapshot, request.body));
      }),
    );
  }
  app.post('/settle', { schema: settleRoute }, async (request) => limiter.settle(request.body));
  app.post('/release', { schema: releaseRoute }, async (request) => limiter.release(request.body));
  // Each check of a batch is decided on its own, as concurrent /checks would be: one refused
  // or shed answers its own error, and the others stand. All under one snapshot of the policies.
  app.post('/check/batch', { schema: checkBatchRoute, bodyLimit: DEFAULTS.batchBodyLimitBytes }, async (request) => {
    const snapshot = limiter.current();
    return Promise.all(request.body.map((body) => snapshot.check(body).catch(batchItemError)));
  });
}
