// The one line memgate logs once it listens, saying what runs, and a warning for each problem
// of the set-up it can see then (no shared store, a heap limit too small for the caches).
import { getHeapStatistics } from 'node:v8';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { DEFAULTS } from '../config/defaults.js';
import type { EnvoyConfig } from '../config/envoy-config.js';
import { countedEnvoyLimits } from '../config/envoy-events.js';
import { parseServerList } from '../config/memcached-servers.js';
import type { PolicySet } from '../config/policies.js';
import type { Settings } from '../config/settings.js';
import { VERSION } from '../config/version.js';
import type { CounterStore } from '../store/counter-store.js';
import type { DeferredLog } from './deferred-log.js';

/**
 * Where the heap limit of the process serving requests came from (main.ts): `budget`, set by
 * memgate from MEMGATE_CACHE_MB; `node`, node's own (the operator's --max-old-space-size, or
 * V8's default).
 */
export interface HeapLimit {
  readonly from: 'budget' | 'node';
}

/**
 * V8's young generation on 64-bit, in MiB (three 16 MiB semi-spaces' worth): part of the
 * heap limit V8 reports, beside the old space.
 */
const YOUNG_GENERATION_MB = 48;

/**
 * The heap, old and young generations, that the rest of the process needs beside the local
 * caches, in MiB: what memgate gives it when it sets the limit (docs/operations.md, Memory).
 */
const PROCESS_HEAP_MB = DEFAULTS.heapBeyondCacheMb + YOUNG_GENERATION_MB;

export interface Started {
  readonly settings: Settings;
  readonly heapLimit: HeapLimit;
  readonly policies: PolicySet;
  readonly envoy: EnvoyConfig | undefined;
  /** The gRPC server's port, when it runs. */
  readonly grpcPort: number | undefined;
  readonly store: CounterStore;
  readonly admin: boolean;
  readonly address: ReturnType<Server['address']>;
  /** Where usage history is written and read from, or `off`. */
  readonly usage: string;
  /** Where spans go, or `off` (tracing/tracing.ts). */
  readonly tracing: string;
}

/**
 * The one start-up line, saying what runs, then a warning for each problem of the set-up
 * (they wait in `log` until the caller flushes it). Returns the servers' labels.
 */
export function logStarted(
  logger: Logger,
  log: DeferredLog,
  { settings, heapLimit, policies, envoy, grpcPort, store, admin, address, usage, tracing }: Started,
): string[] {
  const port = typeof address === 'object' && address !== null ? address.port : settings.port;
  // How far V8 may grow the heap before it must collect: see docs/operations.md, Memory.
  const heapLimitMb = Math.round(getHeapStatistics().heap_size_limit / 2 ** 20);
  const servers =
    settings.memcachedServers === undefined
      ? []
      : parseServerList(settings.memcachedServers).map((endpoint) => endpoint.label);
  const storeText = store.shared
    ? `memcached ${servers.join(',')} (timeout ${settings.memcachedTimeoutMs} ms${settings.memcachedTls ? ', TLS' : ''})`
    : 'embedded';
  const events = [...policies.events.keys()];
  const envoyLimits = envoy ? countedEnvoyLimits(envoy).length : 0;
  const envoyText = envoy
    ? `; Envoy: ${envoy.source} (${plural(envoy.domains.size, 'domain')}, ${plural(envoyLimits, 'counted limit')})`
    : '';
  const tlsText = (tls: { clientCaFile?: string } | undefined) =>
    tls ? (tls.clientCaFile ? ' (mutual TLS)' : ' (TLS)') : '';
  const grpcText =
    grpcPort === undefined ? 'gRPC off' : `gRPC on ${settings.host}:${grpcPort}${tlsText(settings.grpcTls)}`;
  logger.info(
    {
      version: VERSION,
      host: settings.host,
      port,
      store: store.kind,
      ...(store.shared ? { servers, memcachedTimeoutMs: settings.memcachedTimeoutMs } : {}),
      policies: policies.source,
      events,
      grpcPort: grpcPort ?? null,
      tls: {
        http: settings.httpTls !== undefined,
        grpc: settings.grpcTls !== undefined,
        memcached: settings.memcachedTls !== undefined,
      },
      envoy: envoy ? { source: envoy.source, domains: [...envoy.domains.keys()], limits: envoyLimits } : null,
      gateway: policies.gateway !== undefined,
      admin,
      cacheMb: settings.cacheMb,
      heapLimitMb,
      heapLimitFrom: heapLimit.from,
      pid: process.pid,
      usage,
      tracing,
    },
    `memgate ${VERSION} listening on ${settings.host}:${port}${tlsText(settings.httpTls)}, ${grpcText}; store: ${storeText}; policies: ${policies.source} (${events.join(', ')}${policies.gateway ? '; /gate on' : ''})${envoyText}; cache ${settings.cacheMb} MiB, heap limit ${heapLimitMb} MiB; admin routes ${admin ? 'on' : 'off'}; usage history: ${usage}; tracing: ${tracing}`,
  );
  if (!store.shared) {
    log.warn(
      {},
      'MEMCACHED_SERVERS is not set: counters live in this process only, so limits are not shared between instances',
    );
  }
  // memgate's own limit has that room; one the operator gave may not.
  if (heapLimit.from === 'node' && heapLimitMb < settings.cacheMb + PROCESS_HEAP_MB) {
    log.warn(
      { heapLimitMb, cacheMb: settings.cacheMb },
      `the heap limit (${heapLimitMb} MiB) is below MEMGATE_CACHE_MB (${settings.cacheMb}) plus the ${PROCESS_HEAP_MB} MiB the rest of memgate needs: once the caches fill, the process runs out of memory. Raise --max-old-space-size or lower MEMGATE_CACHE_MB`,
    );
  }
  return servers;
}

/** "1 domain", "2 domains". */
function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** The servers MEMCACHED_SRV gave, before the start-up line names them. */
export function logServersFromSrv(logger: Pick<Logger, 'info'>, srv: string, servers: string): void {
  logger.info({ srv, servers }, `MEMCACHED_SRV ${srv}: ${servers}`);
}
