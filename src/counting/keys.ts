import { createHash } from 'node:crypto';

/**
 * Every key memgate writes to the store, in one place. They all start with one client's base:
 *
 *     <prefix>:{<event>:<feature tag>}:
 *
 * The part in braces is the hash tag: the store routes a key by it alone, so every key of one
 * event and client lives on one server and a check is one round trip. After the base:
 *
 *     <bucket size>:<bucket start>      a window's bucket (a calendar window's names its window, `mo15@Europe/Berlin`)
 *     reset                             the second of the client's last reset
 *     tb                                a token bucket's theoretical arrival time
 *     lease:<levels tag>:<id>           the units a lease or a reservation counted (…:us, a token bucket's time)
 *     lease:<id>:r                      how often that record was claimed (returned, settled)
 *     <kind>:<name>                     a key an algorithm holds of its own (partKey): a concurrency limit's slots
 *
 * A feature tag is `=` + the feature itself when it is short and made of safe characters
 * (IPs, e-mails, ids stay readable in `memcached` dumps), else `#` + a base64url SHA-256
 * prefix of its UTF-8 bytes (128 bits: no collision in practice). The two forms cannot
 * meet, and no key exceeds Memcached's 250 bytes or holds whitespace or control characters.
 */
const VERBATIM_FEATURE = /^[A-Za-z0-9._~@+:-]{1,64}$/;

/**
 * Seconds every key outlives its last possible read: absorbs clock skew between memgate
 * instances and Memcached's whole-second expiry clock.
 */
export const TTL_MARGIN_SECONDS = 2;

export function featureTag(feature: string): string {
  if (VERBATIM_FEATURE.test(feature)) return `=${feature}`;
  return `#${createHash('sha256').update(feature, 'utf8').digest().subarray(0, 16).toString('base64url')}`;
}

/**
 * The shared start of every key of one event+feature. Joined, it is one flat string: built by
 * `+` it would be a chain of a node per part, and the feature cache keeps one per client.
 */
export function counterKeyBase(prefix: string, event: string, feature: string): string {
  return [prefix, ':{', event, ':', featureTag(feature), '}:'].join('');
}

/** A bucket's key: `level` is its size in seconds, or a calendar window's tag (`mo15@Europe/Berlin`). */
export function bucketKey(base: string, level: number | string, start: number): string {
  return `${base}${level}:${start}`;
}

/** Where a feature's last reset time is kept (see Limiter.reset); routed with its buckets. */
export function resetMarkerKey(base: string): string {
  return `${base}reset`;
}

/** Where a client's token bucket (its theoretical arrival time, in µs) is kept. */
export function tokenBucketKey(base: string): string {
  return `${base}tb`;
}

/**
 * Where the units a lease or a reservation counted are recorded. The key names the event's
 * bucket levels (`levels`, as keys name them): after a reload that changed them, a claim would
 * take units out of buckets that never held them, so it finds no record instead (its units
 * stay counted).
 */
export function recordUnitsKey(base: string, levels: readonly (number | string)[], id: string): string {
  // Hashed: a list of sizes could take a key past Memcached's 250 bytes.
  const tag = createHash('sha256').update(levels.join('.')).digest().subarray(0, 6).toString('base64url');
  return `${base}lease:${tag}:${id}`;
}

/** Beside a token bucket's record of units: the time they stood for, in µs, given back as it was taken. */
export function recordTimeKey(unitsKey: string): string {
  return `${unitsKey}:us`;
}

/**
 * A key an algorithm holds of its own, beside the client's others: `kind` names what it is (a
 * word no other key starts with), `name` which one.
 */
export function partKey(base: string, kind: string, name: string | number): string {
  return `${base}${kind}:${name}`;
}

/** Counts the claims of a record (a lease's return, a reservation's settle): only the first is taken. */
export function recordClaimsKey(base: string, id: string): string {
  return `${base}lease:${id}:r`;
}
