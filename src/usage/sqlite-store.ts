import { DEFAULTS } from '../config/defaults.js';
import type { Archive } from '../config/retention.js';
import { SliceLane } from './slice-lane.js';
import { walCheckpoints } from './sqlite-checkpoints.js';
import { immediately, sqliteMaintenance } from './sqlite-maintenance.js';
import { sqliteReads } from './sqlite-reads.js';
import { openUsageDatabase } from './sqlite-schema.js';
import { TOP_DAY_RESOLUTION, type EventRange, type UsageBatch, type UsageStore } from './usage-store.js';

export interface SqliteUsageOptions {
  /** The file; `:memory:` for a database that lives with the process. */
  readonly path: string;
  readonly archives: readonly Archive[];
  /** MEMGATE_USAGE_TOP: the clients of a coarse period that keep their points once it has ended. */
  readonly top?: number;
  /** Seconds since the epoch, for pruning. Default the system clock. */
  readonly nowSeconds?: () => number;
  /** Rows one /usage or /usage/top query may read before it is refused. Default QUERY_ROW_BUDGET. */
  readonly queryRowBudget?: number;
  /**
   * How long pruning and compaction wait, in ms, before each new try when another connection
   * holds the file's lock (SQLITE_BUSY, SQLITE_LOCKED); after the last, they stop and report
   * it. Default MAINTENANCE_RETRY_MS.
   */
  readonly maintenanceRetryMs?: readonly number[];
}

export interface SqliteUsageStore extends UsageStore {
  /**
   * Resolves once every write, query, pruning and compaction started so far has ended, a
   * pruning or compaction that met a lock once it has tried again. Rejects with what stopped
   * a pruning or compaction for good (the next write reports it too), once: the idle() after
   * resolves.
   */
  idle(): Promise<void>;
  /** The longest the event loop has waited for the file in one turn, in ms. */
  readonly longestSliceMs: number;
}

/** How often points past their archive's retention are deleted, at most. */
const PRUNE_EVERY_SECONDS = 60;

/** The clients' daily sums, for /usage/top over many days (TOP_DAY_SECONDS in usage-store.ts). */
const TOP_DAY_SECONDS = TOP_DAY_RESOLUTION;

/** How long after a period has ended its clients are compacted: batches for it may still come. */
const COMPACT_AFTER_SECONDS = 600;

/** A batch is only written again while the recorder keeps it; a day is far beyond that. */
const KEEP_BATCHES_SECONDS = 86_400;

/**
 * The waits, in ms, before pruning and compaction try again when another connection holds the
 * file's lock (a moment of the checkpoints' worker, another process on the file): about 15 s
 * in all, a flush's period. A lock held longer stops them until the next write that is due
 * to prune (a minute on), and that write reports it.
 */
const MAINTENANCE_RETRY_MS: readonly number[] = [10, 50, 250, 1000, 2000, 4000, 8000];

/** SQLite's default wal_autocheckpoint, should the checkpoints' worker stop. */
const AUTOCHECKPOINT_PAGES = 1000;

/** How long the file may hold the event loop in one turn, in ms: /check answers between slices. */
const SLICE_MS = 5;

/** Rows one statement reads or deletes at most: 64 clients of 1 KB names (each spilling to an overflow page) take 2-4 ms. */
const CHUNK_ROWS = 64;

/**
 * Rows one query may read: a day of minutes with 40 clients in every one (MEMGATE_USAGE_TOP's
 * 20 allowed and 20 denied) is 57,600; a query over more is refused, not run for seconds.
 */
export const QUERY_ROW_BUDGET = 200_000;

/**
 * Usage history in one SQLite file (libsql's driver, whose binary comes from the npm
 * registry). Two tables: an event's points, and its heaviest clients' points, each with
 * every archive's resolution in it. A batch adds its counts to each archive's point in one
 * transaction (the rollup is done at write time, so a coarse point is always the sum of its
 * fine ones), and records the batch, so a batch written again adds nothing. One process
 * writes a file.
 *
 * Clients are named by whoever calls /check, so what they cost on disk is bounded: once a
 * period of a coarse client archive (an hour, by default) has ended, only the clients among
 * its `top` heaviest, allowed or denied, keep their points in it and in the finer archives.
 *
 * The driver is synchronous, and a file may hold years: every statement but a batch's
 * writes reads a bounded number of rows, and queries, pruning and compaction are cut into
 * slices that take turns with the rest of the process (slice-lane.ts).
 */
