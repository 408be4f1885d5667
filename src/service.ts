import { setTimeout as sleep } from 'node:timers/promises';
import { getHeapStatistics } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { DEFAULTS } from './config/defaults.js';
import { loadPolicyFile } from './config/policies.js';
import type { Settings } from './config/settings.js';
import { createLimiter } from './counting/limiter.js';
import { reloadable } from './counting/reloadable-limiter.js';
import { buildApp } from './http/app.js';
import { createDrain } from './http/drain.js';
import { createMetrics } from './http/metrics.js';
import type { CounterStore, StoreUnavailableError } from './store/counter-store.js';
import type { ClockSync } from './store/memcached/clock-sync.js';
import { createEmbeddedStore } from './store/embedded-store.js';
import { watchEvictions } from './store/eviction-watch.js';
import { createMemcachedStore } from './store/memcached/memcached-store.js';

export interface RunningService {
  readonly app: FastifyInstance;
  readonly store: CounterStore;
  /**
   * Drains for `drainMs` (default 0): /readyz answers 503 and every answer closes its
   * connection. Then stops accepting connections, lets the requests in flight finish,
   * closes connections that stay quiet, and closes the store.
   */
  close(options?: CloseOptions): Promise<void>;
}

export interface CloseOptions {
  readonly drainMs?: number;
}

