import { createHash } from 'node:crypto';
import type { DescriptorLevel, EnvoyConfig, EnvoyDescriptor, EnvoyRateLimit } from './envoy-model.js';

/** One entry of a request's descriptor, as Envoy's filter sends it. */
export interface EnvoyEntry {
  readonly key: string;
  readonly value: string;
}

export type EnvoyMatch =
  /** Nothing to count: answer OK. `unknown-domain` when the domain is in no file; `replaced` by applyReplaces. */
  | { readonly kind: 'none'; readonly reason: 'unknown-domain' | 'no-limit' | 'replaced' }
  | { readonly kind: 'unlimited'; readonly descriptor: EnvoyDescriptor; readonly rateLimit: EnvoyRateLimit }
  | {
      readonly kind: 'limit';
      readonly descriptor: EnvoyDescriptor;
      readonly rateLimit: EnvoyRateLimit;
      readonly shadowMode: boolean;
      /** memgate's event for this descriptor of the configuration: one per domain and matched descriptor path. */
      readonly event: string;
      /** The counter within the event: the request's values that the match leaves free. */
      readonly feature: string;
    };

/**
 * The limit envoyproxy/ratelimit applies to one descriptor of a request
 * (rateLimitConfigImpl.GetLimit): entries walk the nested descriptors in order; at each
 * level an exact `key_value` wins, then the first wildcard of the file that matches
 * `key_value`, then the key alone. The limit counts only when the descriptor found for the
 * last entry has one; a request with more entries than the configuration's depth matches
 * nothing.
 */
export function matchEnvoyDescriptor(config: EnvoyConfig, domain: string, entries: readonly EnvoyEntry[]): EnvoyMatch {
  const root = config.domains.get(domain);
  if (!root) return { kind: 'none', reason: 'unknown-domain' };
  let level: DescriptorLevel = root.descriptors;
  /** Per entry, the value that picks its counter, or undefined when the configuration fixes it. */
  const free: (string | undefined)[] = [];
  let found: EnvoyDescriptor | undefined;
  // A descriptor without children has an empty level below it: an entry past it finds nothing.
  for (const entry of entries) {
    const step = lookUp(level, entry);
    if (!step) return { kind: 'none', reason: 'no-limit' };
    free.push(step.free);
    found = step.descriptor;
    level = step.descriptor.children;
  }
  const rateLimit = found?.rateLimit;
  if (!found || !rateLimit) return { kind: 'none', reason: 'no-limit' };
  if (rateLimit.unlimited) return { kind: 'unlimited', descriptor: found, rateLimit };
  return {
    kind: 'limit',
    descriptor: found,
    rateLimit,
    shadowMode: found.shadowMode,
    event: envoyEventName(domain, found.path),
    feature: featureOf(free.filter((value) => value !== undefined)),
  };
}

/**
 * The matches of one request's descriptors, less the limits another matched limit
 * `replaces` by name (envoyproxy/ratelimit's constructLimitsToCheck): every matched
 * limit may replace, unlimited ones included; an unlimited one is never replaced.
 */
export function applyReplaces(matches: readonly EnvoyMatch[]): readonly EnvoyMatch[] {
  // Most files replace nothing: no set, no copy, for every request.
  if (!matches.some((match) => match.kind !== 'none' && match.rateLimit.replaces.length > 0)) return matches;
  const replaced = new Set(matches.flatMap((match) => (match.kind === 'none' ? [] : match.rateLimit.replaces)));
  return matches.map((match) =>
    match.kind === 'limit' && match.rateLimit.name !== undefined && replaced.has(match.rateLimit.name) ? { kind: 'none', reason: 'replaced' } : match,
  );
}

/** One level's descriptor for an entry: how it matched, and the value that picks its counter (undefined when the file fixes it). */
interface Step {
  readonly descriptor: EnvoyDescriptor;
  readonly free: string | undefined;
  readonly by: 'value' | 'wildcard' | 'key';
}

function lookUp(level: DescriptorLevel, entry: EnvoyEntry): Step | undefined {
  const composite = `${entry.key}_${entry.value}`;
  const exact = level.byKey.get(composite);
  if (exact) return { descriptor: exact, free: undefined, by: 'value' };
  for (const wildcard of level.wildcards) {
    if (!wildcardMatches(wildcard.parts, composite)) continue;
    const descriptor = level.byKey.get(wildcard.compositeKey);
    // Values sharing a threshold share one counter, named by the pattern (as envoyproxy/ratelimit's cache key).
    if (descriptor) return { descriptor, free: descriptor.shareThreshold ? undefined : entry.value, by: 'wildcard' };
  }
  const keyOnly = level.byKey.get(entry.key);
  return keyOnly ? { descriptor: keyOnly, free: entry.value, by: 'key' } : undefined;
}

/** `key`, or `key_value` when there is a value: how envoyproxy/ratelimit names one entry in a stat key. */
function statPart(key: string, value: string): string {
  return value === '' ? key : `${key}_${value}`;
}

/** A composite key less `key_` (Go's strings.TrimPrefix): a wildcard's pattern as upstream puts it in a stat key. */
function trimmedKey(compositeKey: string, key: string): string {
  return compositeKey.startsWith(`${key}_`) ? compositeKey.slice(key.length + 1) : compositeKey;
}

/**
 * The stat key envoyproxy/ratelimit gives a descriptor a per-request `limit` counts (its
 * descriptorKey): the domain and each entry's `key_value`.
 */
