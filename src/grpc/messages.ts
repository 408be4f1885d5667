// Envoy's rate limit messages as plain typed objects, and their checked conversion from and to what
// @grpc/proto-loader decodes and encodes (proto/envoy/service/ratelimit/v3/rls.proto). A request
// that breaks Envoy's own rules or memgate's size limits is refused here, before anything decides.
import { MAX_FEATURE_BYTES } from '../counting/resolve.js';

export type RateLimitCode = 'OK' | 'OVER_LIMIT';

/** RateLimitResponse.RateLimit.Unit's names (UNKNOWN aside). */
export type RateLimitUnit = 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';

/** envoy.type.v3.RateLimitUnit's names (UNKNOWN aside): the units of an override, which has no WEEK. */
export type OverrideUnit = Exclude<RateLimitUnit, 'WEEK'>;

export interface DescriptorEntry {
  readonly key: string;
  /** May be empty. */
  readonly value: string;
}

/** A limit Envoy asks for instead of the configured one (its filter's `limit` override). */
export interface LimitOverride {
  readonly requestsPerUnit: number;
  readonly unit: OverrideUnit;
}

export interface RateLimitDescriptor {
  /** At least one, in the order Envoy's actions produced them. */
  readonly entries: readonly DescriptorEntry[];
  readonly limit?: LimitOverride;
  /** When present (0 included), replaces the request's hitsAddend for this descriptor. */
  readonly hitsAddend?: number;
}

export interface RateLimitRequest {
  /** Not empty. */
  readonly domain: string;
  /** At least one. */
  readonly descriptors: readonly RateLimitDescriptor[];
  /** As sent: 0 is also what an unset field decodes to, which Envoy's filter means as 1. */
  readonly hitsAddend: number;
}

export interface CurrentLimit {
  readonly name: string;
  readonly requestsPerUnit: number;
  readonly unit: RateLimitUnit;
}

export interface DescriptorStatus {
  readonly code: RateLimitCode;
  /** Absent when no limit applies to the descriptor. */
  readonly currentLimit?: CurrentLimit;
  readonly limitRemaining: number;
  /** Whole seconds, as envoyproxy/ratelimit sends them (a window's length less the seconds it has run). */
  readonly durationUntilResetSeconds?: number;
}

export interface HeaderValue {
  readonly key: string;
  readonly value: string;
}

export interface RateLimitResponse {
  readonly overallCode: RateLimitCode;
  /** One per descriptor of the request, in its order. */
  readonly statuses: readonly DescriptorStatus[];
  readonly responseHeadersToAdd?: readonly HeaderValue[];
  readonly requestHeadersToAdd?: readonly HeaderValue[];
  /**
   * What Envoy stores as dynamic metadata under the filter's namespace
   * (envoy.filters.http.ratelimit): a reservation's id, for the call that settles it; with
   * MEMGATE_ENVOY_DYNAMIC_METADATA, the call's domain, descriptors and limits' metadata.
   */
  readonly dynamicMetadata?: Readonly<Record<string, MetadataValue>>;
  /** The version of the policies the call was decided under: sent as the `memgate-policy-version` header, not in the message. */
  readonly policyVersion?: string;
  /** Some limit was decided by its onStoreError rule, without the store's counts: not sent, for the call's span. */
  readonly degraded?: boolean;
}

/**
 * What one ShouldRateLimit request may hold, refused before it is decoded (wire-scan.ts). Envoy's
 * filter sends a few hundred bytes: a handful of descriptors of a few short entries; values
 * become counters' keys, so they are bounded as /check's features are.
 */
export const REQUEST_LIMITS = {
  /** The whole message: larger is RESOURCE_EXHAUSTED, refused on its length prefix before it is read (server.ts). */
  messageBytes: 64 * 1024,
  domainBytes: 256,
  descriptors: 64,
  entriesPerDescriptor: 32,
  keyBytes: 256,
  valueBytes: MAX_FEATURE_BYTES,
} as const;

/** uint32 fields of the response hold at most this; larger counts are sent as this. */
const UINT32_MAX = 0xffff_ffff;

/** A request Envoy's API or memgate's limits refuse: answered INVALID_ARGUMENT with this message. */
export class InvalidRateLimitRequestError extends Error {
  override readonly name = 'InvalidRateLimitRequestError';
}

