/**
 * What keeps the SQLite file's size bounded, as a background job for the slice lane:
 * points past their archive's retention go, batches past a day go, and each ended period
 * of a coarse client archive keeps only its heaviest clients. Every statement names a
 * resolution and an event, so the primary key narrows it to its own rows, and reads or
 * deletes at most `chunkRows` of them; the job yields after each, and remembers how far
 * compaction has gone in the file, so a restart goes on from there.
 *
 * Each write is a transaction that takes the file's write lock before any statement runs
 * (`immediately`): a lock another connection holds fails the step at its BEGIN, with nothing
 * half run, and the job can be run again later from where it stopped.
 */
import type Database from 'libsql';
import { Heaviest } from './heaviest.js';
import type { Job } from './slice-lane.js';

export interface MaintenancePlan {
  /** Every archive of points, with its retention. */
  readonly archives: readonly { resolution: number; keepSeconds: number }[];
  /** The archives of clients, with theirs. */
  readonly clientArchives: readonly { resolution: number; keepSeconds: number }[];
  /** The client archives compacted once a period has ended, and the finest archive each compacts with it. */
  readonly compacting: readonly { resolution: number; finest: number }[];
  /** MEMGATE_USAGE_TOP: the clients of a period kept, by allowed and by denied. */
  readonly top: number;
  /** How long after a period has ended it is compacted: batches for it may still come. */
  readonly compactAfterSeconds: number;
  /** How long a batch's record is kept, against its being written twice. */
  readonly keepBatchesSeconds: number;
  /** Rows a step reads or deletes at most. */
  readonly chunkRows: number;
}

export type Maintenance = (now: number) => Job<void>;

/**
 * `write` as a transaction that takes the write lock first (BEGIN IMMEDIATE). In a deferred
 * one (or none), the first statement that writes takes the lock; if another connection holds
 * it, libsql leaves that statement in progress (SQLite lets SQLITE_BUSY be stepped again),
 * and SQLite then refuses every COMMIT of the connection ("cannot commit transaction - SQL
 * statements in progress") until the statement runs again: one busy moment stopped every
 * later write. A BEGIN that meets the lock leaves nothing behind.
 */
export function immediately<A extends unknown[], R>(
  db: Database.Database,
  write: (...args: A) => R,
): (...args: A) => R {
  const transaction = db.transaction(write);
  return (...args) => transaction.immediate(...args);
}

/** One statement run as a transaction of its own that takes the write lock first (see immediately). */
// P is the statement's parameters as the caller names them: the SQL text cannot say.
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
function immediateStatement<P extends unknown[]>(
  db: Database.Database,
  sql: string,
): (...params: P) => Database.RunResult {
  const statement = db.prepare<P>(sql);
  return immediately(db, (...params: P) => statement.run(...params));
}

interface ClientKey {
  readonly t: number;
  readonly feature: string;
  readonly allowed: number;
  readonly denied: number;
}

