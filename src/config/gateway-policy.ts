import proxyAddr from '@fastify/proxy-addr';
import { DEFAULTS } from './defaults.js';
import { formatPath } from './document-order.js';
import { clientAddressFeature, ipv6PrefixLength } from '../shared/client-address.js';
import { listMatcher, parseClientLists, type ClientMatch } from './feature-match.js';
import type { PathErrorCode } from './error-codes.js';
import { normalisePath, PATH_READINGS, type PathReading } from './gateway-path.js';

/** Where /gate reads something: a fixed place (`keyword`) or a request header the gateway sets. */
export type Source<K extends string> = { readonly from: K } | { readonly from: 'header'; readonly header: string };

/** What /gate does with a guarded request, from its path. */
export type PathOutcome =
  | { readonly action: 'count'; readonly event: string }
  | { readonly action: 'allow' }
  | { readonly action: 'refuse'; readonly code: PathErrorCode; readonly message: string };

/**
 * How /gate, the endpoint gateways call (nginx auth_request, Traefik ForwardAuth, Envoy
 * ext_authz), finds the event and the client of the request it guards. Only what the
 * operator names here is read; every default is the choice a client cannot influence.
 */
export interface GatewayPolicy {
  /** The client's address (`client-ip`) or the value of a header (an API key, a user id). */
  readonly feature: Source<'client-ip'>;
  /** The prefix an IPv6 client-ip is counted by (false: each address alone); see shared/client-address.ts. */
  readonly ipv6Subnet: number | false;
  /** Proxies in front of memgate whose X-Forwarded-For entries count: a hop count, or their addresses. */
  readonly trustedProxies: number | readonly string[];
  /** trustedProxies as fastify's trustProxy function: is the address at this hop one of ours? */
  readonly trusts: (address: string, hop: number) => boolean;
  /** The guarded request's URI: the path after /gate (Envoy), or a header (nginx, Traefik). */
  readonly uri: Source<'path'>;
  /** The event: from routes, or from a header the gateway sets (routes when it sends none). */
  readonly event: Source<'routes'>;
  /** As written, longest prefix first. */
  readonly routes: readonly Route[];
  readonly pathCase: 'insensitive' | 'sensitive';
  /** A path no route matches: let it through uncounted, refuse it, or count it as an event. */
  readonly unmatched: 'allow' | 'deny' | { readonly event: string };
  /** Status of a denial: 429, or 403 for nginx auth_request, which passes on only 2xx, 401 and 403. */
  readonly denyStatus: 429 | 403;
  /** Status of input memgate cannot place: 400, or 401 for nginx auth_request. */
  readonly invalidStatus: 400 | 401;
  /** The outcome of a guarded request's URI under routes, pathCase and unmatched. */
  readonly resolve: (uri: string) => PathOutcome;
  /**
   * The header the gateway sets with the client's tier, from an authenticated identity:
   * trusted only because the gateway drops the client's own copy (see examples/).
   */
  readonly tierHeader?: string | undefined;
  /** Clients /gate lets through uncounted (`allow`) or refuses (`deny`) whatever the event. */
  readonly allow: readonly ClientMatch[];
  readonly deny: readonly ClientMatch[];
  /** Which of allow and deny holds a client (the most specific entry), if either does. */
  readonly listed: (feature: string) => 'allow' | 'deny' | undefined;
}

export interface Route {
  readonly prefix: string;
  readonly event: string;
}

/** The `gateway` section as written. */
export interface RawGateway {
  feature?: string;
  ipv6Subnet?: number | boolean;
  trustedProxies?: number | string[];
  uri?: string;
  event?: string;
  routes?: Route[];
  pathCase?: 'insensitive' | 'sensitive';
  unmatched?: string;
  denyStatus?: 429 | 403;
  invalidStatus?: 400 | 401;
  tier?: string;
  allow?: unknown[];
  deny?: unknown[];
}

const PROXY_NAMES = 'loopback, linklocal, uniquelocal';
const longestFirst = (a: Route, b: Route) => b.prefix.length - a.prefix.length;

/**
 * Validates the gateway section against the file's events, adding each fault to
 * `problems`. `refused` names fields whose shape was already refused (they are absent
 * from `raw`): checks that need them are skipped rather than report a second fault.
 */
