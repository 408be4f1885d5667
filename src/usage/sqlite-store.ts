import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'libsql';
import type { Archive } from '../config/retention.js';
import type {
  ClientCount,
  EventRange,
  SeriesPoint,
  SeriesQuery,
  TopClients,
  TopQuery,
  UsageBatch,
  UsageStore,
} from './usage-store.js';

export interface SqliteUsageOptions {
  /** The file; `:memory:` for a database that lives with the process. */
  readonly path: string;
  readonly archives: readonly Archive[];
  /** Seconds since the epoch, for pruning. Default the system clock. */
  readonly nowSeconds?: () => number;
}

/** How often points past their archive's retention are deleted, at most. */
const PRUNE_EVERY_SECONDS = 60;

/** The whole event, not one of its clients. */
const WHOLE_EVENT = '';

/**
 * Usage history in one SQLite file (libsql's driver, whose binary comes from the npm
 * registry). Every archive is a resolution in one table; a batch adds its counts to each
 * archive's point in one transaction (the rollup is done at write time, so a coarse point
 * is always the sum of its fine ones), and records the batch, so a batch written again
 * adds nothing. One process writes a file.
 */
export function openSqliteUsage({
  path,
  archives,
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
      feature TEXT NOT NULL,
      t INTEGER NOT NULL,
      allowed INTEGER NOT NULL,
      denied INTEGER NOT NULL,
      degraded INTEGER NOT NULL,
      PRIMARY KEY (resolution, event, feature, t)
    ) WITHOUT ROWID;
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
  `);
  const add = db.prepare(`
    INSERT INTO usage_points (resolution, event, feature, t, allowed, denied, degraded) VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (resolution, event, feature, t) DO UPDATE SET
      allowed = allowed + excluded.allowed, denied = denied + excluded.denied, degraded = degraded + excluded.degraded`);
  const markBatch = db.prepare('INSERT OR IGNORE INTO usage_batches (instance, sequence, written) VALUES (?, ?, ?)');
  const seeEvent = db.prepare(`
    INSERT INTO usage_events (event, first, last) VALUES (?, ?, ?)
    ON CONFLICT (event) DO UPDATE SET first = min(first, excluded.first), last = max(last, excluded.last)`);
  const points = db.prepare(`
    SELECT t - t % ? AS t, sum(allowed) AS allowed, sum(denied) AS denied, sum(degraded) AS degraded FROM usage_points
    WHERE resolution = ? AND event = ? AND feature = ? AND t >= ? AND t < ? GROUP BY 1`);
  const heaviest = (outcome: 'allowed' | 'denied') =>
    db.prepare(`
      SELECT feature, sum(${outcome}) AS count FROM usage_points
      WHERE resolution = ? AND event = ? AND feature > '' AND t >= ? AND t < ?
      GROUP BY feature HAVING count > 0 ORDER BY count DESC, feature LIMIT ?`);
  const heaviestBy = { allowed: heaviest('allowed'), denied: heaviest('denied') };
  const listEvents = db.prepare('SELECT event, first, last FROM usage_events ORDER BY event');
  const prunePoints = db.prepare('DELETE FROM usage_points WHERE resolution = ? AND t < ?');
  const pruneBatches = db.prepare('DELETE FROM usage_batches WHERE written < ?');
  const clientArchives = archives.filter(({ resolution }) => resolution % 60 === 0);
  let prunedAt = 0;

  const writeBatch = db.transaction((batch: UsageBatch, now: number) => {
    if (markBatch.run(batch.instance, batch.sequence, now).changes === 0) return;
    const spans = new Map<string, { first: number; last: number }>();
    for (const row of batch.seconds) {
      for (const { resolution } of archives) {
        add.run(
          resolution,
          row.event,
          WHOLE_EVENT,
          row.t - (row.t % resolution),
          row.allowed,
          row.denied,
          row.degraded,
        );
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
        for (const { feature, count } of minute.allowed) add.run(resolution, minute.event, feature, t, count, 0, 0);
        for (const { feature, count } of minute.denied) add.run(resolution, minute.event, feature, t, 0, count, 0);
      }
    }
    for (const [event, { first, last }] of spans) seeEvent.run(event, first, last);
  });

  const prune = db.transaction((now: number) => {
    for (const { resolution, keepSeconds } of archives) prunePoints.run(resolution, now - keepSeconds);
    // A batch is only written again while the recorder keeps it; a day is far beyond that.
    pruneBatches.run(now - 86_400);
  });

  function series({ event, feature, from, until, step, resolution }: SeriesQuery): SeriesPoint[] {
    const found = new Map<number, SeriesPoint>();
    for (const row of points.all(step, resolution, event, feature ?? WHOLE_EVENT, from, until) as SeriesPoint[]) {
      found.set(row.t, row);
    }
    const answer: SeriesPoint[] = [];
    for (let t = from; t < until; t += step) {
      const point = found.get(t);
      answer.push({ t, allowed: point?.allowed ?? 0, denied: point?.denied ?? 0, degraded: point?.degraded ?? 0 });
    }
    return answer;
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
    top: ({ event, from, until, resolution, limit }: TopQuery) =>
      settle((): TopClients => {
        const read = (outcome: 'allowed' | 'denied') =>
          heaviestBy[outcome].all(resolution, event, from, until, limit) as ClientCount[];
        return { allowed: read('allowed'), denied: read('denied') };
      }),
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
