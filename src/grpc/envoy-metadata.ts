// upstream's RESPONSE_DYNAMIC_METADATA (memgate's MEMGATE_ENVOY_DYNAMIC_METADATA): the answer's
// dynamic_metadata describes the call, as envoyproxy/ratelimit writes it (ratelimitToMetadata in
// its service/ratelimit.go), for Envoy's access log and the filters after the ratelimit one.
import type { MetadataValue, DescriptorStatus, RateLimitDescriptor, RateLimitRequest } from './messages.js';

type Fields = Record<string, MetadataValue>;

/** What the call's metadata needs of each descriptor's decision. */
export interface DescribedDescriptor {
  readonly status: DescriptorStatus;
  /** `unlimited: true` in the configuration: neither passed nor refused. */
  readonly unlimited: boolean;
  /** The `metadata` of the configured descriptor whose limit decided it (none for a per-request limit). */
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
}

/**
 * `domain`; `descriptors`, each its entries as `key=value`, its per-request `limit` and its own
 * `hitsAddend`; the request's `hitsAddend` when set; `metadata`, the configured metadata of the
 * descriptors that passed (OK), merged in the request's order, the first value of a key kept.
 */
export function upstreamDynamicMetadata(request: RateLimitRequest, decided: readonly DescribedDescriptor[]): Fields {
  const fields: Fields = {
    domain: request.domain,
    descriptors: request.descriptors.map(describeDescriptor),
  };
  if (request.hitsAddend !== 0) fields.hitsAddend = request.hitsAddend;
  const passed: Fields = {};
  for (const { status, unlimited, metadata } of decided) {
    if (status.code === 'OK' && !unlimited && metadata) mergeFirstKept(passed, metadata as Fields);
  }
  if (Object.keys(passed).length > 0) fields.metadata = passed;
  return fields;
}

function describeDescriptor(descriptor: RateLimitDescriptor): Fields {
  const fields: Fields = { entries: descriptor.entries.map(({ key, value }) => `${key}=${value}`) };
  // Go's text form of the RateLimitOverride message, as upstream writes it.
  if (descriptor.limit)
    fields.limit = `requests_per_unit:${descriptor.limit.requestsPerUnit} unit:${descriptor.limit.unit}`;
  if (descriptor.hitsAddend !== undefined) fields.hitsAddend = descriptor.hitsAddend;
  return fields;
}

/** `source`'s keys into `into`: a key already there keeps its value, two mappings merge (upstream's mergeMetadata). */
function mergeFirstKept(into: Fields, source: Fields): void {
  for (const [key, value] of Object.entries(source)) {
    const known = into[key];
    if (known === undefined) into[key] = structuredClone(value);
    else if (isMapping(known) && isMapping(value)) mergeFirstKept(known as Fields, value as Fields);
  }
}

function isMapping(value: MetadataValue): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
