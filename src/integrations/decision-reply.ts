/**
 * What the express middleware and the fastify plugin answer: the RateLimit headers memgate's
 * own /check sends (written by the same function), and on a denial a 429 whose body is the
 * decision, as /check's. Neither framework is loaded here.
 */
import type { Decision } from '../shared/decision.js';
import { rateLimitHeaders } from '../shared/rate-limit-headers.js';
import { CLIENT_DEFAULTS } from '../shared/defaults.js';
import { clientAddressFeature, validIpv6Subnet } from '../shared/client-address.js';
import { featureName } from '../shared/feature-name.js';
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
  /**
   * Who is asking (default: the client's IP address as the framework sees it, an IPv6 one by its
   * prefix, see ipv6Subnet); one memgate refuses is checked as its hash (feature-name.ts).
   */
  readonly feature?: ((request: Request) => string) | undefined;
  /**
   * The prefix, in bits, that the default feature counts an IPv6 client by: 56 by default, as
   * express-rate-limit 8 does; false counts each address alone. Unused with a feature of your own.
   */
  readonly ipv6Subnet?: number | false | undefined;
  /** The request's cost (default 1). */
  readonly cost?: ((request: Request) => number) | undefined;
}

export function checkOf<Request>(
  who: string,
  options: RequestCheckOptions<Request>,
  defaults: { event: (request: Request) => string; feature: (request: Request) => string },
): CheckOf<Request> {
  const { event, feature, cost, ipv6Subnet = CLIENT_DEFAULTS.ipv6Subnet } = options;
  if (event !== undefined && typeof event !== 'function' && (typeof event !== 'string' || event === '')) {
    throw new TypeError(`${who}: event must be an event name or a function of the request`);
  }
  if (feature !== undefined && typeof feature !== 'function') {
    throw new TypeError(`${who}: feature must be a function of the request`);
  }
  if (cost !== undefined && typeof cost !== 'function') {
    throw new TypeError(`${who}: cost must be a function of the request`);
  }
  if (!validIpv6Subnet(ipv6Subnet)) {
    throw new TypeError(`${who}: ipv6Subnet must be a whole number of bits from 1 to 128, or false`);
  }
  const byAddress = (request: Request) => clientAddressFeature(defaults.feature(request), ipv6Subnet);
  return {
    event: typeof event === 'string' ? () => event : (event ?? defaults.event),
    feature: (request) => featureName((feature ?? byAddress)(request)),
    cost: cost ?? (() => undefined),
  };
}
