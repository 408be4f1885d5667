/**
 * What the express middleware and the fastify plugin answer: the RateLimit headers memgate's
 * own /check sends (written by the same function), and on a denial a 429 whose body is the
 * decision, as /check's. Neither framework is loaded here.
 */
import type { Decision } from '../counting/decision.js';
import { rateLimitHeaders } from '../http/rate-limit-headers.js';
import { featureName } from '../counting/feature-name.js';
import type { ClientDecision } from './memgate-client.js';

export const DENIED_STATUS = 429;

/** RateLimit-Policy, RateLimit and, on a denial, Retry-After; none for a degraded decision, which has no counts. */
export function decisionHeaders(decision: Decision): Record<string, string> {
  return rateLimitHeaders(decision);
}

/** The decision as memgate's /check answers it: without the client's `source`. */
export function decisionBody({ allowed, limits, retryAfter, degraded }: ClientDecision): Decision {
  return { allowed, limits, ...(retryAfter !== undefined && { retryAfter }), ...(degraded && { degraded }) };
}

/** How a request is turned into a check, read from the options of the middleware or plugin. */
export interface CheckOf<Request> {
  readonly event: (request: Request) => string;
  readonly feature: (request: Request) => string;
  readonly cost: (request: Request) => number | undefined;
}

/** The options both accept, for their own request type. */
export interface RequestCheckOptions<Request> {
  /** The event: a name, or read from the request (default: from the route's path, see route-event.ts). */
  readonly event?: string | ((request: Request) => string) | undefined;
  /** Who is asking (default: the client's IP address as the framework sees it); one memgate refuses is checked as its hash (feature-name.ts). */
  readonly feature?: ((request: Request) => string) | undefined;
  /** The request's cost (default 1). */
  readonly cost?: ((request: Request) => number) | undefined;
}

export function checkOf<Request>(
  who: string,
  options: RequestCheckOptions<Request>,
  defaults: { event: (request: Request) => string; feature: (request: Request) => string },
): CheckOf<Request> {
  const { event, feature, cost } = options;
  if (event !== undefined && typeof event !== 'function' && (typeof event !== 'string' || event === '')) {
    throw new TypeError(`${who}: event must be an event name or a function of the request`);
  }
  if (feature !== undefined && typeof feature !== 'function') {
    throw new TypeError(`${who}: feature must be a function of the request`);
  }
  if (cost !== undefined && typeof cost !== 'function') {
    throw new TypeError(`${who}: cost must be a function of the request`);
  }
  return {
    event: typeof event === 'string' ? () => event : (event ?? defaults.event),
    feature: (request) => featureName((feature ?? defaults.feature)(request)),
    cost: cost ?? (() => undefined),
  };
}
