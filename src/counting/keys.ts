import { createHash } from 'node:crypto';

/**
 * Memcached keys of memgate's counters:
 *
 *     <prefix>:{<event>:<feature tag>}:<bucket size>:<bucket start>
 *
 * (a calendar window's bucket names its window, `mo15@Europe/Berlin`, in place of a size).
 *
 * The part in braces is the hash tag: the store routes a key by it alone, so every bucket
 * of one event+feature lives on one server and a check is one round trip.
 *
 * A feature tag is `=` + the feature itself when it is short and made of safe characters
 * (IPs, e-mails, ids stay readable in `memcached` dumps), else `#` + a base64url SHA-256
 * prefix of its UTF-8 bytes (128 bits: no collision in practice). The two forms cannot
 * meet, and no key exceeds Memcached's 250 bytes or holds whitespace or control characters.
 */
const VERBATIM_FEATURE = /^[A-Za-z0-9._~@+:-]{1,64}$/;

export function featureTag(feature: string): string {
  if (VERBATIM_FEATURE.test(feature)) return `=${feature}`;
  return `#${createHash('sha256').update(feature, 'utf8').digest().subarray(0, 16).toString('base64url')}`;
}

/** The shared start of every bucket key of one event+feature. */
export function counterKeyBase(prefix: string, event: string, feature: string): string {
  return `${prefix}:{${event}:${featureTag(feature)}}:`;
}

/** A bucket's key: `level` is its size in seconds, or a calendar window's tag (`mo15@Europe/Berlin`). */
export function bucketKey(base: string, level: number | string, start: number): string {
  return `${base}${level}:${start}`;
}

/** Where a feature's last reset time is kept (see Limiter.reset); routed with its buckets. */
export function resetMarkerKey(base: string): string {
  return `${base}reset`;
}
