// One running service, wired from the settings: the store, the limiter over the policies in
// force (a snapshot per load), usage history, the HTTP app and, when MEMGATE_GRPC_PORT is set,
// Envoy's service. What it tells the operator is operator-log/'s; how it stops, stop-serving.ts.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { parseServerList } from './config/memcached-servers.js';
import type { Settings } from './config/settings.js';
import {
  createLimiterInSlices,
  type Limiter,
  type ObservedDecision,
  type SettledReservation,
} from './counting/limiter.js';
import { reloadCarries } from './counting/sizing.js';
import { reloadable } from './counting/reloadable-limiter.js';
import type { GrpcServer } from './grpc/server.js';
import { buildApp } from './http/app.js';
import { httpsOptions, serveRenewedCertificates } from './http/tls.js';
import { ListenerCertificates } from './listener-certificates.js';
import { serversFromSrv } from './store/memcached/srv.js';
import type { ListenerTls } from './config/tls.js';
import type { Server as TlsServer } from 'node:tls';
import { createDrain } from './http/drain.js';
import { createMetrics, type Metrics } from './http/metrics.js';
import { clockWatcher } from './operator-log/clock-watch.js';
import { deferredLog, type DeferredLog } from './operator-log/deferred-log.js';
import { logServersFromSrv, logStarted, type HeapLimit } from './operator-log/started-line.js';
import { certificateLog } from './operator-log/certificate-log.js';
import { statsdErrorLog } from './operator-log/statsd-log.js';
import { tracingDiagLog } from './operator-log/tracing-log.js';
import { startTracing } from './tracing/tracing.js';
import { tracedStore } from './tracing/traced-store.js';
import { createUpstreamStats } from './upstream-stats.js';
import { storeTroubleLogger, type StoreTroubleLog } from './operator-log/store-trouble.js';
import { storeWarnings, type StoreWarnings } from './operator-log/store-warnings.js';
import { createPolicyReloader, loadPolicies, type LoadedPolicies, type ReloadResult } from './policy-reload.js';
import { stopServing } from './stop-serving.js';
import type { CounterStore } from './store/counter-store.js';
import { createEmbeddedStore } from './store/embedded-store.js';
import { watchEvictions } from './store/eviction-watch.js';
import { createMemcachedStore } from './store/memcached/memcached-store.js';
import { openUsage } from './usage/open-usage.js';
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

export type { HeapLimit };

/**
 * Loads the policies, opens the store and serves. Throws PolicyError for a bad policy
 * file. Logs one line once it listens, saying what runs; each problem found while
 * starting follows it as one warning.
 */
