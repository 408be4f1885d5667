import { getHeapStatistics } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { CacheUsage } from '../counting/algorithms/windows/feature-cache.js';
import type { ObservedDecision, SettledReservation } from '../counting/limiter.js';
import type { StoreOperation, StoreOperationOutcome } from '../store/memcached/memcached-store.js';
import type { PlacementChange } from '../store/memcached/placement.js';
import { metricsRoute } from './schemas.js';
import { TalliedHistogram } from './tallied-histogram.js';

export interface Metrics {
  /** For LimiterOptions.onDecision. */
  readonly onDecision: (observed: ObservedDecision) => void;
  /** For MemcachedStoreOptions.onOperation. */
  readonly onOperation: (operation: StoreOperation, seconds: number, outcome: StoreOperationOutcome) => void;
  /** For MemcachedStoreOptions.onClockSync: a server's clock minus this host's. */
  readonly onClockOffset: (server: string, offsetMs: number) => void;
  /** For MemcachedStoreOptions.onUndo: increments taken back after their check was decided without the store. */
  readonly onUndo: (undone: number) => void;
  /** For MemcachedStoreOptions.onPlacementChange: a server's clients moved away from it, or back. */
  readonly onPlacementChange: (change: PlacementChange) => void;
  /** For MemcachedStoreOptions.onPlacedAway: a check counted on another server than its home. */
  readonly onPlacedAway: (home: string, placed: string) => void;
  /** The Memcached servers, so that their failover series start at 0 and increase() sees the first. */
  knowServers(servers: readonly string[]): void;
  /** For LimiterOptions.onSettle: a reservation settled, with what it reserved and what it cost. */
  readonly onSettle: (settled: SettledReservation) => void;
  /** An Envoy call's settle memgate could not make (answered OK all the same), by its code. */
  readonly onEnvoySettleRefused: (refusal: { readonly event: string | undefined; readonly code: string }) => void;
  /** An Envoy descriptor in shadow_mode (or quota_mode) was over its limit, and did not refuse the call by itself. */
  readonly onShadowOverLimit: (event: string) => void;
  /** The policies: a version put in use (memgate_policy_version_info), and a reload refused. */
  readonly policies: {
    readonly loaded: (version: string) => void;
    readonly reloadFailed: (trigger: 'watch' | 'signal' | 'admin') => void;
  };
  /** For usage history: a flush the store refused (kept for the next), and rows dropped after repeated failures. */
  readonly usage: { readonly flushFailed: () => void; readonly dropped: (rows: number) => void };
  /** Reports the rows of usage counted and not yet written, at each scrape. */
  watchUsagePending(rows: () => number): void;
  /** Reports a limiter's local caches at each scrape, beside their budget (MEMGATE_CACHE_MB in bytes) when given. */
  watchCache(usage: () => CacheUsage, budgetBytes?: number): void;
  /** Serves GET /metrics in Prometheus's text format. */
  register(app: FastifyInstance): void;
}

const KINDS = ['check', 'peek'] as const;
const OUTCOMES = ['allowed', 'denied', 'shadow_denied', 'degraded_allowed', 'degraded_denied'] as const;
type OutcomeCounts = Record<(typeof KINDS)[number], Record<(typeof OUTCOMES)[number], number>>;
const OPERATION_OUTCOMES: readonly StoreOperationOutcome[] = ['ok', 'unavailable', 'overloaded'];
const noOutcomes = () => ({ allowed: 0, denied: 0, shadow_denied: 0, degraded_allowed: 0, degraded_denied: 0 });

