import { isIPv4, isIPv6 } from 'node:net';

/** One Memcached server of MEMCACHED_SERVERS (or createMemcachedStore's `servers`). */
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

/** A server list that cannot be used: `entry` names the entry (never its credentials), `problem` says why. */
export class ServerListError extends Error {
  constructor(
    readonly entry: string,
    readonly problem: string,
  ) {
    super(`Memcached server ${entry} ${problem}`);
    this.name = 'ServerListError';
  }
}

/** Memcached's usual port, suggested when an entry names none. */
const MEMCACHED_PORT = 11211;

// RFC 1123 labels; `_` too, since container networks name services with it.
const LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
// A fully qualified name may end in a dot.
const HOST_NAME = new RegExp(`^(?=.{1,254}$)${LABEL}(?:\\.${LABEL})*\\.?$`);

/**
 * Parses `host:port,…` as in MEMCACHED_SERVERS. Every entry names its port (a bare name
 * is more likely a mistake than a server on 11211); IPv6 hosts go in brackets
 * (`[::1]:11211`); `user:password@host:port` sets SASL credentials for that server, and
 * `credentials` (MEMCACHED_USERNAME and MEMCACHED_PASSWORD) for the others. Throws
 * ServerListError for the first entry it cannot use.
 */
export function parseServerList(text: string, credentials?: Credentials): Endpoint[] {
  const entries = text.split(',').map((entry) => entry.trim());
  const endpoints = entries
    .map((entry, index) => parseEndpoint(entry, index, entries.length))
    .map((endpoint) => (endpoint.username === undefined && credentials ? { ...endpoint, ...credentials } : endpoint));
  const labels = new Set<string>();
  for (const { label } of endpoints) {
    if (labels.has(label)) throw new ServerListError(label, 'is listed twice');
    labels.add(label);
  }
  return endpoints;
}

function parseEndpoint(written: string, index: number, count: number): Endpoint {
  if (written === '') {
    throw new ServerListError(`number ${index + 1} of ${count}`, 'is empty: remove the stray comma');
  }
  const entry = withoutScheme(written);
  const at = entry.lastIndexOf('@');
  const credentials = at === -1 ? undefined : entry.slice(0, at);
  // Only the address is ever named: the entry may hold a password.
  const address = entry.slice(at + 1);
  const shown = JSON.stringify(address);
  const match = /^(?:\[([^\]]*)\]|([^:[\]]*))(?::(.*))?$/.exec(address);
  const host = match?.[1] ?? match?.[2];
  const bracketed = match?.[1] !== undefined;
  if (host === undefined || (bracketed ? !isIPv6(host) : !isHostName(host))) {
    throw new ServerListError(shown, 'is not host:port (a host name or IPv4 address, or an IPv6 address in brackets as [::1]:11211)');
  }
  const portText = match?.[3];
  if (portText === undefined) {
    throw new ServerListError(shown, `names no port: write host:port, as ${bracketed ? `[${host}]` : host}:${MEMCACHED_PORT} (Memcached's usual port)`);
  }
  const port = Number(portText);
  if (!/^[0-9]{1,5}$/.test(portText) || port < 1 || port > 65_535) {
    throw new ServerListError(shown, `has port ${JSON.stringify(portText)}: a port is a whole number from 1 to 65535`);
  }
  const label = `${bracketed ? `[${host}]` : host}:${port}`;
  if (credentials === undefined) return { host, port, label };
  const colon = credentials.indexOf(':');
  if (colon <= 0) throw new ServerListError(JSON.stringify(label), 'has credentials that are not user:password@host:port');
  return { host, port, label, username: credentials.slice(0, colon), password: credentials.slice(colon + 1) };
}

/**
 * `memcached://host:port` (as client libraries and operators' URLs write it) as `host:port`;
 * any other scheme refused, saying what to write. Only the scheme is named: the rest may
 * hold a password.
 */
function withoutScheme(entry: string): string {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(entry);
  if (!scheme) return entry;
  if (scheme[1]?.toLowerCase() !== 'memcached') {
    throw new ServerListError(
      JSON.stringify(`${scheme[0]}…`),
      'is not a Memcached address: write host:port (memcached://host:port is read as host:port too)',
    );
  }
  // A trailing slash, as URLs are often written; anything after it is no part of an address.
  return entry.slice(scheme[0].length).replace(/\/$/, '');
}

/** A DNS name or an IPv4 address; digits and dots alone must be a valid IPv4 address. */
function isHostName(host: string): boolean {
  if (/^[0-9.]+$/.test(host)) return isIPv4(host);
  return HOST_NAME.test(host);
}