export async function startService(
  given: Settings,
  logger: Logger,
  heapLimit: HeapLimit = { from: 'node' },
): Promise<RunningService> {
  // The servers of MEMCACHED_SRV are looked up once, and are then the servers as MEMCACHED_SERVERS's would be.
  const settings =
    given.memcachedSrv === undefined ? given : { ...given, memcachedServers: await serversFromSrv(given.memcachedSrv) };
  if (given.memcachedSrv !== undefined) logServersFromSrv(logger, given.memcachedSrv, settings.memcachedServers ?? '');
  // The listeners' certificates first: a set Node refuses stops the start before anything is opened.
  const httpCertificates = settings.httpTls && listenerCertificates(settings.httpTls, settings, logger, 'MEMGATE_TLS');
  const grpcCertificates =
    settings.grpcTls && listenerCertificates(settings.grpcTls, settings, logger, 'MEMGATE_GRPC_TLS');
  const paths = {
    policies: settings.configPath,
    envoy: settings.envoyConfigPath,
    mergeEnvoyDomains: settings.envoyMergeDomains,
  };
  const loaded = await loadPolicies(paths);
  const { policies, envoy } = loaded;
  const log = deferredLog(logger);
  const failingOver =
    settings.memcachedFailover &&
    settings.memcachedServers !== undefined &&
    parseServerList(settings.memcachedServers).length > 1;
  // What onStoreError decides follows the policies in force, after a reload too.
  const storeTrouble = storeTroubleLogger(log, () => limiter.policies, {
    settleMs: settings.memcachedFailoverSettleMs,
    // A down server's line waits as long as asking the others whether its clients can move may take.
    confirmMs: failingOver ? 2 * settings.memcachedTimeoutMs : undefined,
  });
  const metrics = createMetrics();
  const warnings = storeWarnings(logger);
  const store = openStore(settings, { metrics, storeTrouble, warnings, clockLog: log });
  const usage = openUsage({
    settings,
    policyEvents: () => limiter.policies.events.keys(),
    logger,
    watch: metrics.usage,
  });
  const recorder = usage?.recorder;
  if (recorder) metrics.watchUsagePending(() => recorder.pendingRows);
  // Off, the tracer is undefined and nothing of tracing is put on a request's path.
  const tracing = await startTracing(settings, {
    ...(settings.tracing ? { diagLogger: tracingDiagLog(logger, settings.tracing.url) } : {}),
  });
  const { tracer } = tracing;
  const options = {
    store: tracer ? tracedStore(store, tracer) : store,
    keyPrefix: settings.keyPrefix,
    maxClockSkewMs: settings.maxClockSkewMs,
    cacheBytes: settings.cacheMb * 2 ** 20,
    maxDenialCacheMs: settings.maxDenialCacheMs,
    reloadSpreadSeconds: settings.reloadSpreadSeconds,
    onRollbackError: warnings.rollbackFailed,
    onStoreUnavailable: storeTrouble.onStoreUnavailable,
    onDecision: recorder ? recordingDecisions(metrics.onDecision, recorder) : metrics.onDecision,
    onSettle: recorder ? recordingSettles(metrics.onSettle, recorder) : metrics.onSettle,
  };
  // One snapshot per load: memgate's policies, the Envoy configuration's limits and the version, swapped together.
  // Planned in slices, between which checks are answered: 20,000 overrides plan for ~200 ms.
  // A reload's snapshot carries what the one it replaces counted (counting/algorithms/windows/carry-over.ts).
  const snapshotOf = (load: LoadedPolicies, replacing?: Limiter) =>
    createLimiterInSlices({ ...options, policies: load.policies, envoy: load.envoy, version: load.version, replacing });
  const limiter = reloadable(await snapshotOf(loaded));
  metrics.watchCache(() => limiter.cacheUsage, options.cacheBytes);
  // envoyproxy/ratelimit's statsd stats, beside Prometheus.
  const upstreamStats =
    settings.statsd &&
    createUpstreamStats({
      target: settings.statsd,
      flushMs: settings.statsdFlushMs,
      nearRatio: settings.envoyNearLimitRatio,
      onError: statsdErrorLog(logger, `${settings.statsd.protocol}://${settings.statsd.host}:${settings.statsd.port}`),
    });
  // Reading the files again on a change, SIGHUP or /admin/reload; a bad file keeps the policies in use.
  const reloader = await createPolicyReloader({
    paths,
    initial: loaded,
    apply: async (next) => {
      const snapshot = await snapshotOf(next, limiter.current());
      limiter.replace(snapshot);
      return reloadCarries(snapshot.plans);
    },
    watch: settings.policyWatch,
    recheckMs: settings.policyWatchRecheckMs,
    logger,
    onVersion: (version) => {
      metrics.policies.loaded(version);
      upstreamStats?.configLoad(true);
    },
    onFailure: (trigger) => {
      metrics.policies.reloadFailed(trigger);
      upstreamStats?.configLoad(false);
    },
  });
  const reload = async () => {
    const result = await reloader.reload('admin');
    return {
      source: result.reloaded ? result.source : limiter.policies.source,
      events: [...limiter.policies.events.keys()],
      ...(result.reloaded && result.carried.length > 0 ? { carried: [...result.carried] } : {}),
    };
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
    https: httpCertificates && httpsOptions(httpCertificates.current),
    tracer,
  });
  try {
    await app.listen({ port: settings.port, host: settings.host });
  } catch (error) {
    reloader.close();
    await usage?.close();
    await store.close();
    await upstreamStats?.close();
    await tracing.close();
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
      // Loaded only when served: the gRPC service's modules (proto-loader, protobufjs) took
      // about 45 ms of every start, with or without a gRPC port.
      const { startRateLimitService } = await import('./grpc/rate-limit-service.js');
      grpc = await startRateLimitService({
        port: settings.grpcPort,
        host: settings.host,
        limiter,
        store,
        draining: () => drain.draining,
        onShadowOverLimit: metrics.onShadowOverLimit,
        shadowAll: settings.envoyShadowMode,
        quotaAll: settings.envoyQuotaMode,
        limitHeaders: settings.envoyLimitHeaders,
        describeInMetadata: settings.envoyDynamicMetadata,
        onSettleRefused: metrics.onEnvoySettleRefused,
        logger,
        tls: grpcCertificates && { certificates: grpcCertificates, clientSan: settings.grpcTls.clientSan },
        stats: upstreamStats,
        tracer,
      });
    } catch (error) {
      reloader.close();
      grpcCertificates?.stop();
      await app.close();
      await usage?.close();
      await store.close();
      await upstreamStats?.close();
      await tracing.close();
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
    tracing: tracing.description,
  });
  storeTrouble.started(servers);
  log.flush();
  const evictions = store.shared ? watchEvictions(store, warnings.evicted) : undefined;
  void evictions?.check().catch(() => undefined);
  const stopHttpCertificates =
    httpCertificates && serveRenewedCertificates(app.server as unknown as TlsServer, httpCertificates);
  return {
    app,
    store,
    ...(grpc ? { grpc } : {}),
    close: ({ drainMs = 0 } = {}) => {
      reloader.close();
      stopHttpCertificates?.();
      grpcCertificates?.stop();
      return stopServing({ app, grpc, store, drain, evictions, logger, usage, tracing }, drainMs).finally(() =>
        upstreamStats?.close(),
      );
    },
    reloadPolicies: () => reloader.reload('signal'),
  };
}

