import { setTimeout as sleep } from 'node:timers/promises';
import { getHeapStatistics } from 'node:v8';
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { DEFAULTS } from './config/defaults.js';
import { parseServerList } from './config/memcached-servers.js';
import type { EnvoyConfig } from './config/envoy-config.js';
import { ENVOY_EVENT_PREFIX } from './config/envoy-match.js';
import { envoyLimitEvents } from './config/envoy-events.js';
import type { PolicySet } from './config/policies.js';
import type { Settings } from './config/settings.js';
import { VERSION } from './config/version.js';
import { createLimiter } from './counting/limiter.js';
import { reloadable } from './counting/reloadable-limiter.js';
import { createPolicyReloader, loadPolicies, type ReloadResult } from './policy-reload.js';
import { buildApp } from './http/app.js';
import { createDrain } from './http/drain.js';
import { createMetrics, type Metrics } from './http/metrics.js';
import { startRateLimitService } from './grpc/rate-limit-service.js';
import type { GrpcServer } from './grpc/server.js';
import type { CounterStore, StoreUnavailableError } from './store/counter-store.js';
import type { ClockSync } from './store/memcached/clock-sync.js';
import type { PlacementChange } from './store/memcached/placement.js';
import { createEmbeddedStore } from './store/embedded-store.js';
import { watchEvictions } from './store/eviction-watch.js';
import { createMemcachedStore } from './store/memcached/memcached-store.js';
import type { ObservedDecision, SettledReservation } from './counting/limiter.js';
import { openUsage, type OpenUsage } from './usage/open-usage.js';
import type { UsageRecorder } from './usage/recorder.js';

export interface RunningService {
  readonly app: FastifyInstance;
  readonly store: CounterStore;
  /** Envoy's rate limit service, when MEMGATE_GRPC_PORT is set. */
  readonly grpc?: GrpcServer;
  /**
   * Drains for `drainMs` (default 0): /readyz answers 503 and every answer closes its
   * connection. Then stops accepting connections, lets the requests in flight finish,
   * closes connections that stay quiet, and closes the store.
   */
  close(options?: CloseOptions): Promise<void>;
  /** Reads the policy files again (SIGHUP); rejects with PolicyError and keeps the policies in use when they do not load. */
  reloadPolicies(): Promise<ReloadResult>;
}

export interface CloseOptions {
  readonly drainMs?: number;
}

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

/**
 * Loads the policies, opens the store and serves. Throws PolicyError for a bad policy
 * file. Logs one line once it listens, saying what runs; each problem found while
 * starting follows it as one warning.
 */
