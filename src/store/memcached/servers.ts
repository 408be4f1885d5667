// The list is parsed, and refused when malformed, by config: MEMCACHED_SERVERS is checked
// at start, before any store exists.
export { parseServerList, type Credentials, type Endpoint } from '../../config/memcached-servers.js';

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
export type { MemcachedTls } from '../../config/tls.js';
