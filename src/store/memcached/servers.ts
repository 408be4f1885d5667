import HashRing from 'hashring';
import { DEFAULTS } from '../../config/defaults.js';

export interface Endpoint {
  readonly host: string;
  readonly port: number;
  readonly username?: string;
  readonly password?: string;
  /** `host:port`, as the ring and the logs name the server. */
  readonly label: string;
}


/** SASL credentials for every server that names none of its own. */
export interface Credentials {
  readonly username: string;
  readonly password: string;
}

/**
 * Parses `host[:port],…` as in MEMCACHED_SERVERS. IPv6 hosts go in brackets
 * (`[::1]:11211`); `user:password@host:port` sets SASL credentials for that server, and
 * `credentials` (MEMCACHED_USERNAME and MEMCACHED_PASSWORD) for the others.
 */
export function parseServerList(text: string, credentials?: Credentials): Endpoint[] {
  const entries = text.split(',').map((entry) => entry.trim());
  if (entries.every((entry) => entry === '')) throw new Error('no Memcached servers given');
  const endpoints = entries.map(parseEndpoint).map((endpoint) => (endpoint.username === undefined && credentials ? { ...endpoint, ...credentials } : endpoint));
  const labels = new Set<string>();
  for (const { label } of endpoints) {
    if (labels.has(label)) throw new Error(`Memcached server ${label} is listed twice`);
    labels.add(label);
  }
  return endpoints;
}

function parseEndpoint(entry: string): Endpoint {
  const at = entry.lastIndexOf('@');
  const credentials = at === -1 ? undefined : entry.slice(0, at);
  const address = entry.slice(at + 1);
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+))(?::([0-9]{1,5}))?$/.exec(address);
  const port = Number(match?.[3] ?? DEFAULTS.memcachedPort);
  const host = match?.[1] ?? match?.[2];
  if (!host || port < 1 || port > 65_535) {
    // Name the address only: the entry may hold a password.
    throw new Error(`Memcached server ${JSON.stringify(address)} is not host[:port] (IPv6 as [addr]:port)`);
  }
  const label = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (credentials === undefined) return { host, port, label };
  const colon = credentials.indexOf(':');
  if (colon <= 0) throw new Error(`Memcached server ${JSON.stringify(label)}: credentials must be user:password@host:port`);
  return { host, port, label, username: credentials.slice(0, colon), password: credentials.slice(colon + 1) };
}

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