export function openSqliteUsage({
  path,
  archives,
  top = DEFAULTS.usageTop,
  nowSeconds = () => Date.now() / 1000,
  queryRowBudget = QUERY_ROW_BUDGET,
  maintenanceRetryMs = MAINTENANCE_RETRY_MS,
}: SqliteUsageOptions): SqliteUsageStore {
  const db = openUsageDatabase(path);
  const add = db.prepare(`
    INSERT INTO usage_points (resolution, event, t, allowed, denied, degraded, shadow_denied, settled, settled_cost)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (resolution, event, t) DO UPDATE SET
      allowed = allowed + excluded.allowed, denied = denied + excluded.denied, degraded = degraded + excluded.degraded,
      shadow_denied = shadow_denied + excluded.shadow_denied,
      settled = settled + excluded.settled, settled_cost = settled_cost + excluded.settled_cost`);
  const addClient = db.prepare(`
    INSERT INTO usage_clients (resolution, event, t, feature, allowed, denied) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (resolution, event, t, feature) DO UPDATE SET
      allowed = allowed + excluded.allowed, denied = denied + excluded.denied`);
  // Each point holds the sum of its client rows, kept as they are added and dropped.
  const addNamed = db.prepare(`
    INSERT INTO usage_points (resolution, event, t, allowed, denied, degraded, named_allowed, named_denied)
    VALUES (?, ?, ?, 0, 0, 0, ?, ?)
    ON CONFLICT (resolution, event, t) DO UPDATE SET
      named_allowed = named_allowed + excluded.named_allowed, named_denied = named_denied + excluded.named_denied`);
  const markBatch = db.prepare('INSERT OR IGNORE INTO usage_batches (instance, sequence, written) VALUES (?, ?, ?)');
  const seeEvent = db.prepare(`
    INSERT INTO usage_events (event, first, last) VALUES (?, ?, ?)
    ON CONFLICT (event) DO UPDATE SET first = min(first, excluded.first), last = max(last, excluded.last)`);
  const listEvents = db.prepare('SELECT event, first, last FROM usage_events ORDER BY event');
  const coarsest = archives.at(-1);
  // Clients are also summed per day, kept as long as the coarsest archive: what /usage/top
  // reads for a range of many days, so that a year is 365 periods to sum, not 8,760.
  const days =
    coarsest && coarsest.resolution < TOP_DAY_SECONDS && TOP_DAY_SECONDS % coarsest.resolution === 0
      ? [{ resolution: TOP_DAY_SECONDS, keepSeconds: coarsest.keepSeconds }]
      : [];
  const clientArchives = [...archives.filter(({ resolution }) => resolution % 60 === 0), ...days];
  /** The archives with points, where a client archive's sums are kept too (not the days of /usage/top). */
  const pointResolutions = new Set(archives.map(({ resolution }) => resolution));
  // Compacting a period drops its light clients from it and the finer archives; a day, only
  // from itself (an hour's heaviest keep their curve).
  const compacting = clientArchives
    .filter(({ resolution }) => resolution > 60)
    .map(({ resolution }) => ({ resolution, finest: resolution === TOP_DAY_SECONDS ? resolution : 60 }));
  /** What stopped the last pruning or checkpoint: the next write reports it, and the recorder keeps its batch. */
  let failed: unknown;
  /** What stopped the last pruning or compaction for good, until idle() reports it. */
  let maintenanceFailed: unknown;
  // Checkpoints off the event loop, for a file; one in memory has no WAL.
  const checkpoints =
    path === ':memory:'
      ? undefined
      : walCheckpoints(path, {
          onError: (error) => {
            failed ??= error;
          },
          onStopped: (error) => {
            failed ??= error;
            db.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
          },
        });
  if (checkpoints) db.exec('PRAGMA wal_autocheckpoint = 0');
  const lane = new SliceLane({ sliceMs: SLICE_MS, afterChange: () => checkpoints?.soon() });
  const reads = sqliteReads(db, { chunkRows: CHUNK_ROWS, rowBudget: queryRowBudget });
  const maintain = sqliteMaintenance(db, {
    archives,
    clientArchives,
    compacting,
    top,
    compactAfterSeconds: COMPACT_AFTER_SECONDS,
    keepBatchesSeconds: KEEP_BATCHES_SECONDS,
    chunkRows: CHUNK_ROWS,
  });

  // The write lock taken first, as every write of maintenance (sqlite-maintenance.ts): a lock
  // another connection holds fails the BEGIN, and leaves no statement in progress.
  const writeBatch = immediately(db, (batch: UsageBatch, now: number) => {
    if (markBatch.run(batch.instance, batch.sequence, now).changes === 0) return;
    const spans = new Map<string, { first: number; last: number }>();
    for (const row of batch.seconds) {
      for (const { resolution } of archives) {
        const t = row.t - (row.t % resolution);
        add.run(
          resolution,
          row.event,
          t,
          row.allowed,
          row.denied,
          row.degraded,
          row.shadow_denied ?? 0,
          row.settled ?? 0,
          row.settled_cost ?? 0,
        );
      }
      const span = spans.get(row.event);
      spans.set(row.event, {
        first: Math.min(span?.first ?? row.t, row.t),
        last: Math.max(span?.last ?? row.t, row.t),
      });
    }
    for (const minute of batch.minutes) {
      const named = (list: readonly { count: number }[]) => list.reduce((sum, { count }) => sum + count, 0);
      for (const { resolution } of clientArchives) {
        const t = minute.t - (minute.t % resolution);
        for (const { feature, count } of minute.allowed) addClient.run(resolution, minute.event, t, feature, count, 0);
        for (const { feature, count } of minute.denied) addClient.run(resolution, minute.event, t, feature, 0, count);
        if (pointResolutions.has(resolution)) {
          addNamed.run(resolution, minute.event, t, named(minute.allowed), named(minute.denied));
        }
      }
    }
    for (const [event, { first, last }] of spans) seeEvent.run(event, first, last);
  });

  let prunedAt = 0;
  let closed = false;
  /** The pruning and compaction under way (waits to try again included), and whether a write asked for another since it began. */
  const maintenance: { running: Promise<void> | undefined; again: boolean } = { running: undefined, again: false };
  /** Ends the wait before pruning and compaction try again: close() does not sit through it. */
  let wake: (() => void) | undefined;
  function pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = done;
    });
  }
  function maintainSoon(): void {
    if (maintenance.running) {
      maintenance.again = true;
      return;
    }
    maintenance.running = (async () => {
      let tries = 0;
      for (;;) {
        try {
          // Each try prunes from the start (what went is gone: a seek an event) and compacts from the mark.
          await lane.background(maintain(Math.floor(nowSeconds())));
          tries = 0;
          maintenanceFailed = undefined;
        } catch (error) {
          const wait = lockHeld(error) && !closed ? maintenanceRetryMs[tries] : undefined;
          if (wait === undefined) {
            tries = 0;
            failed = error;
            maintenanceFailed = error;
          } else {
            tries++;
            await pause(wait);
            maintenance.again = true;
          }
        }
        if (!maintenance.again || closed) break;
        maintenance.again = false;
      }
      maintenance.running = undefined;
    })();
  }

  /** Resolves once nothing is under way: no write, query, pruning, compaction or checkpoint. */
  async function settled(): Promise<void> {
    for (;;) {
      await lane.idle();
      if (!maintenance.running) break;
      await maintenance.running;
    }
    await checkpoints?.idle();
  }

  async function idle(): Promise<void> {
    await settled();
    if (maintenanceFailed === undefined) return;
    const error = maintenanceFailed;
    maintenanceFailed = undefined;
    throw error instanceof Error ? error : new Error('pruning the usage history failed', { cause: error });
  }

  return {
    kind: 'sqlite',
    write: (batch) =>
      lane.write(() => {
        if (failed !== undefined) {
          const error = failed;
          failed = undefined;
          throw error instanceof Error ? error : new Error('pruning the usage history failed', { cause: error });
        }
        const now = Math.floor(nowSeconds());
        writeBatch(batch, now);
        if (now - prunedAt >= PRUNE_EVERY_SECONDS) {
          prunedAt = now;
          maintainSoon();
        }
      }),
    series: (query) => lane.read(reads.series(query)),
    top: (query) => lane.read(reads.top(query)),
    // One statement over a row per event: no slicing needed.
    events: () =>
      settle(() =>
        (listEvents.all() as { event: string; first: number; last: number }[]).map(
          ({ event, first, last }): EventRange => ({ event, from: first, until: last + 1 }),
        ),
      ),
    idle,
    get longestSliceMs() {
      return lane.longestSliceMs;
    },
    async close() {
      // Compaction goes on from its mark at the next start; what is queued is written. What
      // stopped it was the next write's to report: close() ends the file all the same.
      closed = true;
      wake?.();
      lane.stopBackground();
      await settled();
      db.close();
      await checkpoints?.close();
    },
  };
}

/** SQLITE_BUSY or SQLITE_LOCKED (or one of their extended codes): another connection holds what the step needs. */
function lockHeld(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(code);
}

/** A synchronous call's result, or its error, as a promise. */
function settle<T>(call: () => T): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
