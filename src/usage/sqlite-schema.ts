/**
 * The usage file's layout, and what brings a file an earlier memgate wrote to it. Every
 * step keeps every row: a file from any version opens with its history.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'libsql';

/**
 * The layout's version, kept in PRAGMA user_version: 0 is the first, 1 added
 * usage_batches_by_written, 2 the named clients' sums of each point, 3 shadow_denied, 4
 * settled and settled_cost.
 */
export const SCHEMA_VERSION = 4;

/** Opens (or creates) the file at `path`, `:memory:` for one that lives with the process, in the current layout. */
export function openUsageDatabase(path: string): Database.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // WAL: a reader never waits for the flush; NORMAL: a crash may lose the last flush, never corrupt.
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  createSchema(db);
  return db;
}

/** Creates what is missing of the current layout in `db`, and migrates what an earlier one left. */
export function createSchema(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS usage_points (
      resolution INTEGER NOT NULL,
      event TEXT NOT NULL,
      t INTEGER NOT NULL,
      allowed INTEGER NOT NULL,
      denied INTEGER NOT NULL,
      degraded INTEGER NOT NULL,
      -- What the rows of usage_clients at this point hold, kept with them: the rest of
      -- allowed and denied went to clients the history does not name.
      named_allowed INTEGER NOT NULL DEFAULT 0,
      named_denied INTEGER NOT NULL DEFAULT 0,
      -- Of allowed, those a shadow limit would have refused.
      shadow_denied INTEGER NOT NULL DEFAULT 0,
      -- Reservations settled in this point, and the sum of their actual costs.
      settled INTEGER NOT NULL DEFAULT 0,
      settled_cost INTEGER NOT NULL DEFAULT 0,
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
  migrate(db);
}

/**
 * Brings a file to SCHEMA_VERSION; every version keeps every row.
 * 0 → 1: pruning finds batches older than a day through an index, not by reading them all
 * (built at start, from a table that holds about a day of batches).
 * 1 → 2: each point holds what its named clients did. Points written before hold 0: their
 * clients' curves then say a client absent from a busy step is not tracked, never that it
 * had none (summing the clients of a file of years would stall the start).
 * 2 → 3: each point counts its allowed decisions a shadow limit would have refused. Points
 * written before hold 0, which they were: no limit was in shadow then. A column added with a
 * constant default is a change of the table's definition only: no row is rewritten.
 * 3 → 4: each point counts the reservations settled in it and sums their actual costs. Points
 * written before hold 0 of both, which they were: memgate took no reservations then. Added
 * as shadow_denied was, without rewriting a row.
 */
function migrate(db: Database.Database): void {
  const { user_version: version } = db.prepare('PRAGMA user_version').get() as { user_version: number };
  if (version >= SCHEMA_VERSION) return;
  db.exec('CREATE INDEX IF NOT EXISTS usage_batches_by_written ON usage_batches (written)');
  const columns = new Set(
    (db.prepare('PRAGMA table_info(usage_points)').all() as { name: string }[]).map((c) => c.name),
  );
  for (const column of ['named_allowed', 'named_denied', 'shadow_denied', 'settled', 'settled_cost']) {
    if (!columns.has(column)) db.exec(`ALTER TABLE usage_points ADD COLUMN ${column} INTEGER NOT NULL DEFAULT 0`);
  }
  db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
}
