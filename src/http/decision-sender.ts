import type { FastifyReply } from 'fastify';
import type { Decision } from '../counting/decision.js';
import { rateLimitHeaderWriter, type DecidedUnder } from './rate-limit-headers.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** Sends a decision made under `snapshot`: 200 or 429 with its RateLimit headers, the decision as the body. */
export type DecisionSender = <D extends Decision>(
  reply: FastifyReply,
  snapshot: DecidedUnder,
  event: string,
  decision: D,
) => D | FastifyReply;

/**
 * A sender for one route (a denial's body is serialized by its route's schema). A denial
 * repeated from memory is one object for as long as its answer reads the same (a second at
 * most): the traffic of a client far over its limit, on any route, is serialized once.
 */
export function decisionSender({
  onDecision,
}: {
  /** Told of each decision before it is sent (its request's span, when tracing is on). */
  readonly onDecision?: ((event: string, decision: Decision) => void) | undefined;
} = {}): DecisionSender {
  const setHeaders = rateLimitHeaderWriter();
  const denialBodies = new WeakMap<Decision, string>();
  return (reply, snapshot, event, decision) => {
    onDecision?.(event, decision);
    setHeaders(reply.code(decision.allowed ? 200 : 429), snapshot, event, decision);
    if (decision.allowed) return decision;
    let body = denialBodies.get(decision);
    if (body === undefined) denialBodies.set(decision, (body = reply.serialize(decision) as string));
    return reply.type(JSON_TYPE).send(body);
  };
}
