import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'libsql';
import { DEFAULTS } from '../config/defaults.js';
import type { Archive } from '../config/retention.js';
import {
  TOP_DAY_RESOLUTION,
  type ClientCount,
  type EventRange,
  type SeriesPoint,
  type SeriesQuery,
  type TopClients,
  type TopQuery,
  type UsageBatch,
  type UsageStore,
} from './usage-store.js';

export interface SqliteUsageOptions {
  /** The file; `:memory:` for a database that lives with the process. */
  readonly path: string;
  readonly archives: readonly Archive[];
  /** MEMGATE_USAGE_TOP: the clients of a coarse period that keep their points once it has ended. */
  readonly top?: number;
  /** Seconds since the epoch, for pruning. Default the system clock. */
  readonly nowSeconds?: () => number;
}

/** How often points past their archive's retention are deleted, at most. */
const PRUNE_EVERY_SECONDS = 60;

/** The clients' daily sums, for /usage/top over many days (TOP_DAY_SECONDS in usage-store.ts). */
const TOP_DAY_SECONDS = TOP_DAY_RESOLUTION;

/** How long after a period has ended its clients are compacted: batches for it may still come. */
const COMPACT_AFTER_SECONDS = 600;

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
 */
export function openSqliteUsage({
  path,
  archives,
  top = DEFAULTS.usageTop,
  nowSeconds = () => Date.now() / 1000,
}: SqliteUsageOptions): UsageStore {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // WAL: a reader never waits for the flush; NORMAL: a crash may lose the last flush, never corrupt.
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec(`
    CREATE TABLE IF NOT EXISTS usage_points (
      resolution INTEGER NOT NULL,
      event TEXT NOT NULL,
      t INTEGER NOT NULL,
      allowed INTEGER NOT NULL,
      denied INTEGER NOT NULL,
      degraded INTEGER NOT NULL,
      PRIMARY KEY (resolution, event, t)
    ) WITHOUT ROWID;
    -- In time order, so a range (top, compaction) reads only its own rows; a client's curve by the index.
    CREATE TABLE IF NOT EXISTS usage_clients (
      resolution INTEGER NOT NULL,
      event TEXT NOT NULL,
      t INTEGER NOT NULL,
      feature TEXT NOT NULL,
      allowed INTEGER NOT NULL,
      denied INTEGER NOT NULL,
      PRIMARY KEY (resolution, event, t, feature)
    ) WITHOUT ROWID;
    -- Covering: a client's curve reads the index alone.
    CREATE INDEX IF NOT EXISTS usage_clients_by_feature ON usage_clients (resolution, event, feature, t, allowed, denied);
    CREATE TABLE IF NOT EXISTS usage_batches (
      instance TEXT NOT NULL,
      sequence INTEGER NOT NULL,
      written INTEGER NOT NULL,
      PRIMARY KEY (instance, sequence)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS usage_events (
      event TEXT PRIMARY KEY,
      first INTEGER NOT NULL,
      last INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS usage_compacted (
      resolution INTEGER PRIMARY KEY,
      until INTEGER NOT NULL
    ) WITHOUT ROWID;
  `);
  const add = db.prepare(`
    INSERT INTO usage_points (resolution, event, t, allowed, denied, degraded) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (resolution, event, t) DO UPDATE SET
      allowed = allowed + excluded.allowed, denied = denied + excluded.denied, degraded = degraded + excluded.degraded`);
  const addClient = db.prepare(`
    INSERT INTO usage_clients (resolution, event, t, feature, allowed, denied) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (resolution, event, t, feature) DO UPDATE SET
      allowed = allowed + excluded.allowed, denied = denied + excluded.denied`);
  const markBatch = db.prepare('INSERT OR IGNORE INTO usage_batches (instance, sequence, written) VALUES (?, ?, ?)');
  const seeEvent = db.prepare(`
    INSERT INTO usage_events (event, first, last) VALUES (?, ?, ?)
    ON CONFLICT (event) DO UPDATE SET first = min(first, excluded.first), last = max(last, excluded.last)`);
  const points = db.prepare(`
    SELECT t - t % ? AS t, sum(allowed) AS allowed, sum(denied) AS denied, sum(degraded) AS degraded FROM usage_points
    WHERE resolution = ? AND event = ? AND t >= ? AND t < ? GROUP BY 1`);
  const clientPoints = db.prepare(`
    SELECT t - t % ? AS t, sum(allowed) AS allowed, sum(denied) AS denied, 0 AS degraded FROM usage_clients
    WHERE resolution = ? AND event = ? AND feature = ? AND t >= ? AND t < ? GROUP BY 1`);
  // The heaviest of an outcome, with the clients the caller names (a JSON list) whatever their rank.
  const heaviest = (outcome: 'allowed' | 'denied') =>
    db.prepare(`
      SELECT feature, count FROM (
        SELECT feature, sum(${outcome}) AS count FROM usage_clients
        WHERE resolution = :resolution AND event = :event AND t >= :from AND t < :until
        GROUP BY feature HAVING count > 0 ORDER BY count DESC, feature LIMIT :limit)
      UNION
      SELECT feature, sum(${outcome}) AS count FROM usage_clients
      WHERE resolution = :resolution AND event = :event AND t >= :from AND t < :until
        AND feature IN (SELECT value FROM json_each(:include))
      GROUP BY feature HAVING count > 0`);
  const heaviestBy = { allowed: heaviest('allowed'), denied: heaviest('denied') };
  const listEvents = db.prepare('SELECT event, first, last FROM usage_events ORDER BY event');
  // Per event: the key's order (resolution, event, t) makes each a range, not a scan.
  const prunePoints = db.prepare('DELETE FROM usage_points WHERE resolution = ? AND event = ? AND t < ?');
  const pruneClients = db.prepare('DELETE FROM usage_clients WHERE resolution = ? AND event = ? AND t < ?');
  const allEvents = db.prepare('SELECT event FROM usage_events');
  const pruneBatches = db.prepare('DELETE FROM usage_batches WHERE written < ?');
  // Rows as objects: libsql's statements have pluck(), but it plucks nothing.
  const compactedUntil = db.prepare('SELECT until FROM usage_compacted WHERE resolution = ?');
  const oldestClient = db.prepare('SELECT min(t) AS t FROM usage_clients WHERE resolution = ?');
  const setCompacted = db.prepare('INSERT OR REPLACE INTO usage_compacted (resolution, until) VALUES (?, ?)');
  const periodEvents = db.prepare('SELECT DISTINCT event FROM usage_clients WHERE resolution = ? AND t = ?');
  // The clients of a period that are not among its heaviest, allowed or denied: their rows
  // go from that period's archive and every finer client archive.
  const compactPeriod = db.prepare(`
    DELETE FROM usage_clients
    WHERE resolution >= :finest AND resolution <= :resolution AND event = :event AND t >= :from AND t < :until
      AND feature NOT IN (
        SELECT feature FROM usage_clients WHERE resolution = :resolution AND event = :event AND t = :from
        ORDER BY allowed DESC, feature LIMIT :top)
      AND feature NOT IN (
        SELECT feature FROM usage_clients WHERE resolution = :resolution AND event = :event AND t = :from
        ORDER BY denied DESC, feature LIMIT :top)`);
  const coarsest = archives.at(-1);
  // Clients are also summed per day, kept as long as the coarsest archive: what /usage/top
  // reads for a range of many days, so that a year is 365 periods to sum, not 8,760.
  const days =
    coarsest && coarsest.resolution < TOP_DAY_SECONDS && TOP_DAY_SECONDS % coarsest.resolution === 0
      ? [{ resolution: TOP_DAY_SECONDS, keepSeconds: coarsest.keepSeconds }]
      : [];
  const clientArchives = [...archives.filter(({ resolution }) => resolution % 60 === 0), ...days];
  // Compacting a period drops its light clients from it and the finer archives; a day, only
  // from itself (an hour's heaviest keep their curve).
  const compacting = clientArchives
    .filter(({ resolution }) => resolution > 60)
    .map(({ resolution }) => ({ resolution, finest: resolution === TOP_DAY_SECONDS ? resolution : 60 }));
  let prunedAt = 0;

  const writeBatch = db.transaction((batch: UsageBatch, now: number) => {
    if (markBatch.run(batch.instance, batch.sequence, now).changes === 0) return;
    const spans = new Map<string, { first: number; last: number }>();
    for (const row of batch.seconds) {
      for (const { resolution } of archives) {
        add.run(resolution, row.event, row.t - (row.t % resolution), row.allowed, row.denied, row.degraded);
      }
      const span = spans.get(row.event);
      spans.set(row.event, {
        first: Math.min(span?.first ?? row.t, row.t),
        last: Math.max(span?.last ?? row.t, row.t),
      });
    }
    for (const minute of batch.minutes) {
      for (const { resolution } of clientArchives) {
        const t = minute.t - (minute.t % resolution);
        for (const { feature, count } of minute.allowed) addClient.run(resolution, minute.event, t, feature, count, 0);
        for (const { feature, count } of minute.denied) addClient.run(resolution, minute.event, t, feature, 0, count);
      }
    }
    for (const [event, { first, last }] of spans) seeEvent.run(event, first, last);
  });

  const prune = db.transaction((now: number) => {
    const events = (allEvents.all() as { event: string }[]).map(({ event }) => event);
    for (const { resolution, keepSeconds } of archives) {
      for (const event of events) prunePoints.run(resolution, event, now - keepSeconds);
    }
    for (const { resolution, keepSeconds } of clientArchives) {
      for (const event of events) pruneClients.run(resolution, event, now - keepSeconds);
    }
    // A batch is only written again while the recorder keeps it; a day is far beyond that.
    pruneBatches.run(now - 86_400);
    // A period is compacted once batches for it have stopped coming: a grace after its end.
    for (const { resolution, finest } of compacting) {
      const ended = now - COMPACT_AFTER_SECONDS - ((now - COMPACT_AFTER_SECONDS) % resolution);
      // Never compacted: from the oldest period held; none held, nothing to mark yet (a file
      // filled with history before its first compaction is compacted from its start).
      const done =
        (compactedUntil.get(resolution) as { until: number } | undefined)?.until ??
        (oldestClient.get(resolution) as { t: number | null }).t;
      if (done === null) continue;
      for (let from = done; from < ended; from += resolution) {
        for (const { event } of periodEvents.all(resolution, from) as { event: string }[]) {
          compactPeriod.run({ resolution, finest, event, from, until: from + resolution, top });
        }
      }
      setCompacted.run(resolution, ended);
    }
  });

  function series({ event, feature, from, until, step, resolution }: SeriesQuery): SeriesPoint[] {
    const found = new Map<number, SeriesPoint>();
    const rows =
      feature === undefined
        ? points.all(step, resolution, event, from, until)
        : clientPoints.all(step, resolution, event, feature, from, until);
    for (const row of rows as SeriesPoint[]) found.set(row.t, row);
    const answer: SeriesPoint[] = [];
    for (let t = from; t < until; t += step) {
      const point = found.get(t);
      answer.push({ t, allowed: point?.allowed ?? 0, denied: point?.denied ?? 0, degraded: point?.degraded ?? 0 });
    }
    return answer;
  }

  function topClients({ event, from, until, resolution, limit, include = [] }: TopQuery): TopClients {
    const read = (outcome: 'allowed' | 'denied') =>
      (
        heaviestBy[outcome].all({
          resolution,
          event,
          from,
          until,
          limit,
          include: JSON.stringify(include),
        }) as ClientCount[]
      ).sort((a, b) => b.count - a.count || (a.feature < b.feature ? -1 : 1));
    return { allowed: read('allowed'), denied: read('denied') };
  }

  // The driver is synchronous: each call runs to its end in one turn, so a query never sees half a batch.
  return {
    kind: 'sqlite',
    write: (batch) =>
      settle(() => {
        const now = Math.floor(nowSeconds());
        writeBatch(batch, now);
        if (now - prunedAt >= PRUNE_EVERY_SECONDS) {
          prunedAt = now;
          prune(now);
        }
      }),
    series: (query) => settle(() => series(query)),
    top: (query) => settle(() => topClients(query)),
    events: () =>
      settle(() =>
        (listEvents.all() as { event: string; first: number; last: number }[]).map(
          ({ event, first, last }): EventRange => ({ event, from: first, until: last + 1 }),
        ),
      ),
    close: () => settle(() => void db.close()),
  };
}

/** A synchronous call's result, or its error, as a promise. */
function settle<T>(call: () => T): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
