// Pruning and compaction when another connection holds the file's write lock (another
// process on the file, or a moment of the checkpoints' worker): the store tries again, idle()
// waits for it, and what stops them for good is reported, never a compaction that idle() calls
// done half way (test/usage-stall.test.ts once found a year's light clients left after idle()).
// The lock is taken by a second connection right after the write that starts the
// maintenance, before the lane's next turn runs it: its first write meets the lock every time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseRetention, type Archive } from '../config/retention.js';
import { openSqliteUsage, type SqliteUsageOptions, type SqliteUsageStore } from './sqlite-store.js';

const ARCHIVES = parseRetention('1s:6h,1m:30d,1h:2y') as readonly Archive[];
/** 2026-01-01T10:00:00Z. */
const START = Date.UTC(2026, 0, 1, 10) / 1000;
const HOURS = 3;
/** Past the last hour and the grace after it: every hour is due for compaction. */
const DUE = START + HOURS * 3600 + 700;

let dir: string;
let path: string;
let now: number;
let sequence: number;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'memgate-usage-lock-'));
  path = join(dir, 'usage.db');
  now = START;
  sequence = 0;
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A store holding HOURS hours of a heavy client and a new light one each minute, not yet compacted. */
async function filled(options: Partial<SqliteUsageOptions> = {}): Promise<SqliteUsageStore> {
  const store = openSqliteUsage({ path, archives: ARCHIVES, top: 1, nowSeconds: () => now, ...options });
  for (let minute = 0; minute < HOURS * 60; minute++) {
    await store.write({
      instance: 'a',
      sequence: sequence++,
      seconds: [],
      minutes: [
        {
          event: 'login',
          t: START + minute * 60,
          allowed: [
            { feature: 'alice', count: 5 },
            { feature: `light-${minute}`, count: 1 },
          ],
          denied: [],
        },
      ],
    });
  }
  await store.idle();
  return store;
}

/** A write with nothing in it: what starts pruning and compaction once they are due. */
function nudge(store: SqliteUsageStore): Promise<void> {
  return store.write({ instance: 'a', sequence: sequence++, seconds: [], minutes: [] });
}

/** The clients the file holds, by resolution. */
function clients(db: Database.Database): Record<number, number> {
  const rows = db
    .prepare(
      "SELECT resolution, count(DISTINCT feature) AS n FROM usage_clients WHERE event = 'login' GROUP BY resolution",
    )
    .all() as { resolution: number; n: number }[];
  return Object.fromEntries(rows.map(({ resolution, n }) => [resolution, n]));
}

const NOTHING_COMPACTED = { 60: HOURS * 60 + 1, 3600: HOURS * 60 + 1, 86_400: HOURS * 60 + 1 };
/** The hours and their minutes keep their heaviest client; the day is not over. */
const COMPACTED = { 60: 1, 3600: 1, 86_400: HOURS * 60 + 1 };

describe("pruning and compaction against another connection's write lock", () => {
  it('try again once the lock is gone, and idle() resolves only after the compaction has ended', async () => {
    const store = await filled();
    const other = new Database(path);
    expect(clients(other)).toEqual(NOTHING_COMPACTED);
    now = DUE;
    await nudge(store);
    // Before the lane's next turn: the maintenance's first write meets the lock.
    other.exec('BEGIN IMMEDIATE');
    await new Promise((resolve) => setTimeout(resolve, 50));
    other.exec('ROLLBACK');
    await store.idle();
    expect(clients(other)).toEqual(COMPACTED);
    expect(other.prepare('SELECT resolution, until FROM usage_compacted ORDER BY resolution').raw().all()).toEqual([
      [3600, START + HOURS * 3600],
      [86_400, START - (START % 86_400)],
    ]);
    // The busy moment left nothing behind on the store's connection: later writes commit.
    now += 61;
    await nudge(store);
    await store.idle();
    await nudge(store);
    other.close();
    await store.close();
  });

  it('report a lock held past every try to idle(), once, and to the next write; the next pruning due compacts', async () => {
    const store = await filled({ maintenanceRetryMs: [1, 1] });
    const other = new Database(path);
    now = DUE;
    await nudge(store);
    other.exec('BEGIN IMMEDIATE');
    await expect(store.idle()).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
    expect(clients(other)).toEqual(NOTHING_COMPACTED);
    other.exec('ROLLBACK');
    // Reported once to idle(); the next write reports it too, and the recorder keeps its batch.
    await store.idle();
    await expect(nudge(store)).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
    now += 61;
    await nudge(store);
    await store.idle();
    expect(clients(other)).toEqual(COMPACTED);
    other.close();
    await store.close();
  });
});
