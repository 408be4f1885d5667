import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { AJV_CODE_OPTIONS } from './defaults.js';
import { formatDuration, parseDuration } from './duration.js';
import { parseGateway, type GatewayPolicy, type RawGateway } from './gateway-policy.js';
import { policyFileSchema } from './policy-schema.js';

export type Algorithm = 'sliding' | 'fixed';

/**
 * How a sliding window counts its oldest bucket when the bucket lies partly outside the
 * window: `whole` counts it (never over-admits; the default), `drop` leaves it out (never
 * denies early; may over-admit by one bucket's requests), `weighted` counts the share of
 * it inside the window.
 */
export type Edge = 'whole' | 'drop' | 'weighted';

/**
 * What a check decides when the store cannot answer in time: `allow` (the default: an
 * outage of the rate limiter does not become an outage of the API) or `deny` (for events
 * where letting traffic through unchecked is the greater risk, such as logins).
 */
export type OnStoreError = 'allow' | 'deny';

/** One limit of an event, with durations in seconds. */
export interface LimitPolicy {
  /** Unique within its event; used in decisions and RateLimit headers. */
  readonly name: string;
  readonly limit: number;
  readonly window: number;
  /** Size of the finest bucket; equals `window` for fixed windows. */
  readonly granularity: number;
}

export interface EventPolicy {
  readonly event: string;
  readonly algorithm: Algorithm;
  /** Treatment of the oldest, partly-outside bucket of each sliding limit. */
  readonly edge: Edge;
  readonly onStoreError: OnStoreError;
  /** In the order of the policy file. */
  readonly limits: readonly LimitPolicy[];
}


/** A validated policy file: what createLimiter and the service run on. */
export class PolicySet {
  readonly events: ReadonlyMap<string, EventPolicy>;

  constructor(
    events: Iterable<EventPolicy>,
    /** Where the policies came from (a file path), for error messages and logs. */
    readonly source: string,
    readonly gateway?: GatewayPolicy,
  ) {
    this.events = new Map([...events].map((policy) => [policy.event, policy]));
  }
}