// What proto-loader decodes with { keepCase: false, longs: Number, enums: String, defaults: true }:
// repeated fields are arrays, unset messages null, unknown enum numbers stay numbers.
interface WireEntry {
  readonly key: string;
  readonly value: string;
}
interface WireDescriptor {
  readonly entries: readonly WireEntry[];
  readonly limit: { readonly requestsPerUnit: number; readonly unit: string | number } | null;
  readonly hitsAddend: { readonly value: number } | null;
}
interface WireRequest {
  readonly domain: string;
  readonly descriptors: readonly WireDescriptor[];
  readonly hitsAddend: number;
  /** Set by the server's decoder instead of decoding: why the bytes are refused (see wire-scan.ts). */
  readonly problem?: string;
}

export interface WireDuration {
  readonly seconds: number;
  readonly nanos: number;
}
export interface WireDescriptorStatus {
  readonly code: RateLimitCode;
  readonly currentLimit: CurrentLimit | null;
  readonly limitRemaining: number;
  readonly durationUntilReset: WireDuration | null;
}
/** A google.protobuf.Value as memgate writes it: JSON's values. */
export type MetadataValue =
  string | number | boolean | null | readonly MetadataValue[] | { readonly [key: string]: MetadataValue };

/** A google.protobuf.Struct as memgate writes it. */
type MetadataFields = Readonly<Record<string, MetadataValue>>;

/** google.protobuf.Value, as proto-loader encodes it: one of its kinds. */
export type WireValue =
  | { readonly stringValue: string }
  | { readonly numberValue: number }
  | { readonly boolValue: boolean }
  | { readonly nullValue: 'NULL_VALUE' }
  | { readonly listValue: { readonly values: readonly WireValue[] } }
  | { readonly structValue: WireStruct };

/** google.protobuf.Struct, as proto-loader encodes it. */
export interface WireStruct {
  readonly fields: Readonly<Record<string, WireValue>>;
}
export interface WireResponse {
  readonly overallCode: RateLimitCode;
  readonly statuses: readonly WireDescriptorStatus[];
  readonly responseHeadersToAdd: readonly HeaderValue[];
  readonly requestHeadersToAdd: readonly HeaderValue[];
  /** Unset (null) unless there is metadata: Envoy sets none for an empty Struct either. */
  readonly dynamicMetadata: WireStruct | null;
}

const OVERRIDE_UNITS: ReadonlySet<string> = new Set<OverrideUnit>(['SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR']);
const RESPONSE_UNITS: ReadonlySet<string> = new Set<RateLimitUnit>([...OVERRIDE_UNITS, 'WEEK'] as RateLimitUnit[]);
const CODES: ReadonlySet<string> = new Set<RateLimitCode>(['OK', 'OVER_LIMIT']);

/**
 * The request as memgate reads it, once its bytes are within REQUEST_LIMITS and UTF-8 (the
 * server's decoder saw to both); throws InvalidRateLimitRequestError with a one-line reason.
 */
export function requestFromWire(decoded: unknown): RateLimitRequest {
  const wire = decoded as WireRequest;
  if (wire.problem !== undefined) invalid(wire.problem);
  const { domain } = wire;
  if (domain === '') invalid('domain must not be empty');
  if (wire.descriptors.length === 0) invalid('descriptors must not be empty: send at least one');
  return {
    domain,
    descriptors: wire.descriptors.map((descriptor, index) => descriptorFromWire(descriptor, `descriptors[${index}]`)),
    hitsAddend: wire.hitsAddend,
  };
}

function descriptorFromWire(wire: WireDescriptor, where: string): RateLimitDescriptor {
  if (wire.entries.length === 0) invalid(`${where} has no entries; Envoy sends at least one`);
  const entries = wire.entries.map(({ key, value }, index) => {
    if (key === '') invalid(`${where}.entries[${index}].key must not be empty`);
    return { key, value };
  });
  let descriptor: RateLimitDescriptor = { entries };
  if (wire.limit !== null) {
    const { unit, requestsPerUnit } = wire.limit;
    if (typeof unit !== 'string' || !OVERRIDE_UNITS.has(unit)) {
      invalid(`${where}.limit.unit must be one of ${[...OVERRIDE_UNITS].join(', ')}; got ${String(unit)}`);
    }
    descriptor = { ...descriptor, limit: { requestsPerUnit, unit: unit as OverrideUnit } };
  }
  if (wire.hitsAddend !== null) {
    // A uint64 on the wire, which a JavaScript number holds exactly only up to 2^53. Any count
    // that large is beyond every requests_per_unit (a uint32), so it is answered as any cost
    // beyond the limit: OVER_LIMIT, nothing counted. Refusing the call instead would let
    // Envoy's failure_mode_deny (false by default) admit it.
    descriptor = { ...descriptor, hitsAddend: Math.min(wire.hitsAddend.value, Number.MAX_SAFE_INTEGER) };
  }
  return descriptor;
}