/** Loads the policies, opens the store and serves. Throws PolicyError for a bad policy file. */
export async function startService(settings: Settings, logger: Logger): Promise<RunningService> {
  const policies = await loadPolicyFile(settings.configPath);
  const metrics = createMetrics();
  const store = settings.memcachedServers
    ? createMemcachedStore({
        servers: settings.memcachedServers,
        timeoutMs: settings.memcachedTimeoutMs,
        maxInFlight: settings.memcachedMaxInFlight,
        onOperation: metrics.onOperation,
        onServerState: serverStateLogger(logger),
        onClockSync: clockWatcher(logger, settings.maxClockSkewMs, metrics.onClockOffset),
        onUndo: (undone, err) => {
          metrics.onUndo(undone);
          if (err) logger.warn({ err }, 'could not take back increments a frozen Memcached applied late; they stay counted until their buckets expire');
        },
        ...(settings.memcachedCredentials ? { credentials: settings.memcachedCredentials } : {}),
      })
    : createEmbeddedStore();
  const options = {
    store,
    keyPrefix: settings.keyPrefix,
    maxClockSkewMs: settings.maxClockSkewMs,
    cacheBytes: settings.cacheMb * 2 ** 20,
    maxDenialCacheMs: settings.maxDenialCacheMs,
    onRollbackError: (err: unknown) => {
      logger.warn({ err }, 'taking back a denied request got no answer in time; it is applied if Memcached answers on the same connection, else its cost stays counted until its bucket expires');
    },
    onStoreUnavailable: outageLogger(logger),
    onDecision: metrics.onDecision,
  };
  const limiter = reloadable(createLimiter({ ...options, policies }));
  metrics.watchCache(() => limiter.cacheUsage);
  // Reading the file again; a bad file rejects with PolicyError and the policies in use stay.
  const reload = async () => {
    const next = await loadPolicyFile(settings.configPath);
    limiter.replace(createLimiter({ ...options, policies: next }));
    return { source: next.source, events: [...next.events.keys()] };
  };
  const admin = settings.adminToken === undefined ? undefined : { token: settings.adminToken, reload };
  // Bucket time is the store's clock: read it once before the first check.
  await store.clock?.ready();
  const drain = createDrain();
  const app = buildApp({ limiter, store, logger, metrics, drain, maxEventLoopDelayMs: settings.maxEventLoopDelayMs, ...(admin ? { admin } : {}) });
  await app.listen({ port: settings.port, host: settings.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : settings.port;
  logger.info(
    {
      host: settings.host,
      port,
      store: store.description,
      policies: policies.source,
      events: [...policies.events.keys()],
      cacheMb: settings.cacheMb,
      // How far V8 may grow the heap before it must collect: see docs/operations.md, sizing.
      heapLimitMb: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20),
    },
    `memgate listening on ${settings.host}:${port} with the ${store.kind} store`,
  );
  const evictions = store.shared
    ? watchEvictions(store, (server, evicted, total) => {
        logger.warn(
          { server, evicted, total },
          `Memcached ${server} evicted ${evicted} items for lack of memory: counts it held are now too low. Give it more memory (see docs/operations.md)`,
        );
      })
    : undefined;
  void evictions?.check().catch(() => undefined);
  if (store.kind === 'embedded') {
    logger.warn('MEMCACHED_SERVERS is not set: counters live in this process only, so limits are not shared between instances');
  } else {
    store.ping().catch((err: unknown) => {
      logger.warn({ err }, 'Memcached does not answer yet; /readyz reports 503 and checks fail with 503 until it does');
    });
  }
  return {
    app,
    store,
    async close({ drainMs = 0 } = {}) {
      evictions?.stop();
      drain.begin(app.server);
      await sleep(drainMs);
      const listener = await drain.closeListener(app.server, { quietMs: DEFAULTS.shutdownQuietMs, maxWaitMs: DEFAULTS.shutdownQuietMaxMs });
      const { allClosed, ...how } = listener;
      if (how.quiet) {
        logger.info(how, `stopped accepting connections, after ${how.waitedMs} ms with none new; finishing the requests on the ${how.openConnections} connections still open`);
      } else {
        logger.warn(how, `stopped accepting connections while they kept arriving for ${how.waitedMs} ms after the drain: clients still connecting may see resets (is a load balancer still sending here?)`);
      }
      await allClosed;
      logger.info('every connection has closed; closing the store');
      await app.close();
      await store.close();
    },
  };
}

/**
 * Records each server's clock offset, and warns when this host's clock is further from
 * the store's than the skew allowance (and says when it is back within): memgate counts
 * by the store's clock, so nothing is wrong with the limits, but the host's clock is.
 */
function clockWatcher(logger: Logger, maxClockSkewMs: number, record: (server: string, offsetMs: number) => void) {
  const beyond = new Set<string>();
  return (server: string, { offsetMs, uncertaintyMs }: ClockSync) => {
    record(server, offsetMs);
    const rounded = Math.round(offsetMs);
    if (Math.abs(offsetMs) > maxClockSkewMs && !beyond.has(server)) {
      beyond.add(server);
      logger.warn(
        { server, clockOffsetMs: rounded, uncertaintyMs: Math.round(uncertaintyMs), maxClockSkewMs },
        `this host's clock is ${Math.abs(rounded)} ms ${offsetMs > 0 ? 'behind' : 'ahead of'} Memcached ${server}'s, beyond MEMGATE_MAX_CLOCK_SKEW_MS: memgate counts by Memcached's clock, but check this host's time sync (NTP)`,
      );
    } else if (Math.abs(offsetMs) <= maxClockSkewMs && beyond.delete(server)) {
      logger.info({ server, clockOffsetMs: rounded }, `this host's clock is back within MEMGATE_MAX_CLOCK_SKEW_MS of Memcached ${server}'s`);
    }
  };
}

/** Logs each Memcached server going down and coming back, once per change. */
function serverStateLogger(logger: Logger): (server: string, state: { up: boolean; reason?: string }) => void {
  const downSince = new Map<string, number>();
  return (server, { up, reason }) => {
    if (!up) {
      downSince.set(server, Date.now());
      logger.warn({ server, reason }, `Memcached ${server} is down (${reason ?? 'no reason'}): checks of its clients are decided by each event's onStoreError rule until it answers`);
      return;
    }
    const since = downSince.get(server);
    downSince.delete(server);
    logger.info({ server, downMs: since === undefined ? undefined : Date.now() - since }, `Memcached ${server} answers again`);
  };
}

/**
 * Logs that the store could not answer a check, at most once per `intervalMs` however
 * many checks fail, with how many were decided without it since the last line.
 */
function outageLogger(logger: Logger, intervalMs = 5000): (err: StoreUnavailableError, event: string) => void {
  let loggedAt = -Infinity;
  let since = 0;
  return (err, event) => {
    since++;
    const now = Date.now();
    if (now - loggedAt < intervalMs) return;
    logger.warn({ err, event, degradedChecks: since }, "Memcached could not answer: checks are decided by each event's onStoreError rule");
    loggedAt = now;
    since = 0;
  };
}