export function overrideStatKey(domain: string, entries: readonly EnvoyEntry[]): string {
  return [domain, ...entries.map(({ key, value }) => statPart(key, value))].join('.');
}

/**
 * The stat key envoyproxy/ratelimit gives a descriptor a configured limit matched (GetLimit's
 * Stats.Key, before SanitizeStatName), `domain.` and one part per entry:
 * - by default the matched path: `key_value` where the file names a value, the pattern where a
 *   wildcard matched, `key` where the key alone did;
 * - `value_to_metric` on a level's descriptor puts the request's value there instead, for a key
 *   alone or a wildcard, unless it shares its threshold (the pattern stays);
 * - `detailed_metric` on the limit's descriptor puts every entry's `key_value` of the request,
 *   but the pattern for an entry a share_threshold wildcard matched (and then `key` alone for an
 *   empty value).
 * Undefined when no configured limit matches.
 */
export function upstreamStatKey(config: EnvoyConfig, domain: string, entries: readonly EnvoyEntry[]): string | undefined {
  let level = config.domains.get(domain)?.descriptors;
  const path = [domain];
  /** Per entry, the pattern of the share_threshold wildcard that matched it, or undefined. */
  const shared: (string | undefined)[] = [];
  let leaf: EnvoyDescriptor | undefined;
  for (const entry of entries) {
    const step = level && lookUp(level, entry);
    if (!step) return undefined;
    const { descriptor, by } = step;
    // After the key: the request's value where it matched by value or value_to_metric asks for it,
    // a wildcard's pattern otherwise, nothing for a key alone.
    let value = by === 'key' && !descriptor.valueToMetric ? '' : entry.value;
    let sharing: string | undefined;
    if (by === 'wildcard') {
      const pattern = trimmedKey(descriptor.compositeKey, entry.key);
      if (descriptor.shareThreshold) sharing = pattern;
      if (descriptor.shareThreshold || !descriptor.valueToMetric) value = pattern;
    }
    shared.push(sharing);
    path.push(statPart(entry.key, value));
    leaf = descriptor;
    level = descriptor.children;
  }
  if (!leaf?.rateLimit) return undefined;
  if (!leaf.detailedMetric) return path.join('.');
  // detailed_metric: every entry as `key_value`, even an empty value, unless a shared pattern names one.
  const anyShared = shared.some((pattern) => pattern !== undefined);
  const parts = entries.map(({ key, value }, i) => {
    const pattern = shared[i];
    if (pattern !== undefined) return `${key}_${pattern}`;
    return anyShared ? statPart(key, value) : `${key}_${value}`;
  });
  return [domain, ...parts].join('.');
}


/** Each `*` matches any run of characters, possibly empty (envoyproxy/ratelimit's wildcardMatch). */
export function wildcardMatches(parts: readonly string[], text: string): boolean {
  const first = parts[0] ?? '';
  const last = parts.at(-1) ?? '';
  if (parts.length === 1) return first === text;
  if (!text.startsWith(first) || !text.endsWith(last)) return false;
  if (text.length < parts.reduce((sum, part) => sum + part.length, 0)) return false;
  let rest = text.slice(first.length, text.length - last.length);
  for (const part of parts.slice(1, -1)) {
    const at = rest.indexOf(part);
    if (at === -1) return false;
    rest = rest.slice(at + part.length);
  }
  return true;
}

const READABLE_PART = /^[A-Za-z0-9_-]+$/;

/**
 * What every Envoy limit's event name starts with. memgate's own event names cannot hold a
 * colon, so the two never share a name, or a counter.
 */
export const ENVOY_EVENT_PREFIX = 'envoy:';

/** Longest event name after the prefix. */
const MAX_EVENT_LENGTH = 64;

/**
 * memgate's event for a per-request limit (Envoy's `limit` override) on a descriptor no
 * configured limit matches: one per domain, its descriptors told apart by their entries.
 * `~` is in no event a file can name.
 */
export function envoyOverrideEvent(domain: string): string {
  const event = envoyEventName(domain, []);
  return `${event}~override`;
}

/** The counter of a descriptor no configured limit matches: every entry, key and value. */
export function entriesFeature(entries: readonly { readonly key: string; readonly value: string }[]): string {
  return JSON.stringify(entries.map(({ key, value }) => [key, value]));
}

/**
 * memgate's event name for a descriptor of a domain: `envoy:domain.key_value.key` (the
 * path envoyproxy/ratelimit's statistics use) when every part is made of letters, digits,
 * `_` and `-` and the path fits in 64 characters; otherwise a readable head and a hash of
 * the exact parts, so that two descriptors never share a name.
 */
export function envoyEventName(domain: string, path: readonly string[]): string {
  const parts = [domain, ...path];
  const plain = parts.join('.');
  if (plain.length <= MAX_EVENT_LENGTH && parts.every((part) => READABLE_PART.test(part))) return ENVOY_EVENT_PREFIX + plain;
  const hash = createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 20);
  const head = plain.replaceAll(/[^A-Za-z0-9_.-]/g, '_').slice(0, MAX_EVENT_LENGTH - hash.length - 2);
  return `${ENVOY_EVENT_PREFIX}${head}-h${hash}`;
}

/**
 * The feature (counter) within an event: the one free value as it is; none as `-`; several,
 * or one that could be mistaken for those forms, as a JSON array.
 */
function featureOf(values: readonly string[]): string {
  if (values.length === 0) return '-';
  const [only] = values;
  if (values.length === 1 && only !== undefined && only !== '-' && only !== '' && !only.startsWith('[')) return only;
  return JSON.stringify(values);
}