export function sqliteMaintenance(db: Database.Database, plan: MaintenancePlan): Maintenance {
  const { chunkRows } = plan;
  // The distinct values of a key's leading columns, one index seek each (SQLite has no skip scan here).
  const nextResolution = db.prepare(
    'SELECT resolution FROM usage_clients WHERE resolution > ? ORDER BY resolution LIMIT 1',
  );
  const nextPointEvent = db.prepare(
    'SELECT event FROM usage_points WHERE resolution = ? AND event > ? ORDER BY event LIMIT 1',
  );
  const nextClientEvent = db.prepare(
    'SELECT event FROM usage_clients WHERE resolution = ? AND event > ? ORDER BY event LIMIT 1',
  );
  const oldPoints = db.prepare(
    'SELECT t FROM usage_points WHERE resolution = ? AND event = ? AND t < ? ORDER BY t LIMIT ?',
  );
  const deletePointsTo = immediateStatement<[resolution: number, event: string, last: number]>(
    db,
    'DELETE FROM usage_points WHERE resolution = ? AND event = ? AND t <= ?',
  );
  const oldClients = db.prepare(`
    SELECT t, feature, allowed, denied FROM usage_clients
    WHERE resolution = ? AND event = ? AND t < ? ORDER BY t, feature LIMIT ?`);
  const deleteClient = db.prepare(
    'DELETE FROM usage_clients WHERE resolution = ? AND event = ? AND t = ? AND feature = ?',
  );
  // A point's sums of its clients follow the rows dropped (sqlite-schema.ts); never below 0,
  // where a file from before schema 2 drops rows its points never summed.
  const unname = db.prepare(`
    UPDATE usage_points SET named_allowed = max(0, named_allowed - ?), named_denied = max(0, named_denied - ?)
    WHERE resolution = ? AND event = ? AND t = ?`);
  const pruneBatches = immediateStatement<[before: number, limit: number]>(
    db,
    `DELETE FROM usage_batches WHERE (instance, sequence) IN (
      SELECT instance, sequence FROM usage_batches WHERE written < ? ORDER BY written LIMIT ?)`,
  );
  const compactedUntil = db.prepare('SELECT until FROM usage_compacted WHERE resolution = ?');
  const setCompacted = immediateStatement<[resolution: number, until: number]>(
    db,
    'INSERT OR REPLACE INTO usage_compacted (resolution, until) VALUES (?, ?)',
  );
  const nextPeriod = db.prepare(
    'SELECT t FROM usage_clients WHERE resolution = ? AND event = ? AND t >= ? ORDER BY t LIMIT 1',
  );
  const periodFrom = db.prepare(`
    SELECT feature, allowed, denied FROM usage_clients
    WHERE resolution = ? AND event = ? AND t = ? AND feature >= ? ORDER BY feature LIMIT ?`);
  const periodAfter = db.prepare(`
    SELECT feature, allowed, denied FROM usage_clients
    WHERE resolution = ? AND event = ? AND t = ? AND feature > ? ORDER BY feature LIMIT ?`);
  // Without `t >= ?` after the first step, so that SQLite seeks on all four key columns.
  const rangeFrom = db.prepare(`
    SELECT t, feature, allowed, denied FROM usage_clients
    WHERE resolution = ? AND event = ? AND t >= ? AND t < ? ORDER BY t, feature LIMIT ?`);
  const rangeAfter = db.prepare(`
    SELECT t, feature, allowed, denied FROM usage_clients
    WHERE resolution = ? AND event = ? AND (t, feature) > (?, ?) AND t < ? ORDER BY t, feature LIMIT ?`);

  const deleteClients = immediately(db, (resolution: number, event: string, keys: readonly ClientKey[]) => {
    // One update per point, not per row: a chunk's rows share a few points.
    const dropped = new Map<number, { allowed: number; denied: number }>();
    for (const { t, feature, allowed, denied } of keys) {
      deleteClient.run(resolution, event, t, feature);
      const sums = dropped.get(t);
      if (sums) {
        sums.allowed += allowed;
        sums.denied += denied;
      } else dropped.set(t, { allowed, denied });
    }
    for (const [t, { allowed, denied }] of dropped) unname.run(allowed, denied, resolution, event, t);
  });

  /**
   * The distinct values of `column` a seek statement walks through, from the smallest,
   * `chunkRows` seeks a step: events are as many as the policies name.
   */
  function* distinct<T extends string | number>(
    next: Database.Statement,
    column: string,
    first: T,
    ...before: unknown[]
  ): Job<T[]> {
    const found: T[] = [];
    for (let row = next.get(...before, first) as Record<string, T> | undefined; row;) {
      const value = row[column] as T;
      found.push(value);
      if (found.length % chunkRows === 0) yield;
      row = next.get(...before, value) as Record<string, T> | undefined;
    }
    return found;
  }

  function* prunePoints(resolution: number, event: string, before: number): Job<void> {
    for (;;) {
      const rows = oldPoints.all(resolution, event, before, chunkRows) as { t: number }[];
      const last = rows.at(-1);
      if (!last) return;
      deletePointsTo(resolution, event, last.t);
      if (rows.length < chunkRows) return;
      yield;
    }
  }

  function* pruneClients(resolution: number, event: string, before: number): Job<void> {
    for (;;) {
      const rows = oldClients.all(resolution, event, before, chunkRows) as ClientKey[];
      if (rows.length === 0) return;
      deleteClients(resolution, event, rows);
      if (rows.length < chunkRows) return;
      yield;
    }
  }

  /** The clients a period keeps: its `top` heaviest allowed and its `top` heaviest denied. */
  function* keepOf(resolution: number, event: string, t: number): Job<Set<string>> {
    const allowed = new Heaviest(plan.top);
    const denied = new Heaviest(plan.top);
    let after: string | undefined;
    for (;;) {
      const rows = (
        after === undefined
          ? periodFrom.all(resolution, event, t, '', chunkRows)
          : periodAfter.all(resolution, event, t, after, chunkRows)
      ) as { feature: string; allowed: number; denied: number }[];
      for (const row of rows) {
        allowed.offer(row.feature, row.allowed);
        denied.offer(row.feature, row.denied);
      }
      after = rows.at(-1)?.feature;
      if (after === undefined || rows.length < chunkRows) break;
      yield;
    }
    return new Set([...allowed.list(), ...denied.list()].map(({ feature }) => feature));
  }

  /** Deletes the rows of `resolution` from `from` to before `until` of the clients not kept. */
  function* dropOthers(resolution: number, event: string, from: number, until: number, keep: Set<string>): Job<void> {
    let last: ClientKey | undefined;
    for (;;) {
      const rows = (
        last === undefined
          ? rangeFrom.all(resolution, event, from, until, chunkRows)
          : rangeAfter.all(resolution, event, last.t, last.feature, until, chunkRows)
      ) as ClientKey[];
      const others = rows.filter(({ feature }) => !keep.has(feature));
      // Nothing to drop: no transaction, nor the write lock it would take.
      if (others.length > 0) deleteClients(resolution, event, others);
      last = rows.at(-1);
      if (!last || rows.length < chunkRows) return;
      yield;
    }
  }

  /**
   * Compacts every period of `resolution` that has ended, from where the last compaction
   * stopped (never compacted: from the oldest period held), period by period.
   */
  function* compact(resolution: number, finest: number, now: number, resolutions: readonly number[]): Job<void> {
    const ended = now - plan.compactAfterSeconds - ((now - plan.compactAfterSeconds) % resolution);
    const marked = (compactedUntil.get(resolution) as { until: number } | undefined)?.until;
    const events = yield* distinct<string>(nextClientEvent, 'event', '', resolution);
    const periodOf = (event: string, from: number) =>
      (nextPeriod.get(resolution, event, from) as { t: number } | undefined)?.t;
    const next = new Map<string, number | undefined>();
    for (const event of events) {
      next.set(event, periodOf(event, marked ?? Number.MIN_SAFE_INTEGER));
      if (next.size % chunkRows === 0) yield;
    }
    // None held and none marked: nothing to mark yet (a file filled with history before its
    // first compaction is compacted from its start).
    if (marked === undefined && [...next.values()].every((t) => t === undefined)) return;
    const finer = resolutions.filter((r) => r >= finest && r <= resolution);
    for (;;) {
      const period = Math.min(...[...next.values()].filter((t) => t !== undefined));
      if (!Number.isFinite(period) || period >= ended) break;
      for (const [event, t] of next) {
        if (t !== period) continue;
        const keep = yield* keepOf(resolution, event, period);
        // The period's own rows last: a job stopped half way finds the same clients to keep.
        for (const r of finer) yield* dropOthers(r, event, period, period + resolution, keep);
        next.set(event, periodOf(event, period + resolution));
        yield;
      }
      setCompacted(resolution, period + resolution);
    }
    setCompacted(resolution, ended);
  }

  return function* maintain(now) {
    for (const { resolution, keepSeconds } of plan.archives) {
      for (const event of yield* distinct<string>(nextPointEvent, 'event', '', resolution)) {
        yield* prunePoints(resolution, event, now - keepSeconds);
        yield;
      }
    }
    for (const { resolution, keepSeconds } of plan.clientArchives) {
      for (const event of yield* distinct<string>(nextClientEvent, 'event', '', resolution)) {
        yield* pruneClients(resolution, event, now - keepSeconds);
        yield;
      }
    }
    // A batch is only written again while the recorder keeps it; a day is far beyond that.
    while (pruneBatches(now - plan.keepBatchesSeconds, chunkRows).changes >= chunkRows) yield;
    // Every resolution held, not only today's archives: a period compacts them all from `finest` up.
    const resolutions = yield* distinct<number>(nextResolution, 'resolution', Number.MIN_SAFE_INTEGER);
    for (const { resolution, finest } of plan.compacting) yield* compact(resolution, finest, now, resolutions);
  };
}