/** memgate's Prometheus metrics (prom-client), plus the process's own (CPU, memory, event loop). */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Decisions are counted as plain numbers and handed to prom-client at each scrape: its
  // inc() hashes a label object each time, a share of a repeated denial's cost to notice.
  const decisionCounts = new Map<string, OutcomeCounts>();
  const cacheCounts = { denialHit: 0, settledHit: 0, settledMiss: 0 };
  new Counter({
    name: 'memgate_decisions_total',
    help: 'Decisions by event, route kind (check or peek) and outcome (allowed, denied, shadow_denied: allowed, but a limit in shadow would have refused, degraded_allowed, degraded_denied)',
    labelNames: ['event', 'kind', 'outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [event, kinds] of decisionCounts) {
        for (const kind of KINDS) {
          for (const outcome of OUTCOMES)
            if (kinds[kind][outcome] > 0) this.inc({ event, kind, outcome }, kinds[kind][outcome]);
        }
      }
    },
  });
  const usageCounts = { flushFailures: 0, droppedRows: 0 };
  let usagePending: (() => number) | undefined;
  new Counter({
    name: 'memgate_usage_flush_failures_total',
    help: 'Flushes of usage history the usage store refused; their counts are kept and written at the next flush',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(usageCounts.flushFailures);
    },
  });
  new Counter({
    name: 'memgate_usage_dropped_rows_total',
    help: 'Rows of usage history (an event and a second, or a minute of clients) dropped because the usage store kept failing: the curves miss them',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(usageCounts.droppedRows);
    },
  });
  new Gauge({
    name: 'memgate_usage_pending_rows',
    help: 'Rows of usage history counted in memory and not yet written to the usage store',
    registers: [registry],
    collect() {
      this.set(usagePending?.() ?? 0);
    },
  });
  new Counter({
    name: 'memgate_local_cache_total',
    help: 'Checks answered from memory: cache "denial" (a repeated denial, no store call) or "settled" (settled bucket counts kept), by result',
    labelNames: ['cache', 'result'] as const,
    registers: [registry],
    collect() {
      this.reset();
      if (cacheCounts.denialHit > 0) this.inc({ cache: 'denial', result: 'hit' }, cacheCounts.denialHit);
      if (cacheCounts.settledHit > 0) this.inc({ cache: 'settled', result: 'hit' }, cacheCounts.settledHit);
      if (cacheCounts.settledMiss > 0) this.inc({ cache: 'settled', result: 'miss' }, cacheCounts.settledMiss);
    },
  });
  // Observed on every check: tallied as plain numbers (tallied-histogram.ts), as decisions are counted.
  const keysRead = new TalliedHistogram({
    name: 'memgate_keys_read_per_check',
    help: 'Memcached keys a check read, the reset marker included',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    registers: [registry],
  });
  const operationCounts = new Map<StoreOperation, Record<StoreOperationOutcome, number>>();
  new Counter({
    name: 'memgate_store_operations_total',
    help: 'Memcached calls by operation and outcome (ok, unavailable: failed or past the deadline, overloaded: shed)',
    labelNames: ['operation', 'outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [operation, outcomes] of operationCounts) {
        for (const outcome of OPERATION_OUTCOMES)
          if (outcomes[outcome] > 0) this.inc({ operation, outcome }, outcomes[outcome]);
      }
    },
  });
  const latency = new TalliedHistogram({
    name: 'memgate_store_operation_seconds',
    help: 'Duration of Memcached calls, by operation',
    labelName: 'operation',
    buckets: [0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [registry],
  });

  const undone = new Counter({
    name: 'memgate_store_late_increments_undone_total',
    help: 'Increments a slow or frozen Memcached applied after their check had been refused without it, taken back when their replies came',
    registers: [registry],
  });

  const shadowOverLimit = new Counter({
    name: 'memgate_envoy_shadow_over_limit_total',
    help: 'Envoy descriptors in shadow_mode or quota_mode that were over their limit and did not refuse the call by themselves: what enforcing them would have refused',
    labelNames: ['event'] as const,
    registers: [registry],
  });

  const settles = new Counter({
    name: 'memgate_reservations_settled_total',
    help: 'Reservations settled (POST /settle), by event',
    labelNames: ['event'] as const,
    registers: [registry],
  });
  const settledCost = new Counter({
    name: 'memgate_reservation_cost_total',
    help: 'Cost of settled reservations, by event: what they reserved, and what they actually cost (which is what stays counted)',
    labelNames: ['event', 'as'] as const,
    registers: [registry],
  });

  const envoySettlesRefused = new Counter({
    name: 'memgate_envoy_settles_refused_total',
    help: 'Envoy stream-done calls whose reservation was not settled (answered OK all the same), by event and code: unknown_reservation, reservation_expired, reservation_settled, store_unavailable, take_back_failed, …',
    labelNames: ['event', 'code'] as const,
    registers: [registry],
  });

  const policyVersion = new Gauge({
    name: 'memgate_policy_version_info',
    help: 'The version of the policies in use (a hash of the policy files), as a label of value 1: every instance on the same files shows the same one',
    labelNames: ['version'] as const,
    registers: [registry],
  });
  const reloadFailures = new Counter({
    name: 'memgate_policy_reload_failures_total',
    help: 'Policy reloads refused because the files did not load (the policies in use stayed), by trigger: watch, signal (SIGHUP) or admin',
    labelNames: ['trigger'] as const,
    registers: [registry],
  });
  // At 0 from the start, so that increase() sees the first failure.
  for (const trigger of ['watch', 'signal', 'admin'] as const) reloadFailures.inc({ trigger }, 0);

  const clockOffset = new Gauge({
    name: 'memgate_clock_offset_seconds',
    help: "A Memcached server's clock minus this host's, as last measured: memgate counts by the server's clock",
    labelNames: ['server'] as const,
    registers: [registry],
  });

  const failovers = new Counter({
    name: 'memgate_memcached_failovers_total',
    help: "Times a Memcached server's clients moved to the next servers on the ring because it stopped answering, by server",
    labelNames: ['server'] as const,
    registers: [registry],
  });
  const failedOver = new Gauge({
    name: 'memgate_memcached_failed_over',
    help: "1 while a Memcached server's clients are counted on other servers (it is down, or settling before they move back), 0 once they are back",
    labelNames: ['server'] as const,
    registers: [registry],
  });
  // Counted as plain numbers and handed over at each scrape, as decisions are: one per check while a server is out.
  const placedAway = new Map<string, { home: string; placed: string; checks: number }>();
  new Counter({
    name: 'memgate_memcached_checks_placed_away_total',
    help: "Calls of checks (a window's increment-and-read rounds, a token bucket's reads) sent to another Memcached server than their key's home, because their home was failed over, by home and the server that took them",
    labelNames: ['home', 'placed'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { home, placed, checks } of placedAway.values()) this.inc({ home, placed }, checks);
    },
  });

  const countsOf = (event: string): OutcomeCounts => {
    let counts = decisionCounts.get(event);
    if (!counts) decisionCounts.set(event, (counts = { check: noOutcomes(), peek: noOutcomes() }));
    return counts;
  };

  let cacheUsage: () => CacheUsage = () => ({ features: 0, bytes: 0 });
  let cacheBudget: number | undefined;
  new Gauge({
    name: 'memgate_local_cache_bytes',
    help: 'Memory the local caches (settled counts, denials) hold by their estimate, within MEMGATE_CACHE_MB',
    registers: [registry],
    collect() {
      this.set(cacheUsage().bytes);
    },
  });
  new Gauge({
    name: 'memgate_local_cache_features',
    help: 'Clients (event and feature) whose settled counts and last denial this instance keeps',
    registers: [registry],
    collect() {
      this.set(cacheUsage().features);
    },
  });
  // Memory beside the budget: prom-client's own nodejs_heap_size_used_bytes is the heap in
  // use, and process_resident_memory_bytes the RSS; these say what bounds them.
  new Gauge({
    name: 'memgate_local_cache_budget_bytes',
    help: 'MEMGATE_CACHE_MB in bytes: what memgate_local_cache_bytes stays within',
    registers: [registry],
    collect() {
      if (cacheBudget !== undefined) this.set(cacheBudget);
    },
  });
  new Gauge({
    name: 'memgate_heap_limit_bytes',
    help: "V8's heap limit of the process serving requests (old and young generations): set from MEMGATE_CACHE_MB unless --max-old-space-size gave one; compare nodejs_heap_size_used_bytes",
    registers: [registry],
    collect() {
      this.set(getHeapStatistics().heap_size_limit);
    },
  });

  return {
    policies: {
      loaded(version) {
        policyVersion.reset();
        policyVersion.set({ version }, 1);
      },
      reloadFailed(trigger) {
        reloadFailures.inc({ trigger });
      },
    },
    watchCache(usage, budgetBytes) {
      cacheUsage = usage;
      cacheBudget = budgetBytes;
    },
    usage: {
      flushFailed: () => {
        usageCounts.flushFailures++;
      },
      dropped: (rows) => {
        usageCounts.droppedRows += rows;
      },
    },
    watchUsagePending(rows) {
      usagePending = rows;
    },
    onClockOffset(server, offsetMs) {
      clockOffset.set({ server }, offsetMs / 1000);
    },
    onUndo(count) {
      undone.inc(count);
    },
    onPlacementChange(change) {
      if (change.kind === 'left') {
        failovers.inc({ server: change.server });
        failedOver.set({ server: change.server }, 1);
      } else if (change.kind === 'returned') failedOver.set({ server: change.server }, 0);
    },
    knowServers(servers) {
      for (const server of servers) {
        failovers.inc({ server }, 0);
        failedOver.set({ server }, 0);
      }
    },
    onPlacedAway(home, placed) {
      const pair = `${home} ${placed}`;
      const counted = placedAway.get(pair);
      if (counted) counted.checks++;
      else placedAway.set(pair, { home, placed, checks: 1 });
    },
    onSettle({ event, reserved, cost }) {
      settles.inc({ event });
      settledCost.inc({ event, as: 'reserved' }, reserved);
      settledCost.inc({ event, as: 'actual' }, cost);
    },
    onEnvoySettleRefused({ event, code }) {
      envoySettlesRefused.inc({ event: event ?? '', code });
    },
    onShadowOverLimit(event) {
      shadowOverLimit.inc({ event });
    },
    onDecision({ event, kind, decision, fromDeniedCache, keysRead: keys, settledMiss }) {
      const outcome = decision.degraded
        ? decision.allowed
          ? 'degraded_allowed'
          : 'degraded_denied'
        : !decision.allowed
          ? 'denied'
          : decision.shadowDenied
            ? 'shadow_denied'
            : 'allowed';
      countsOf(event)[kind][outcome]++;
      if (fromDeniedCache) {
        cacheCounts.denialHit++;
        return;
      }
      if (settledMiss) cacheCounts.settledMiss++;
      else cacheCounts.settledHit++;
      keysRead.observe(keys);
    },
    onOperation(operation, seconds, outcome) {
      let outcomes = operationCounts.get(operation);
      if (!outcomes) operationCounts.set(operation, (outcomes = { ok: 0, unavailable: 0, overloaded: 0 }));
      outcomes[outcome]++;
      latency.observe(seconds, operation);
    },
    register(app) {
      app.get('/metrics', { schema: metricsRoute }, async (_request, reply) => {
        return reply.type(registry.contentType).send(await registry.metrics());
      });
    },
  };
}
