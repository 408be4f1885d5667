import { isUtf8 } from 'node:buffer';
import { METHODS } from 'node:http';
import { isIP } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../../config/error-codes.js';
import type { GatewayPolicy, PathOutcome } from '../../config/gateway-policy.js';
import { clientAddressFeature } from '../../shared/client-address.js';
import { LimiterInputError } from '../../counting/errors.js';
import type { Limiter } from '../../counting/limiter.js';
import { errorBody, sendError, type ErrorHandler } from '../errors.js';
import { rateLimitHeaderWriter } from '../rate-limit-headers.js';
import { UNTRACED, type RouteSpans } from '../route-spans.js';
import { gateRoute } from '../schemas.js';

/** Input a gateway sent that memgate cannot place: answered with gateway.invalidStatus, counting nothing. */
class GatewayInputError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** /gate itself, or a path under it (Envoy's path_prefix); anything else is another route. */
export const isGateUrl = (url: string): boolean => /^\/gate(?:[/?]|$)/.test(url);

/**
 * /gate and /gate/*, any method: the endpoint a gateway asks before it forwards a request
 * (nginx auth_request, Traefik ForwardAuth, Envoy ext_authz in HTTP mode). Only what the
 * policy file's `gateway` section names is read. Allowed: 200; denied: `denyStatus`; both
 * with the RateLimit headers, and Retry-After on a denial. Input it cannot place gets
 * `invalidStatus`, its code also in a `memgate-error` header (nginx cannot read bodies).
 * With `spans` (tracing on), each request is a span.
 */
export function registerGatewayRoutes(
  app: FastifyInstance,
  limiter: Limiter,
  handleError: ErrorHandler,
  { spans = UNTRACED }: { readonly spans?: RouteSpans } = {},
): void {
  const setHeaders = rateLimitHeaderWriter();
  // Envoy asks with the guarded request's own method (PROPFIND, PURGE, ...): /gate answers them all.
  for (const method of METHODS)
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method);
  void app.register((gate, _options, done) => {
    // Nothing memgate reads is in a body: whatever a gateway forwards is ignored, never refused.
    gate.removeAllContentTypeParsers();
    gate.addContentTypeParser('*', (_request, _payload, parsed) => {
      parsed(null);
    });
    gate.setErrorHandler((error: FastifyError, request, reply) => {
      const gateway = limiter.policies.gateway;
      const ours = error instanceof GatewayInputError || error instanceof LimiterInputError;
      // fastify's own 4xx (a request it could not read) are bad input too; 503s and bugs are not.
      if (!gateway || (!ours && (error.statusCode ?? 500) >= 500)) return handleError(error, request, reply);
      return refuse(reply, gateway, ours ? error.code : 'invalid_request', error.message);
    });
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      // One snapshot for the whole request: the gateway section, its lists and the event's limits.
      const snapshot = limiter.current();
      const gateway = snapshot.policies.gateway;
      if (!gateway) return sendError(reply, 'not_found', 'the policy file has no gateway section, so /gate is off');
      const outcome = outcomeOf(request, gateway);
      if (outcome.action === 'refuse') throw new GatewayInputError(outcome.code, outcome.message);
      const feature = outcome.action === 'allow' ? listedOnly(request, gateway) : featureOf(request, gateway);
      if (feature === undefined) {
        const uncounted = { allowed: true, limits: [], policyVersion: snapshot.version };
        spans.describe?.(undefined, uncounted);
        return uncounted;
      }
      const event = outcome.action === 'allow' ? undefined : outcome.event;
      // The gateway sends the tier with every request; an event without tiers has one limit set for all.
      const tiered =
        event !== undefined &&
        gateway.tierHeader !== undefined &&
        (snapshot.plans.get(event)?.clients?.tiers.size ?? 0) > 0;
      const tier = tiered && gateway.tierHeader ? textHeader(request, gateway.tierHeader, 'invalid_tier') : undefined;
      // The gateway's lists hold for every path, before any event's limits (Limiter.gate).
      const decision = await snapshot.gate({ event, feature, tier });
      spans.describe?.(event, decision);
      const status = decision.allowed ? 200 : gateway.denyStatus;
      if (event === undefined || decision.listed) return reply.code(status).send(decision);
      setHeaders(reply.code(status), snapshot, event, decision);
      return decision;
    };
    const traced = spans.wrap(handler);
    gate.all('/gate', { schema: gateRoute, ...spans.hooks }, traced);
    // Documented once, as /gate, whose description names /gate/{path}.
    gate.all('/gate/*', { schema: { ...gateRoute, hide: true }, ...spans.hooks }, traced);
    done();
  });
}