/**
 * A listener's certificates, read now and every MEMGATE_TLS_REFRESH_S; a set Node refuses at
 * start stops it, naming the settings (`prefix`_CERT, …) and Node's reason.
 */
function listenerCertificates(
  tls: ListenerTls,
  settings: Settings,
  logger: Logger,
  prefix: string,
): ListenerCertificates {
  try {
    return new ListenerCertificates(tls, {
      refreshMs: settings.tlsRefreshSeconds * 1000,
      ...certificateLog(logger, prefix),
    });
  } catch (error) {
    throw new Error(`${prefix}_CERT, ${prefix}_KEY: cannot serve them: ${(error as Error).message}`, { cause: error });
  }
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
  readonly metrics: Metrics;
  readonly storeTrouble: StoreTroubleLog;
  readonly warnings: StoreWarnings;
  readonly clockLog: DeferredLog;
}

/** The Memcached store MEMCACHED_SERVERS names, or the embedded one when it is unset. */
function openStore(settings: Settings, { metrics, storeTrouble, warnings, clockLog }: StoreHooks): CounterStore {
  if (settings.memcachedServers)
    metrics.knowServers(parseServerList(settings.memcachedServers).map((endpoint) => endpoint.label));
  return settings.memcachedServers
    ? createMemcachedStore({
        servers: settings.memcachedServers,
        timeoutMs: settings.memcachedTimeoutMs,
        maxInFlight: settings.memcachedMaxInFlight,
        expirationJitterS: settings.memcachedExpirationJitterS,
        onOperation: metrics.onOperation,
        failover: settings.memcachedFailover,
        failoverHoldDownMs: settings.memcachedFailoverHoldDownMs,
        failoverSettleMs: settings.memcachedFailoverSettleMs,
        // The service says it in its own lines (store-trouble.ts), with what each event gets.
        logger: false,
        onServerState: storeTrouble.onServerState,
        onPlacementChange: (change) => {
          metrics.onPlacementChange(change);
          storeTrouble.onPlacementChange(change);
        },
        onPlacedAway: metrics.onPlacedAway,
        onClockSync: clockWatcher(clockLog, settings.maxClockSkewMs, metrics.onClockOffset),
        onUndo: (undone, err) => {
          metrics.onUndo(undone);
          if (err) warnings.undoFailed(err);
        },
        ...(settings.memcachedCredentials ? { credentials: settings.memcachedCredentials } : {}),
        tls: settings.memcachedTls,
      })
    : createEmbeddedStore();
}