/** A policy file that cannot be used; `problems` lists every fault found, one line each. */
export class PolicyError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(`invalid policies in ${source}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'PolicyError';
  }
}

const DURATION_HINT = 'must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds';

const validateShape = new Ajv({ allErrors: true, allowUnionTypes: true, code: AJV_CODE_OPTIONS }).compile(policyFileSchema);

/** The raw document shape, as written in YAML or JSON. */
interface PolicyDocument {
  events: Record<string, { algorithm?: Algorithm; edge?: Edge; onStoreError?: OnStoreError; limits: RawLimit[] }>;
  gateway?: RawGateway;
}
interface RawLimit {
  name?: string;
  limit: number;
  window: string | number;
  granularity?: string | number;
}

/** Validates a parsed policy document (the object form of the file). */
export function parsePolicies(document: unknown, source = 'policies'): PolicySet {
  if (!validateShape(document)) {
    throw new PolicyError(source, (validateShape.errors ?? []).map((e) => describeSchemaError(e, document)));
  }
  const doc: PolicyDocument = document;
  const problems: string[] = [];
  const events: EventPolicy[] = [];
  for (const [event, raw] of Object.entries(doc.events)) {
    const algorithm = raw.algorithm ?? 'sliding';
    if (algorithm === 'fixed' && raw.edge !== undefined) {
      problems.push(`event "${event}", field edge: applies to sliding windows only; a fixed window has no partial bucket`);
    }
    const limits: LimitPolicy[] = [];
    raw.limits.forEach((rawLimit, index) => {
      const report = (field: string, message: string): void => {
        problems.push(`event "${event}", field limits[${index}].${field}: ${message}`);
      };
      const limit = parseLimit(rawLimit, algorithm, report);
      if (limit) limits.push({ ...limit, name: rawLimit.name ?? `${event}-${formatDuration(limit.window)}` });
    });
    const seen = new Set<string>();
    limits.forEach((limit, index) => {
      if (seen.has(limit.name)) {
        problems.push(
          `event "${event}", field limits[${index}].name: "${limit.name}" is used by another limit of this event; give each limit a distinct name`,
        );
      }
      seen.add(limit.name);
    });
    events.push({ event, algorithm, edge: raw.edge ?? 'whole', onStoreError: raw.onStoreError ?? 'allow', limits });
  }
  const gateway = doc.gateway === undefined ? undefined : parseGateway(doc.gateway, new Set(Object.keys(doc.events)), problems);
  if (problems.length > 0) throw new PolicyError(source, problems);
  return new PolicySet(events, source, gateway);
}

function parseLimit(
  raw: RawLimit,
  algorithm: Algorithm,
  report: (field: string, message: string) => void,
): Omit<LimitPolicy, 'name'> | undefined {
  const window = parseDuration(raw.window);
  if (window === undefined) {
    report('window', `${DURATION_HINT} (got ${JSON.stringify(raw.window)})`);
    return undefined;
  }
  if (algorithm === 'fixed') {
    if (raw.granularity !== undefined) {
      report('granularity', 'applies to sliding windows only; a fixed window is one counter per window');
      return undefined;
    }
    return { limit: raw.limit, window, granularity: window };
  }
  const granularity = raw.granularity === undefined ? 1 : parseDuration(raw.granularity);
  if (granularity === undefined) {
    report('granularity', `${DURATION_HINT} (got ${JSON.stringify(raw.granularity)})`);
    return undefined;
  }
  if (window % granularity !== 0) {
    report('window', `${formatDuration(window)} is not a multiple of the granularity ${formatDuration(granularity)}`);
    return undefined;
  }
  return { limit: raw.limit, window, granularity };
}

/** Reads and validates a YAML or JSON policy file. */
export async function loadPolicyFile(path: string): Promise<PolicySet> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new PolicyError(path, [`cannot read the file: ${(error as Error).message}`]);
  }
  return parsePolicyText(text, path);
}

/** Validates the text of a policy file: JSON when `source` ends in .json, else YAML. */
export function parsePolicyText(text: string, source: string): PolicySet {
  const json = extname(source).toLowerCase() === '.json';
  let document: unknown;
  try {
    document = json ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new PolicyError(source, [`not valid ${json ? 'JSON' : 'YAML'}: ${(error as Error).message}`]);
  }
  return parsePolicies(document, source);
}

/** Turns an ajv error into "event "login", field limits[0].limit: must be >= 1 (got 0)". */
function describeSchemaError(error: ErrorObject, document: unknown): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
  let message: string;
  if (error.keyword === 'additionalProperties') {
    message = `unknown key "${String(error.params.additionalProperty)}"`;
  } else if (error.keyword === 'required') {
    message = `missing required key "${String(error.params.missingProperty)}"`;
  } else if (error.keyword === 'propertyNames') {
    const name = String(error.params.propertyName);
    return `event "${name}": event names are 1 to 64 letters, digits, "_", "." or "-"`;
  } else if (error.keyword === 'type' && (path.at(-1) === 'window' || path.at(-1) === 'granularity')) {
    message = `${DURATION_HINT} (got ${JSON.stringify(valueAt(document, path))})`;
  } else if (error.keyword === 'enum') {
    message = `must be one of ${(error.params.allowedValues as unknown[]).join(', ')} (got ${JSON.stringify(valueAt(document, path))})`;
  } else if (error.keyword === 'type' && path.join('/') === 'gateway/trustedProxies') {
    message = `must be a number of proxies or a list of their addresses and CIDR ranges (got ${JSON.stringify(valueAt(document, path))})`;
  } else if (error.keyword === 'pattern' && path.at(-1) === 'prefix') {
    message = `must be a path: a "/" then no spaces, "?" or "#" (got ${JSON.stringify(valueAt(document, path))})`;
  } else if (error.keyword === 'minProperties' && path.join('/') === 'events') {
    return 'field events: defines no events';
  } else {
    message = `${error.message ?? 'is invalid'} (got ${JSON.stringify(valueAt(document, path))})`;
  }
  if (path[0] === 'events' && path[1] !== undefined) {
    const field = formatField(path.slice(2));
    return `event "${path[1]}"${field ? `, field ${field}` : ''}: ${message}`;
  }
  return `${path.length > 0 ? `field ${formatField(path)}` : 'top level'}: ${message}`;
}

function formatField(path: readonly string[]): string {
  return path.map((segment, i) => (/^[0-9]+$/.test(segment) ? `[${segment}]` : `${i > 0 ? '.' : ''}${segment}`)).join('');
}

function valueAt(document: unknown, path: readonly string[]): unknown {
  let value: unknown = document;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}