/** A refusal of the gateway's input, in a status every supported gateway hands on to the client. */
export function refuse(reply: FastifyReply, gateway: GatewayPolicy, code: ErrorCode, message: string): FastifyReply {
  return reply.code(gateway.invalidStatus).header('memgate-error', code).send(errorBody(code, message));
}

function outcomeOf(request: FastifyRequest, gateway: GatewayPolicy): PathOutcome {
  if (gateway.event.from === 'header') {
    // An unknown name is refused by the limiter (unknown_event); no header means routes decide.
    const named = textHeader(request, gateway.event.header, 'invalid_event');
    if (named !== undefined) return { action: 'count', event: named };
  }
  if (gateway.uri.from === 'path') {
    // Envoy always sends a path after /gate; a bare /gate is a gateway sending its URI elsewhere.
    const path = request.url.slice('/gate'.length);
    if (!path.startsWith('/'))
      throw new GatewayInputError(
        'invalid_uri',
        'gateway.uri is path, but /gate was called without one: set gateway.uri to the header your gateway sends',
      );
    return gateway.resolve(path);
  }
  const uri = single(request, gateway.uri.header, 'invalid_uri');
  if (uri === undefined) throw new GatewayInputError('invalid_uri', `the gateway sent no ${gateway.uri.header} header`);
  return gateway.resolve(uri);
}

/**
 * The client of a path let through uncounted (`unmatched: allow`), for the gateway's lists
 * only: undefined when the section has none, or when the client cannot be found (such a path
 * needs no client, so it is not refused for it).
 */
function listedOnly(request: FastifyRequest, gateway: GatewayPolicy): string | undefined {
  if (gateway.allow.length === 0 && gateway.deny.length === 0) return undefined;
  try {
    return featureOf(request, gateway);
  } catch (error) {
    if (error instanceof GatewayInputError) return undefined;
    throw error;
  }
}

function featureOf(request: FastifyRequest, gateway: GatewayPolicy): string {
  if (gateway.feature.from === 'client-ip') {
    // request.ip is the address before the trusted proxies; a proxy of ours writes only addresses there.
    if (isIP(request.ip) === 0)
      throw new GatewayInputError('invalid_feature', 'the client address in X-Forwarded-For is not an IP address');
    return clientAddressFeature(request.ip, gateway.ipv6Subnet);
  }
  const value = textHeader(request, gateway.feature.header, 'invalid_feature');
  if (value === undefined)
    throw new GatewayInputError(
      'invalid_feature',
      `the ${gateway.feature.header} header names who is asking; it is missing`,
    );
  return value;
}

/** A header's one value; sent more than once it is refused (which one would count?), empty it is absent. */
function single(request: FastifyRequest, name: string, code: ErrorCode): string | undefined {
  const raw = request.raw.rawHeaders;
  const values: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === name) values.push(raw[i + 1] ?? '');
  if (values.length > 1) throw new GatewayInputError(code, `the ${name} header was sent more than once`);
  return values[0] === '' ? undefined : values[0];
}

const NOT_ASCII = /[\u0080-\uffff]/;

/**
 * A header naming an event or a client, as UTF-8 text. Node reads header bytes as latin1, so
 * "José" sent as UTF-8 would count as "JosÃ©", and bytes that are not UTF-8 would count at all:
 * read again as UTF-8, or refused, as every other route reads text. (A URI header stays as
 * sent: paths are matched byte for byte.)
 */
function textHeader(request: FastifyRequest, name: string, code: ErrorCode): string | undefined {
  const value = single(request, name, code);
  if (value === undefined || !NOT_ASCII.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  if (!isUtf8(bytes)) throw new GatewayInputError(code, `the ${name} header is not UTF-8`);
  return bytes.toString('utf8');
}