function invalid(message: string): never {
  throw new InvalidRateLimitRequestError(message);
}

/**
 * Throws unless `response` fits the request (a status per descriptor) and the protocol (codes,
 * units, counts and seconds it can carry): such a response is a bug of whoever decided, and throws
 * a plain Error. The one check of both encodings, responseToWire's and response-encoder.ts's.
 */
export function checkResponse(response: RateLimitResponse, descriptorCount: number): void {
  if (!CODES.has(response.overallCode))
    throw new Error(`overallCode ${JSON.stringify(response.overallCode)} is not OK or OVER_LIMIT`);
  if (response.statuses.length !== descriptorCount) {
    throw new Error(`${response.statuses.length} statuses for ${descriptorCount} descriptors`);
  }
  // An index, not a field's name: the names are only spelled out for an error.
  response.statuses.forEach(checkStatus);
}

function checkStatus(status: DescriptorStatus, index: number): void {
  if (!CODES.has(status.code))
    throw new Error(`statuses[${index}].code ${JSON.stringify(status.code)} is not OK or OVER_LIMIT`);
  if (status.currentLimit) {
    const { unit, requestsPerUnit } = status.currentLimit;
    if (!RESPONSE_UNITS.has(unit))
      throw new Error(`statuses[${index}].currentLimit.unit ${JSON.stringify(unit)} is not a unit`);
    checkCount(requestsPerUnit, index, 'currentLimit.requestsPerUnit');
  }
  const seconds = status.durationUntilResetSeconds;
  if (seconds !== undefined && (!Number.isInteger(seconds) || seconds < 0))
    throw new Error(`statuses[${index}].durationUntilResetSeconds ${seconds} is not a whole number of seconds`);
  checkCount(status.limitRemaining, index, 'limitRemaining');
}

function checkCount(count: number, index: number, field: string): void {
  if (!Number.isInteger(count) || count < 0) throw new Error(`statuses[${index}].${field} ${count} is not a count`);
}

/** A checked count as a uint32 field carries it: at most UINT32_MAX. */
export function uint32(count: number): number {
  return Math.min(count, UINT32_MAX);
}

/**
 * The response as proto-loader encodes it, once checkResponse has passed it (it throws what that
 * throws). ShouldRateLimit's answers are written by response-encoder.ts, which falls back to this
 * for dynamic metadata.
 */
export function responseToWire(response: RateLimitResponse, descriptorCount: number): WireResponse {
  checkResponse(response, descriptorCount);
  return {
    overallCode: response.overallCode,
    statuses: response.statuses.map(statusToWire),
    responseHeadersToAdd: response.responseHeadersToAdd ?? [],
    requestHeadersToAdd: response.requestHeadersToAdd ?? [],
    dynamicMetadata: structToWire(response),
  };
}

/** Whether the response carries dynamic_metadata: not for none, nor an empty Struct (Envoy sets none for one either). */
export function hasDynamicMetadata(response: RateLimitResponse): boolean {
  return response.dynamicMetadata !== undefined && Object.keys(response.dynamicMetadata).length > 0;
}

function structToWire(response: RateLimitResponse): WireStruct | null {
  return response.dynamicMetadata && hasDynamicMetadata(response) ? fieldsToWire(response.dynamicMetadata) : null;
}

function fieldsToWire(values: MetadataFields): WireStruct {
  return { fields: Object.fromEntries(Object.entries(values).map(([key, value]) => [key, valueToWire(value)])) };
}

function valueToWire(value: MetadataValue): WireValue {
  if (value === null) return { nullValue: 'NULL_VALUE' };
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'number') return { numberValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (Array.isArray(value)) return { listValue: { values: (value as readonly MetadataValue[]).map(valueToWire) } };
  return { structValue: fieldsToWire(value as MetadataFields) };
}

function statusToWire(status: DescriptorStatus): WireDescriptorStatus {
  const limit = status.currentLimit;
  const seconds = status.durationUntilResetSeconds;
  return {
    code: status.code,
    currentLimit: limit ? { name: limit.name, unit: limit.unit, requestsPerUnit: uint32(limit.requestsPerUnit) } : null,
    limitRemaining: uint32(status.limitRemaining),
    durationUntilReset: seconds === undefined ? null : { seconds, nanos: 0 },
  };
}
