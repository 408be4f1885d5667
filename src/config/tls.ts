import { readFileSync } from 'node:fs';

/**
 * TLS to the Memcached servers (MEMCACHED_TLS_*): memcached 1.6 started with `-Z` and its
 * `ssl_*` options. The counters and a SASL password otherwise cross the network in clear.
 */
export interface MemcachedTls {
  /** PEM certificates of the authorities to trust; Node's bundled ones when unset. */
  readonly ca?: Buffer;
  /** The client's certificate chain and key, for servers that ask for one (`ssl_verify_mode`). */
  readonly cert?: Buffer;
  readonly key?: Buffer;
  /**
   * Whether the server's certificate must name the host dialled. Off, its chain is still
   * verified (envoyproxy/ratelimit's MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION does the same).
   */
  readonly verifyHostname: boolean;
}

/**
 * TLS on a listener (gRPC or HTTP): files, checked at start and read again every
 * MEMGATE_TLS_REFRESH_S, so that a renewed certificate is served without a restart.
 */
export interface ListenerTls {
  /** PEM certificate chain and private key served. */
  readonly certFile: string;
  readonly keyFile: string;
  /** Mutual TLS: only clients with a certificate these PEM authorities signed. */
  readonly clientCaFile?: string;
  /** With clientCaFile: only clients whose certificate has this among its subject alternative names. */
  readonly clientSan?: string;
}

/** A PEM file a setting names, read at start; a problem naming the setting when it cannot be used. */
export function readPemFile(setting: string, path: string): Buffer | string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    return `${setting}=${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
  if (!bytes.includes('-----BEGIN ')) return `${setting}=${path}: not a PEM file (no "-----BEGIN" line)`;
  return bytes;
}

/**
 * The subject alternative names of a peer certificate, as Node gives them
 * (`DNS:a.example, URI:spiffe://…, IP Address:10.0.0.1`), without their kinds.
 */
export function alternativeNames(subjectaltname: string | undefined): string[] {
  if (!subjectaltname) return [];
  return subjectaltname.split(', ').map((entry) => entry.slice(entry.indexOf(':') + 1));
}
