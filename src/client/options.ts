/**
 * createClient's options: each checked once, with a one-line error naming it, and the
 * defaults filled in from config/defaults.ts (the one table of memgate's defaults).
 */
import { CLIENT_DEFAULTS } from '../shared/defaults.js';
import { MemgateClientError } from './errors.js';
import type { FetchFunction } from './transport.js';

export interface ClientOptions {
  /** memgate's base URL, e.g. `http://memgate:8080` (a path is kept: `http://gw/memgate`). */
  readonly url: string | URL;
  /** How long a request to memgate may take, in ms, before its checks answer by `onError`. Default 500. */
  readonly timeoutMs?: number | undefined;
  /** What a check answers when memgate cannot be reached. Default `allow`. */
  readonly onError?: 'allow' | 'deny' | undefined;
  /** How long, in ms (0 to 10), a check waits for others to share its request; 0 (default) is the current tick. */
  readonly batchWindowMs?: number | undefined;
  /** Checks one request may carry, 1 to 100 (default 100); 1 sends every check on its own. */
  readonly maxBatchSize?: number | undefined;
  /** Keep-alive connections to memgate (the undici pool, in Node). Default 10. */
  readonly connections?: number | undefined;
  /** Sent with every request (e.g. a proxy's authorization). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** A fetch to use instead of undici (any runtime with fetch; tests). */
  readonly fetch?: FetchFunction | undefined;
  /** MEMGATE_ADMIN_TOKEN, for reset() and refund(). */
  readonly adminToken?: string | undefined;
  /** After memgate could not be reached, how long (ms) checks answer by `onError` at once before one tries again. Default 1000; 0 tries every check. */
  readonly errorBackoffMs?: number | undefined;
  /** Denied keys (event, feature, cost) remembered at once; the oldest go first. Default 10,000. */
  readonly maxLocalDenials?: number | undefined;
  /**
   * Units to ask for in a quota lease (docs/client.md#leases), for events whose policy allows
   * leases: checks then spend them here, without a request. Default 0: no leases.
   */
  readonly leaseUnits?: number | undefined;
}

export interface ResolvedOptions {
  readonly url: URL;
  readonly timeoutMs: number;
  readonly onError: 'allow' | 'deny';
  readonly batchWindowMs: number;
  readonly maxBatchSize: number;
  readonly connections: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly fetch: FetchFunction | undefined;
  readonly adminToken: string | undefined;
  readonly errorBackoffMs: number;
  readonly maxLocalDenials: number;
  readonly leaseUnits: number;
}

const KNOWN = new Set<string>([
  'url',
  'timeoutMs',
  'onError',
  'batchWindowMs',
  'maxBatchSize',
  'connections',
  'headers',
  'fetch',
  'adminToken',
  'errorBackoffMs',
  'maxLocalDenials',
  'leaseUnits',
]);

function invalid(name: string, rule: string, value: unknown): MemgateClientError {
  return new MemgateClientError('invalid_option', `memgate client: option ${name} ${rule} (got ${shown(value)})`);
}

function shown(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  try {
    return (JSON.stringify(value) as string | undefined)?.slice(0, 80) ?? String(value);
  } catch {
    return String(value);
  }
}

function wholeNumber(
  options: Record<string, unknown>,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  const value = options[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
    throw invalid(name, `must be a whole number ${range}`, value);
  }
  return value;
}

export function resolveOptions(input: unknown): ResolvedOptions {
  if (typeof input !== 'object' || input === null) {
    throw new MemgateClientError(
      'invalid_option',
      `memgate client: options must be an object with a url (got ${shown(input)})`,
    );
  }
  const options = input as Record<string, unknown>;
  for (const name of Object.keys(options)) {
    if (!KNOWN.has(name))
      throw invalid(name, `is not an option; the options are ${[...KNOWN].join(', ')}`, options[name]);
  }
  const { url, onError, headers, fetch, adminToken } = options;
  let parsed: URL | undefined;
  try {
    parsed = url instanceof URL || typeof url === 'string' ? new URL(url) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw invalid('url', "must be memgate's http:// or https:// URL", url);
  }
  if (onError !== undefined && onError !== 'allow' && onError !== 'deny') {
    throw invalid('onError', 'must be allow or deny', onError);
  }
  if (headers !== undefined && !validHeaders(headers)) {
    throw invalid('headers', 'must be an object of header names to string values', headers);
  }
  if (fetch !== undefined && typeof fetch !== 'function') throw invalid('fetch', 'must be a fetch function', fetch);
  if (adminToken !== undefined && (typeof adminToken !== 'string' || adminToken.length === 0)) {
    throw invalid('adminToken', 'must be a non-empty string', adminToken);
  }
  const batchWindowMs = options.batchWindowMs ?? CLIENT_DEFAULTS.clientBatchWindowMs;
  if (
    typeof batchWindowMs !== 'number' ||
    !(batchWindowMs >= 0 && batchWindowMs <= CLIENT_DEFAULTS.clientMaxBatchWindowMs)
  ) {
    throw invalid(
      'batchWindowMs',
      `must be a number of milliseconds from 0 to ${CLIENT_DEFAULTS.clientMaxBatchWindowMs}`,
      batchWindowMs,
    );
  }
  const any = Number.MAX_SAFE_INTEGER;
  return {
    url: parsed,
    timeoutMs: wholeNumber(options, 'timeoutMs', 1, 2_147_483_647, CLIENT_DEFAULTS.clientTimeoutMs),
    onError: onError ?? CLIENT_DEFAULTS.clientOnError,
    batchWindowMs,
    maxBatchSize: wholeNumber(
      options,
      'maxBatchSize',
      1,
      CLIENT_DEFAULTS.batchMaxChecks,
      CLIENT_DEFAULTS.batchMaxChecks,
    ),
    leaseUnits: wholeNumber(options, 'leaseUnits', 0, any, CLIENT_DEFAULTS.clientLeaseUnits),
    connections: wholeNumber(options, 'connections', 1, any, CLIENT_DEFAULTS.clientConnections),
    headers: headers ?? {},
    fetch: fetch as FetchFunction | undefined,
    adminToken,
    errorBackoffMs: wholeNumber(options, 'errorBackoffMs', 0, 2_147_483_647, CLIENT_DEFAULTS.clientErrorBackoffMs),
    maxLocalDenials: wholeNumber(options, 'maxLocalDenials', 1, any, CLIENT_DEFAULTS.clientMaxLocalDenials),
  };
}

function validHeaders(headers: unknown): headers is Record<string, string> {
  return (
    typeof headers === 'object' &&
    headers !== null &&
    !Array.isArray(headers) &&
    Object.values(headers).every((value) => typeof value === 'string')
  );
}
