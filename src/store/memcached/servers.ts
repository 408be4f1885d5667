import HashRing from 'hashring';
import type { Endpoint } from '../../config/memcached-servers.js';

// The list is parsed, and refused when malformed, by config: MEMCACHED_SERVERS is checked
// at start, before any store exists.
export { parseServerList, type Credentials, type Endpoint } from '../../config/memcached-servers.js';

/**
 * Picks the server of a key by consistent (ketama) hashing of its hash tag, so every
 * bucket of one event+feature lands on one server, and adding or removing a server
 * moves only its share of features.
 */
export function serverRouter(endpoints: readonly Endpoint[]): (key: string) => number {
  if (endpoints.length === 1) return () => 0;
  const ring = new HashRing(endpoints.map((endpoint) => endpoint.label));
  const indexOf = new Map(endpoints.map((endpoint, index) => [endpoint.label, index]));
  return (key) => indexOf.get(ring.get(hashTagOf(key))) ?? 0;
}

/**
 * The routing part of a key: the text inside its first `{…}`, or the whole key (the hash
 * tag convention of twemproxy and Redis Cluster).
 */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  return close === -1 ? key : key.slice(open + 1, close);
}