export function parseGateway(raw: RawGateway, events: ReadonlySet<string>, problems: string[], refused: ReadonlySet<keyof RawGateway> = new Set()): GatewayPolicy {
  const report = (field: string, message: string) => problems.push(`gateway, field ${field}: ${message}`);
  const source = <K extends string>(field: 'feature' | 'uri' | 'event', keyword: K): Source<K> => {
    const text = raw[field] ?? keyword;
    const header = /^header:([A-Za-z0-9!#$%&'*+.^_`|~-]+)$/.exec(text)?.[1]?.toLowerCase();
    if (text !== keyword && header === undefined) report(field, `must be ${keyword} or header:<name> (got ${JSON.stringify(text)})`);
    return header === undefined ? { from: keyword } : { from: 'header', header };
  };
  // Built in the order of the docs, so problems are listed in that order too.
  const feature = source('feature', 'client-ip');
  if (raw.ipv6Subnet === true) report('ipv6Subnet', 'must be a whole number of bits from 1 to 128, or false (got true)');
  const trustedProxies = raw.trustedProxies ?? 0;
  const trusts = compileTrust(trustedProxies, report);
  const uri = source('uri', 'path');
  const event = source('event', 'routes');
  const routes = raw.routes ?? [];
  const pathCase = raw.pathCase ?? 'insensitive';
  const unmatchedText = raw.unmatched ?? 'allow';
  const unmatched = unmatchedText === 'allow' || unmatchedText === 'deny' ? unmatchedText : { event: unmatchedText };
  const resolve = compileResolve(routes, pathCase, unmatched, events, report);
  if (typeof unmatched === 'object' && !events.has(unmatched.event)) {
    report('unmatched', `must be allow, deny or an event of this file (got ${JSON.stringify(unmatched.event)})`);
  }
  let tierHeader: string | undefined;
  if (raw.tier !== undefined) {
    tierHeader = /^header:([A-Za-z0-9!#$%&'*+.^_`|~-]+)$/.exec(raw.tier)?.[1]?.toLowerCase();
    if (tierHeader === undefined) report('tier', `must be header:<name>, a header your gateway sets from an authenticated identity (got ${JSON.stringify(raw.tier)})`);
  }
  const ipv6Subnet = typeof raw.ipv6Subnet === 'number' || raw.ipv6Subnet === false ? raw.ipv6Subnet : DEFAULTS.ipv6Subnet;
  const lists = parseClientLists({ allow: raw.allow, deny: raw.deny }, (path, text) => {
    report(formatPath(path), text);
  }) ?? { allow: [], deny: [] };
  // The gateway's lists hold only at /gate: an entry that can never match a client there is a mistake.
  for (const list of ['allow', 'deny'] as const)
    lists[list].forEach((match, index) => {
      const missed = missedAtGate(match, { feature, ipv6Subnet });
      if (missed) report(`${list}[${index}]`, `${missed}; as written it would never ${list === 'deny' ? 'refuse' : 'let through'} anyone`);
    });
  const matcher = listMatcher(lists);
  const decided = !refused.has('routes') && !refused.has('event') && !refused.has('unmatched');
  if (decided && routes.length === 0 && event.from === 'routes' && unmatched === 'allow') {
    report('routes', 'none, no event header and unmatched: allow, so /gate would never count anything; add routes (prefix: / matches every path) or set unmatched');
  }
  return {
    feature,
    ipv6Subnet,
    trustedProxies,
    trusts,
    uri,
    event,
    routes: [...routes].sort(longestFirst),
    pathCase,
    unmatched,
    denyStatus: raw.denyStatus ?? 429,
    invalidStatus: raw.invalidStatus ?? 400,
    resolve,
    ...(tierHeader !== undefined ? { tierHeader } : {}),
    allow: lists.allow,
    deny: lists.deny,
    listed: matcher ? (feature) => matcher.match(feature) : () => undefined,
  };
}

/**
 * Why a rule can never hold a client /gate names by its address (`feature: client-ip`) while it
 * names an IPv6 client by its network of `ipv6Subnet` bits (`2001:db8:bad::/56`): an exact IPv6
 * address or another network as a `feature` (never that name), or a `cidr` narrower than the
 * prefix (never holding a whole one). Undefined when it can match.
 */
export function missedAtGate(match: ClientMatch, gateway: Pick<GatewayPolicy, 'feature' | 'ipv6Subnet'>): string | undefined {
  const grouped = gateway.ipv6Subnet;
  if (gateway.feature.from !== 'client-ip' || grouped === false || grouped === 128 || 'prefix' in match) return undefined;
  const written = 'feature' in match ? match.feature : match.cidr;
  const length = ipv6PrefixLength(written);
  // A network holds every /56 within it; a feature is one client's name.
  if (length === undefined || ('cidr' in match ? length <= grouped : length === grouped)) return undefined;
  const [address = written] = written.split('/');
  const instead =
    length > grouped
      ? `{ cidr: ${clientAddressFeature(address, grouped)} } (every address of that /${grouped})`
      : `{ cidr: ${written} }`;
  return `${length === 128 ? `${written} is one IPv6 address` : `${written} is a /${length}`}, but /gate counts IPv6 clients by their /${grouped} (gateway.ipv6Subnet), so it never holds one; match ${instead}, or set gateway.ipv6Subnet: false to count each address alone`;
}

/** A hop count trusts that many proxies whatever their address; a list trusts only those addresses. */
function compileTrust(trusted: number | readonly string[], report: (field: string, message: string) => void): GatewayPolicy['trusts'] {
  if (typeof trusted === 'number') return (_address, hop) => hop < trusted;
  const valid = trusted.filter((entry, index) => {
    try {
      proxyAddr.compile(entry);
      return true;
    } catch {
      report(`trustedProxies[${index}]`, `${JSON.stringify(entry)} is not an IP address, a CIDR range or one of ${PROXY_NAMES}`);
      return false;
    }
  });
  return valid.length === 0 ? () => false : proxyAddr.compile(valid);
}

/**
 * Routes as each path reading sees them (prefixes normalised like paths, folded when
 * pathCase is insensitive); a URI whose readings disagree on the outcome is refused.
 */
function compileResolve(
  routes: readonly Route[],
  pathCase: GatewayPolicy['pathCase'],
  unmatched: GatewayPolicy['unmatched'],
  events: ReadonlySet<string>,
  report: (field: string, message: string) => void,
): GatewayPolicy['resolve'] {
  const fold = (path: string) => (pathCase === 'insensitive' ? path.toLowerCase() : path);
  // A policy file is Unicode text; a path is bytes, so a prefix is read as its UTF-8 bytes.
  const prefixIn = (reading: PathReading, prefix: string) => {
    const path = normalisePath(Buffer.from(prefix, 'utf8').toString('latin1'), reading);
    return path === undefined ? undefined : fold(path);
  };
  const seen = new Set<string>();
  routes.forEach(({ prefix, event }, index) => {
    if (!events.has(event)) report(`routes[${index}].event`, `${JSON.stringify(event)} is not an event of this file`);
    const path = prefixIn('rfc3986', prefix);
    if (path === undefined) report(`routes[${index}].prefix`, `${JSON.stringify(prefix)} is not valid percent-encoding`);
    else if (seen.has(path)) report(`routes[${index}].prefix`, `${JSON.stringify(prefix)} names the same path as an earlier route once normalised (pathCase: ${pathCase})`);
    else seen.add(path);
  });
  const tables = new Map(
    PATH_READINGS.map((reading) => {
      const table = routes.flatMap(({ prefix, event }) => {
        const path = prefixIn(reading, prefix);
        return path === undefined ? [] : [{ prefix: path, event }];
      });
      return [reading, table.sort(longestFirst)] as const;
    }),
  );
  const unmatchedOutcome: PathOutcome =
    unmatched === 'allow'
      ? { action: 'allow' }
      : unmatched === 'deny'
        ? { action: 'refuse', code: 'unmatched_path', message: 'no route matches this path, and gateway.unmatched is deny' }
        : { action: 'count', event: unmatched.event };
  const outcomeIn = (reading: PathReading, uri: string): PathOutcome => {
    const normalised = normalisePath(uri, reading);
    if (normalised === undefined) return { action: 'refuse', code: 'invalid_uri', message: 'the path is not valid percent-encoding' };
    const path = fold(normalised);
    // A prefix matches the paths that start with it; /api/ also matches /api.
    const route = tables.get(reading)?.find(({ prefix }) => path.startsWith(prefix) || `${path}/` === prefix);
    return route ? { action: 'count', event: route.event } : unmatchedOutcome;
  };
  return (uri) => {
    const [strict, lenient] = PATH_READINGS.map((reading) => outcomeIn(reading, uri)) as [PathOutcome, PathOutcome];
    if (JSON.stringify(strict) === JSON.stringify(lenient)) return strict;
    return {
      action: 'refuse',
      code: 'ambiguous_uri',
      message: 'servers read this path as different routes (an encoded slash or backslash, a ;parameter, or // before ..); refused rather than guessed',
    };
  };
}
