import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayPolicy } from '../../config/policies.js';
import { LimiterInputError, type InputErrorCode } from '../../counting/errors.js';
import type { Limiter } from '../../counting/limiter.js';
import { rateLimitHeaderWriter } from '../rate-limit-headers.js';

/** Headers gateways use to pass the path of the request they guard. */
const ORIGINAL_URI_HEADERS = ['x-original-uri', 'x-forwarded-uri'] as const;

/**
 * /gate and /gate/*, any method: the endpoint a gateway asks before it forwards a request
 * (nginx auth_request, Traefik ForwardAuth, Envoy ext_authz in HTTP mode). The event
 * comes from the `x-memgate-event` header, else from the policy file's `gateway.routes`
 * matched against the original path, else from the first path segment after /gate. The
 * feature comes from `gateway.feature`. Allowed: 200; denied: `gateway.denyStatus`; both
 * with the RateLimit headers, and Retry-After on a denial.
 */
export function registerGatewayRoutes(app: FastifyInstance, limiter: Limiter): void {
  const setHeaders = rateLimitHeaderWriter(limiter);
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const gateway: GatewayPolicy = limiter.policies.gateway ?? DEFAULT_GATEWAY;
    const event = eventOf(request, gateway);
    const feature = featureOf(request, gateway);
    const decision = await limiter.check({ event, feature });
    setHeaders(reply.code(decision.allowed ? 200 : gateway.denyStatus), event, decision);
    return decision;
  };
  app.all('/gate', handler);
  app.all('/gate/*', handler);
}

const DEFAULT_GATEWAY: GatewayPolicy = { feature: { from: 'client-ip' }, trustedProxies: 0, denyStatus: 429, routes: [] };

function eventOf(request: FastifyRequest, gateway: GatewayPolicy): string {
  const named = single(request, 'x-memgate-event', 'invalid_event');
  if (named !== undefined) return named;
  const path = pathAfterGate(request.url);
  const original = ORIGINAL_URI_HEADERS.map((name) => single(request, name, 'invalid_event')).find((value) => value !== undefined) ?? path;
  const originalPath = original.split('?')[0] ?? '';
  const route = gateway.routes.find(({ prefix }) => originalPath.startsWith(prefix));
  if (route) return route.event;
  const segment = path.split('/')[1] ?? '';
  if (segment === '') throw new LimiterInputError('invalid_event', 'no event: send x-memgate-event, map the path in gateway.routes, or call /gate/<event>');
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new LimiterInputError('invalid_event', 'the event in the path is not valid percent-encoding');
  }
}

function featureOf(request: FastifyRequest, gateway: GatewayPolicy): string {
  if (gateway.feature.from === 'client-ip') return request.ip;
  const value = single(request, gateway.feature.header, 'invalid_feature');
  if (value === undefined) throw new LimiterInputError('invalid_feature', `the ${gateway.feature.header} header names who is asking; it is missing`);
  return value;
}

/** A header's value; one that arrives as several values is refused (which one would count?). */
function single(request: FastifyRequest, name: string, code: InputErrorCode): string | undefined {
  const value = request.headers[name];
  if (Array.isArray(value)) throw new LimiterInputError(code, `the ${name} header was sent more than once`);
  return value === '' ? undefined : value;
}

/** The path after /gate, with its leading slash; '' for /gate itself. */
function pathAfterGate(url: string): string {
  const path = url.split('?')[0] ?? '';
  return path.slice('/gate'.length);
}