export async function startService(
  settings: Settings,
  logger: Logger,
  heapLimit: HeapLimit = { from: 'node' },
): Promise<RunningService> {
  const paths = { policies: settings.configPath, envoy: settings.envoyConfigPath };
  const loaded = await loadPolicies(paths);
  const { policies, envoy, counted } = loaded;
  // What onStoreError decides follows the policies in use, after a reload too.
  let current: PolicySet = counted;
  let currentEnvoy = envoy;
  const log = deferredLog(logger);
  const failingOver =
    settings.memcachedFailover &&
    settings.memcachedServers !== undefined &&
    parseServerList(settings.memcachedServers).length > 1;
  const storeTrouble = storeTroubleLogger(log, () => current, {
    settleMs: settings.memcachedFailoverSettleMs,
    // A down server's line waits as long as asking the others whether its clients can move may take.
    confirmMs: failingOver ? 2 * settings.memcachedTimeoutMs : undefined,
  });
  const metrics = createMetrics();
  const store = openStore(settings, { logger, metrics, storeTrouble, clockLog: log });
  const usage = openUsage({ settings, policyEvents: () => current.events.keys(), logger, watch: metrics.usage });
  const recorder = usage?.recorder;
  if (recorder) metrics.watchUsagePending(() => recorder.pendingRows);
  const options = {
    store,
    keyPrefix: settings.keyPrefix,
    maxClockSkewMs: settings.maxClockSkewMs,
    cacheBytes: settings.cacheMb * 2 ** 20,
    maxDenialCacheMs: settings.maxDenialCacheMs,
    onRollbackError: (err: unknown) => {
      logger.warn(
        { err },
        'taking back a denied request got no answer in time; it is applied if Memcached answers on the same connection, else its cost stays counted until its bucket expires',
      );
    },
    onStoreUnavailable: storeTrouble.onStoreUnavailable,
    onDecision: recorder ? recordingDecisions(metrics.onDecision, recorder) : metrics.onDecision,
    onSettle: recorder ? recordingSettles(metrics.onSettle, recorder) : metrics.onSettle,
  };
  const limiter = reloadable(createLimiter({ ...options, policies: counted }));
  metrics.watchCache(() => limiter.cacheUsage, options.cacheBytes);
  // Reading the files again on a change, SIGHUP or /admin/reload; a bad file keeps the policies in use.
  const reloader = await createPolicyReloader({
    paths,
    initial: loaded,
    apply: (next) => {
      // Swapped together, in one step: a request matched against one Envoy configuration is counted by its limiter.
      limiter.replace(createLimiter({ ...options, policies: next.counted }));
      current = next.counted;
      currentEnvoy = next.envoy;
    },
    watch: settings.policyWatch,
    logger,
    onVersion: metrics.policies.loaded,
    onFailure: metrics.policies.reloadFailed,
  });
  const reload = async () => {
    const result = await reloader.reload('admin');
    return { source: result.reloaded ? result.source : current.source, events: [...current.events.keys()] };
  };
  const admin = settings.adminToken === undefined ? undefined : { token: settings.adminToken, reload };
  // Bucket time is the store's clock: read it once before the first check.
  await store.clock?.ready();
  const drain = createDrain();
  const app = buildApp({
    limiter,
    store,
    logger,
    metrics,
    drain,
    maxEventLoopDelayMs: settings.maxEventLoopDelayMs,
    policyVersion: () => reloader.version,
    ...(admin ? { admin } : {}),
    ...(usage?.history ? { usage: usage.history } : {}),
  });
  try {
    await app.listen({ port: settings.port, host: settings.host });
  } catch (error) {
    reloader.close();
    await usage?.close();
    await store.close();
    // "listen EADDRINUSE: address already in use 0.0.0.0:8080" names the address again.
    const { message, code } = error as NodeJS.ErrnoException;
    const why = /^listen [A-Z]+: (.*?)(?: \S+:\d+)?$/.exec(message)?.[1] ?? message;
    throw new Error(`cannot listen on ${settings.host}:${settings.port}: ${why}${code ? ` (${code})` : ''}`, {
      cause: error,
    });
  }
  let grpc: GrpcServer | undefined;
  if (settings.grpcPort !== undefined) {
    try {
      grpc = await startRateLimitService({
        port: settings.grpcPort,
        host: settings.host,
        limiter,
        config: () => currentEnvoy,
        store,
        draining: () => drain.draining,
        onShadowOverLimit: metrics.onShadowOverLimit,
        onSettleRefused: metrics.onEnvoySettleRefused,
        logger,
      });
    } catch (error) {
      reloader.close();
      await app.close();
      await usage?.close();
      await store.close();
      throw new Error(`cannot serve gRPC on ${settings.host}:${settings.grpcPort}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  const servers = logStarted(logger, log, {
    settings,
    heapLimit,
    policies,
    envoy,
    grpcPort: grpc?.port,
    store,
    admin: admin !== undefined,
    address: app.server.address(),
    usage: usage?.description ?? 'off',
  });
  storeTrouble.started(servers);
  log.flush();
  const evictions = store.shared
    ? watchEvictions(store, (server, evicted, total) => {
        logger.warn(
          { server, evicted, total },
          `Memcached ${server} evicted ${evicted} items for lack of memory: counts it held are now too low. Give it more memory (see docs/operations.md)`,
        );
      })
    : undefined;
  void evictions?.check().catch(() => undefined);
  return {
    app,
    store,
    ...(grpc ? { grpc } : {}),
    close: ({ drainMs = 0 } = {}) => {
      reloader.close();
      return stopServing({ app, grpc, store, drain, evictions, logger, usage }, drainMs);
    },
    reloadPolicies: () => reloader.reload('signal'),
  };
}

interface Serving {
  readonly app: FastifyInstance;
  readonly grpc: GrpcServer | undefined;
  readonly store: CounterStore;
  readonly drain: ReturnType<typeof createDrain>;
  readonly evictions: { stop(): void } | undefined;
  readonly logger: Logger;
  readonly usage: OpenUsage | undefined;
}

/** RunningService.close: the drain, then the listener, the connections and the store, in that order. */
async function stopServing(
  { app, grpc, store, drain, evictions, logger, usage }: Serving,
  drainMs: number,
): Promise<void> {
  evictions?.stop();
  drain.begin(app.server);
  await sleep(drainMs);
  // gRPC refuses new calls now (Envoy's HTTP/2 connections get GOAWAY and move on) and
  // finishes those in flight while the HTTP listener closes.
  const grpcClosed = grpc?.close({ deadlineMs: DEFAULTS.grpcCloseMs }).then(({ forced }) => {
    if (forced) logger.warn(`gRPC calls still running ${DEFAULTS.grpcCloseMs} ms after the drain were cut`);
  });
  const listener = await drain.closeListener(app.server, {
    quietMs: DEFAULTS.shutdownQuietMs,
    maxWaitMs: DEFAULTS.shutdownQuietMaxMs,
  });
  const { allClosed, ...how } = listener;
  if (how.quiet) {
    logger.info(
      how,
      `stopped accepting connections, after ${how.waitedMs} ms with none new; finishing the requests on the ${how.openConnections} connections still open`,
    );
  } else {
    logger.warn(
      how,
      `stopped accepting connections while they kept arriving for ${how.waitedMs} ms after the drain: clients still connecting may see resets (is a load balancer still sending here?)`,
    );
  }
  await allClosed;
  await grpcClosed;
  logger.info('every connection has closed; writing the usage history left and closing the stores');
  await app.close();
  // After the last request: every decision made is in what the recorder writes now.
  await usage?.close().catch((err: unknown) => {
    logger.error({ err }, 'writing the last usage history failed; it is lost');
  });
  await store.close();
}

/** Tells the metrics of every decision, and usage history of every check (a peek decides nothing). */
function recordingDecisions(metricsHook: (observed: ObservedDecision) => void, recorder: UsageRecorder) {
  return (observed: ObservedDecision) => {
    metricsHook(observed);
    if (observed.kind === 'check') recorder.record(observed.event, observed.feature, observed.decision);
  };
}

/** Tells the metrics of every reservation settled (/settle and Envoy's), and usage history of its actual cost. */
function recordingSettles(metricsHook: (settled: SettledReservation) => void, recorder: UsageRecorder) {
  return (settled: SettledReservation) => {
    metricsHook(settled);
    recorder.recordSettled(settled.event, settled.cost);
  };
}

/** The hooks a Memcached store reports through: metrics, and the lines an operator reads. */
interface StoreHooks {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly storeTrouble: ReturnType<typeof storeTroubleLogger>;
  readonly clockLog: DeferredLog;
}

/** The Memcached store MEMCACHED_SERVERS names, or the embedded one when it is unset. */
function openStore(settings: Settings, { logger, metrics, storeTrouble, clockLog }: StoreHooks): CounterStore {
  if (settings.memcachedServers)
    metrics.knowServers(parseServerList(settings.memcachedServers).map((endpoint) => endpoint.label));
  return settings.memcachedServers
    ? createMemcachedStore({
        servers: settings.memcachedServers,
        timeoutMs: settings.memcachedTimeoutMs,
        maxInFlight: settings.memcachedMaxInFlight,
        onOperation: metrics.onOperation,
        failover: settings.memcachedFailover,
        failoverHoldDownMs: settings.memcachedFailoverHoldDownMs,
        failoverSettleMs: settings.memcachedFailoverSettleMs,
        onServerState: storeTrouble.onServerState,
        onPlacementChange: (change) => {
          metrics.onPlacementChange(change);
          storeTrouble.onPlacementChange(change);
        },
        onPlacedAway: metrics.onPlacedAway,
        onClockSync: clockWatcher(clockLog, settings.maxClockSkewMs, metrics.onClockOffset),
        onUndo: (undone, err) => {
          metrics.onUndo(undone);
          if (err)
            logger.warn(
              { err },
              'could not take back increments a frozen Memcached applied late; they stay counted until their buckets expire',
            );
        },
        ...(settings.memcachedCredentials ? { credentials: settings.memcachedCredentials } : {}),
      })
    : createEmbeddedStore();
}

interface Started {
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
}

/**
 * The one start-up line, saying what runs, then a warning for each problem of the set-up
 * (they wait in `log` until the caller flushes it). Returns the servers' labels.
 */
function logStarted(
  logger: Logger,
  log: DeferredLog,
  { settings, heapLimit, policies, envoy, grpcPort, store, admin, address, usage }: Started,
): string[] {
  const port = typeof address === 'object' && address !== null ? address.port : settings.port;
  // How far V8 may grow the heap before it must collect: see docs/operations.md, Memory.
  const heapLimitMb = Math.round(getHeapStatistics().heap_size_limit / 2 ** 20);
  const servers =
    settings.memcachedServers === undefined
      ? []
      : parseServerList(settings.memcachedServers).map((endpoint) => endpoint.label);
  const storeText = store.shared
    ? `memcached ${servers.join(',')} (timeout ${settings.memcachedTimeoutMs} ms)`
    : 'embedded';
  const events = [...policies.events.keys()];
  const envoyLimits = envoy ? envoyLimitEvents(envoy).length : 0;
  const envoyText = envoy
    ? `; Envoy: ${envoy.source} (${plural(envoy.domains.size, 'domain')}, ${plural(envoyLimits, 'counted limit')})`
    : '';
  const grpcText = grpcPort === undefined ? 'gRPC off' : `gRPC on ${settings.host}:${grpcPort}`;
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
      envoy: envoy ? { source: envoy.source, domains: [...envoy.domains.keys()], limits: envoyLimits } : null,
      gateway: policies.gateway !== undefined,
      admin,
      cacheMb: settings.cacheMb,
      heapLimitMb,
      heapLimitFrom: heapLimit.from,
      pid: process.pid,
      usage,
    },
    `memgate ${VERSION} listening on ${settings.host}:${port}, ${grpcText}; store: ${storeText}; policies: ${policies.source} (${events.join(', ')}${policies.gateway ? '; /gate on' : ''})${envoyText}; cache ${settings.cacheMb} MiB, heap limit ${heapLimitMb} MiB; admin routes ${admin ? 'on' : 'off'}; usage history: ${usage}`,
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

/** A log whose lines wait until the start-up line is out, so that it comes first. */
interface DeferredLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
  /** Writes the waiting lines; from then on each is written at once. */
  flush(): void;
}

function deferredLog(logger: Logger): DeferredLog {
  let waiting: (() => void)[] | undefined = [];
  const later = (line: () => void) => {
    if (waiting) waiting.push(line);
    else line();
  };
  return {
    warn: (fields, message) => {
      later(() => {
        logger.warn(fields, message);
      });
    },
    info: (fields, message) => {
      later(() => {
        logger.info(fields, message);
      });
    },
    flush() {
      for (const line of waiting ?? []) line();
      waiting = undefined;
    },
  };
}

/**
 * Records each server's clock offset, and warns when this host's clock is further from
 * the store's than the skew allowance (and says when it is back within): memgate counts
 * by the store's clock, so nothing is wrong with the limits, but the host's clock is.
 */
function clockWatcher(log: DeferredLog, maxClockSkewMs: number, record: (server: string, offsetMs: number) => void) {
  const beyond = new Set<string>();
  return (server: string, { offsetMs, uncertaintyMs }: ClockSync) => {
    record(server, offsetMs);
    const rounded = Math.round(offsetMs);
    if (Math.abs(offsetMs) > maxClockSkewMs && !beyond.has(server)) {
      beyond.add(server);
      log.warn(
        { server, clockOffsetMs: rounded, uncertaintyMs: Math.round(uncertaintyMs), maxClockSkewMs },
        `this host's clock is ${Math.abs(rounded)} ms ${offsetMs > 0 ? 'behind' : 'ahead of'} Memcached ${server}'s, beyond MEMGATE_MAX_CLOCK_SKEW_MS: memgate counts by Memcached's clock, but check this host's time sync (NTP)`,
      );
    } else if (Math.abs(offsetMs) <= maxClockSkewMs && beyond.delete(server)) {
      log.info(
        { server, clockOffsetMs: rounded },
        `this host's clock is back within MEMGATE_MAX_CLOCK_SKEW_MS of Memcached ${server}'s`,
      );
    }
  };
}

/** What checks of unreachable servers' clients get, per each event's onStoreError, in words. */
function degradedChecks(policies: PolicySet, servers: 'one' | 'several'): string {
  const byRule = { allow: [] as string[], deny: [] as string[] };
  const envoyByRule = { allow: 0, deny: 0 };
  for (const { event, onStoreError } of policies.events.values()) {
    if (event.startsWith(ENVOY_EVENT_PREFIX)) envoyByRule[onStoreError]++;
    else byRule[onStoreError].push(event);
  }
  // An Envoy configuration may hold hundreds of limits: they are counted, not named.
  for (const rule of ['allow', 'deny'] as const) {
    const count = envoyByRule[rule];
    if (count > 0) byRule[rule].push(`${count} Envoy limit${count === 1 ? '' : 's'}`);
  }
  const verb = (events: string[]) =>
    events.length === 1 && !/^\d+ Envoy limits$/.test(events[0] ?? '') ? 'is' : 'are';
  const parts = [
    ...(byRule.allow.length > 0
      ? [`${byRule.allow.join(', ')} ${verb(byRule.allow)} allowed, marked "degraded" (onStoreError: allow)`]
      : []),
    ...(byRule.deny.length > 0
      ? [`${byRule.deny.join(', ')} ${verb(byRule.deny)} denied with 429 and retry-after: 1 (onStoreError: deny)`]
      : []),
  ];
  return `checks of the clients ${servers === 'one' ? 'it holds' : 'they hold'} are decided without the store: ${parts.join('; ')}`;
}

/**
 * Logs store trouble once per change: a server going down and coming back (with how many
 * checks were decided without the store meanwhile), its clients moving to other servers
 * and back, rather than every failed check. The servers that do not answer while the
 * service starts make one warning after the start-up line. A failed check no down server
 * explains is logged at most every 5 s.
 */
function storeTroubleLogger(
  log: DeferredLog,
  policies: () => PolicySet,
  failover: { readonly settleMs: number; readonly confirmMs: number | undefined },
) {
  const down = new Map<string, { since: number; reason: string }>();
  /** Servers whose clients are counted elsewhere, and where: their going down and coming back are told by placement's lines. */
  const away = new Map<string, readonly string[]>();
  /** Down servers whose line waits: their clients may yet fail over once another server has answered. */
  const waiting = new Map<string, NodeJS.Timeout>();
  /** Down servers whose "is down" line was written: their "answers again" line follows. */
  const told = new Set<string>();
  let starting = true;
  let degraded = 0;
  let unexplainedAt = -Infinity;
  let unexplained = 0;
  const tellDown = (server: string, reason: string) => {
    told.add(server);
    log.warn(
      { server, reason },
      `Memcached ${server} is down (${reason}): until it answers, /readyz answers 503 and ${degradedChecks(policies(), 'one')}`,
    );
  };
  const stopWaiting = (server: string) => {
    clearTimeout(waiting.get(server));
    waiting.delete(server);
  };
  return {
    onServerState: (server: string, { up, reason = 'no reason' }: { up: boolean; reason?: string }): void => {
      if (!up) {
        down.set(server, { since: Date.now(), reason });
        if (starting || away.has(server)) return;
        const { confirmMs } = failover;
        if (confirmMs === undefined) tellDown(server, reason);
        else
          waiting.set(
            server,
            setTimeout(() => {
              waiting.delete(server);
              if (down.has(server) && !away.has(server)) tellDown(server, reason);
            }, confirmMs).unref(),
          );
        return;
      }
      stopWaiting(server);
      const was = down.get(server);
      down.delete(server);
      if (starting || !was || away.has(server) || !told.delete(server)) return;
      log.info(
        { server, downMs: Date.now() - was.since, degradedChecks: degraded },
        `Memcached ${server} answers again, after ${Date.now() - was.since} ms; ${degraded} checks were decided without the store meanwhile`,
      );
      degraded = 0;
    },
    onPlacementChange: (change: PlacementChange): void => {
      const { server } = change;
      if (change.kind === 'left') {
        away.set(server, change.to);
        stopWaiting(server);
        if (starting) return;
        log.warn(
          { server, reason: change.reason, failedOverTo: change.to, holdDownMs: change.holdDownMs },
          `Memcached ${server} is down (${change.reason}): its clients are counted on ${change.to.join(', ')} from now on, from zero there; they move back once it has answered for ${seconds(failover.settleMs)}, no sooner than ${seconds(change.holdDownMs)} from now`,
        );
      } else if (change.kind === 'answering') {
        if (starting) return;
        log.info(
          { server, returnsInMs: change.returnsInMs },
          `Memcached ${server} answers again: its clients move back to it in ${seconds(change.returnsInMs)} if it keeps answering`,
        );
      } else if (change.kind === 'unsettled') {
        if (starting) return;
        log.warn(
          { server, reason: change.reason },
          `Memcached ${server} stopped answering again (${change.reason}) before its clients moved back: they stay where they are, and its settle starts over when it answers`,
        );
      } else {
        away.delete(server);
        // Back at once as it answers (no other server answered): the "answers again" line that follows says it.
        if (starting || down.has(server)) return;
        log.info(
          { server, awayMs: change.awayMs },
          `Memcached ${server}'s clients are counted on it again, after ${seconds(change.awayMs)} away`,
        );
      }
    },
    onStoreUnavailable: (err: StoreUnavailableError, event: string): void => {
      // Explained by a down server whose clients are not counted elsewhere: its "answers again" line tells how many.
      if ([...down.keys()].some((server) => !away.has(server))) {
        degraded++;
        return;
      }
      unexplained++;
      const now = Date.now();
      if (now - unexplainedAt < 5000) return;
      log.warn(
        { error: err.message, event, degradedChecks: unexplained },
        `Memcached could not answer (${err.message}): checks are decided by each event's onStoreError rule`,
      );
      unexplainedAt = now;
      unexplained = 0;
    },
    /** The start-up line is out: say which of `servers` did not answer while starting, in one line. */
    started: (servers: readonly string[]): void => {
      starting = false;
      const silent = servers.filter((server) => down.has(server) && !away.has(server));
      const moved = servers.filter((server) => away.has(server));
      if (moved.length > 0) {
        log.warn(
          { servers: moved, failedOverTo: moved.map((server) => away.get(server)) },
          `Memcached ${moved.join(', ')} cannot be reached: memgate serves anyway; ${moved.length === 1 ? 'its' : 'their'} clients are counted on ${[...new Set(moved.flatMap((server) => away.get(server) ?? []))].join(', ')} until ${moved.length === 1 ? 'it has' : 'they have'} answered for ${seconds(failover.settleMs)}`,
        );
      }
      if (silent.length === 0) return;
      for (const server of silent) told.add(server);
      const reasons = silent.map((server) => down.get(server)?.reason ?? 'no reason');
      log.warn(
        { servers: silent, reasons },
        `Memcached ${silent.map((server, i) => `${server} (${reasons[i] ?? ''})`).join(', ')} cannot be reached: memgate serves anyway; until ${silent.length === 1 ? 'it answers' : 'they answer'}, /readyz answers 503 and ${degradedChecks(policies(), silent.length === 1 ? 'one' : 'several')}`,
      );
    },
  };
}

/** "1.5 s", "30 s". */
function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/** "1 domain", "2 domains". */
function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
