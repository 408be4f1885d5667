// Pruning and compaction cut into steps of a few rows must leave the file exactly as the
// single statements memgate ran before (up to 4cda801) did: the same rows, the same marks,
// whatever the history, the step size, or a job stopped half way and started again.
import fc from 'fast-check';
import type Database from 'libsql';
import { describe, expect, it } from 'vitest';
import { sqliteMaintenance, type MaintenancePlan } from './sqlite-maintenance.js';
import { openUsageDatabase } from './sqlite-schema.js';

const HOUR = 3600;
const DAY = 86_400;
/** A day start: the history spans the three days before NOW. */
const START = Date.UTC(2026, 0, 5) / 1000;
const NOW = START + 3 * DAY + 2 * HOUR;

/** 1s:6h,1m:30d,1h:2y with the daily client sums, and a small top so that compaction has work. */
const PLAN = {
  archives: [
    { resolution: 1, keepSeconds: 6 * HOUR },
    { resolution: 60, keepSeconds: 2 * DAY },
    { resolution: HOUR, keepSeconds: 730 * DAY },
  ],
  clientArchives: [
    { resolution: 60, keepSeconds: 2 * DAY },
    { resolution: HOUR, keepSeconds: 730 * DAY },
    { resolution: DAY, keepSeconds: 730 * DAY },
  ],
  compacting: [
    { resolution: HOUR, finest: 60 },
    { resolution: DAY, finest: DAY },
  ],
  top: 2,
  compactAfterSeconds: 600,
  keepBatchesSeconds: DAY,
  chunkRows: 256,
} satisfies MaintenancePlan;

/** Names that tie and that JavaScript and SQLite order differently (U+10000 against U+E000). */
const NAMES = ['a', 'b', 'B', 'ab', 'é', '\u{10000}', '\uE000', 'zz', 'x'.repeat(1024)];

interface Minute {
  readonly event: string;
  readonly t: number;
  readonly feature: string;
  readonly allowed: number;
  readonly denied: number;
  /** Of allowed, those a shadow limit would have refused: compaction leaves a point's as it is. */
  readonly shadowDenied?: number;
  /** Reservations settled, and their actual costs: an event's too, left as they are. */
  readonly settled?: number;
  readonly settledCost?: number;
}

const minuteArbitrary = fc.record({
  event: fc.constantFrom('login', 'search'),
  t: fc.integer({ min: 0, max: (3 * DAY) / 60 - 1 }).map((minute) => START + minute * 60),
  feature: fc.constantFrom(...NAMES),
  allowed: fc.integer({ min: 0, max: 3 }),
  denied: fc.integer({ min: 0, max: 2 }),
  shadowDenied: fc.integer({ min: 0, max: 3 }),
  settled: fc.integer({ min: 0, max: 2 }),
  settledCost: fc.integer({ min: 0, max: 40 }),
});

/** A file holding these minutes as the store writes them: each in every client archive, and a point a second. */
function fileOf(minutes: readonly Minute[], marks: readonly [number, number][]): Database.Database {
  const db = openUsageDatabase(':memory:');
  // Each point with the sums of its client rows, where the resolution keeps clients.
  const point = db.prepare(`
    INSERT INTO usage_points (resolution, event, t, allowed, denied, degraded, shadow_denied, settled, settled_cost,
      named_allowed, named_denied)
    VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)
    ON CONFLICT DO UPDATE SET allowed = allowed + excluded.allowed, denied = denied + excluded.denied,
      shadow_denied = shadow_denied + excluded.shadow_denied,
      settled = settled + excluded.settled, settled_cost = settled_cost + excluded.settled_cost,
      named_allowed = named_allowed + excluded.named_allowed, named_denied = named_denied + excluded.named_denied`);
  const clientResolutions = new Set(PLAN.clientArchives.map(({ resolution }) => resolution));
  const client = db.prepare(`
    INSERT INTO usage_clients VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT DO UPDATE SET allowed = allowed + excluded.allowed, denied = denied + excluded.denied`);
  db.transaction(() => {
    for (const { event, t, feature, allowed, denied, shadowDenied = 0, settled = 0, settledCost = 0 } of minutes) {
      const shadow = Math.min(shadowDenied, allowed);
      const cost = settled > 0 ? settledCost : 0;
      for (const { resolution } of PLAN.archives) {
        const named = clientResolutions.has(resolution);
        const start = t - (t % resolution);
        const sums = named ? [allowed, denied] : [0, 0];
        point.run(resolution, event, start, allowed, denied, shadow, settled, cost, ...sums);
      }
      for (const { resolution } of PLAN.clientArchives) {
        client.run(resolution, event, t - (t % resolution), feature, allowed, denied);
      }
    }
    const events = db.prepare('INSERT OR IGNORE INTO usage_events VALUES (?, ?, ?)');
    for (const { event } of minutes) events.run(event, START, NOW);
    const batch = db.prepare('INSERT INTO usage_batches VALUES (?, ?, ?)');
    for (let sequence = 0; sequence < 40; sequence++) batch.run('i', sequence, NOW - 2 * DAY + sequence * HOUR);
    const mark = db.prepare('INSERT INTO usage_compacted VALUES (?, ?)');
    for (const [resolution, until] of marks) mark.run(resolution, until);
  })();
  return db;
}

/** Every row of every table, in key order. */
function contents(db: Database.Database): Record<string, unknown[]> {
  const all = (sql: string) => db.prepare(sql).raw().all();
  return {
    points: all('SELECT * FROM usage_points ORDER BY resolution, event, t'),
    clients: all('SELECT * FROM usage_clients ORDER BY resolution, event, t, feature'),
    batches: all('SELECT * FROM usage_batches ORDER BY instance, sequence'),
    compacted: all('SELECT * FROM usage_compacted ORDER BY resolution'),
  };
}

/** Runs a job to its end, or for `steps` steps only; how many steps it took. */
function drain(job: Generator, steps = Infinity): number {
  let taken = 0;
  while (taken < steps && !job.next().done) taken++;
  return taken;
}

describe('pruning and compaction in steps', () => {
  it('leave the file as the single statements did, whatever the history and the step size (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.array(minuteArbitrary, { maxLength: 150 }),
        fc.constantFrom<[number, number][]>(
          [],
          [[HOUR, START + DAY]],
          [
            [HOUR, NOW],
            [DAY, START + DAY],
          ],
        ),
        fc.integer({ min: 1, max: 5 }),
        (minutes, marks, chunkRows) => {
          const before = fileOf(minutes, marks);
          pruneAsBefore(before, NOW, PLAN);
          const after = fileOf(minutes, marks);
          drain(sqliteMaintenance(after, { ...PLAN, chunkRows })(NOW));
          expect(contents(after)).toEqual(contents(before));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('goes on from its mark after a job stopped half way, to the same file', () => {
    const minutes = fc.sample(minuteArbitrary, { numRuns: 400, seed: 7 });
    const before = fileOf(minutes, []);
    pruneAsBefore(before, NOW, PLAN);
    const after = fileOf(minutes, []);
    const maintain = sqliteMaintenance(after, { ...PLAN, chunkRows: 3 });
    const steps = drain(maintain(NOW));
    expect(steps).toBeGreaterThan(50);
    // Stopped at several points, then run again from the start: compaction resumes from its mark.
    for (const stop of [1, Math.floor(steps / 3), Math.floor(steps / 2), steps - 1]) {
      const again = fileOf(minutes, []);
      const job = sqliteMaintenance(again, { ...PLAN, chunkRows: 3 });
      drain(job(NOW), stop);
      drain(job(NOW));
      expect(contents(again), `stopped after ${stop} steps`).toEqual(contents(before));
    }
  });

  it('reads or deletes at most chunkRows rows a step, however many rows a period holds', () => {
    // One hour of one event with 2,000 clients: the old statements read them all at once.
    const minutes = Array.from({ length: 2000 }, (_, i) => ({
      event: 'login',
      t: START + (i % 60) * 60,
      feature: `client-${String(i).padStart(4, '0')}`,
      allowed: i % 7,
      denied: i % 5,
    }));
    const db = fileOf(minutes, []);
    const changes = db.prepare('SELECT total_changes() AS n');
    const job = sqliteMaintenance(db, { ...PLAN, chunkRows: 10 })(NOW);
    let last = (changes.get() as { n: number }).n;
    while (!job.next().done) {
      const now = (changes.get() as { n: number }).n;
      // Each client row dropped, and the sums of the points they belonged to.
      expect(now - last).toBeLessThanOrEqual(2 * 10 + 1);
      last = now;
    }
    expect(db.prepare('SELECT count(*) AS n FROM usage_clients WHERE resolution = ?').get(HOUR)).toMatchObject({
      n: 4,
    });
  });
});

/**
 * The pruning and compaction of memgate up to 4cda801, statement for statement: one
 * transaction, each delete over every row its range could not narrow.
 */
function pruneAsBefore(
  db: Database.Database,
  now: number,
  { archives, clientArchives, compacting, top }: MaintenancePlan,
) {
  const prunePoints = db.prepare('DELETE FROM usage_points WHERE resolution = ? AND event = ? AND t < ?');
  const pruneClients = db.prepare('DELETE FROM usage_clients WHERE resolution = ? AND event = ? AND t < ?');
  const allEvents = db.prepare('SELECT event FROM usage_events');
  const pruneBatches = db.prepare('DELETE FROM usage_batches WHERE written < ?');
  const compactedUntil = db.prepare('SELECT until FROM usage_compacted WHERE resolution = ?');
  const oldestClient = db.prepare('SELECT min(t) AS t FROM usage_clients WHERE resolution = ?');
  const setCompacted = db.prepare('INSERT OR REPLACE INTO usage_compacted (resolution, until) VALUES (?, ?)');
  const periodEvents = db.prepare('SELECT DISTINCT event FROM usage_clients WHERE resolution = ? AND t = ?');
  const compactPeriod = db.prepare(`
    DELETE FROM usage_clients
    WHERE resolution >= :finest AND resolution <= :resolution AND event = :event AND t >= :from AND t < :until
      AND feature NOT IN (
        SELECT feature FROM usage_clients WHERE resolution = :resolution AND event = :event AND t = :from
        ORDER BY allowed DESC, feature LIMIT :top)
      AND feature NOT IN (
        SELECT feature FROM usage_clients WHERE resolution = :resolution AND event = :event AND t = :from
        ORDER BY denied DESC, feature LIMIT :top)`);
  const named = db.prepare(`
    UPDATE usage_points SET
      named_allowed = coalesce((SELECT sum(allowed) FROM usage_clients c
        WHERE c.resolution = usage_points.resolution AND c.event = usage_points.event AND c.t = usage_points.t), 0),
      named_denied = coalesce((SELECT sum(denied) FROM usage_clients c
        WHERE c.resolution = usage_points.resolution AND c.event = usage_points.event AND c.t = usage_points.t), 0)
    WHERE resolution = ?`);
  db.transaction(() => {
    const events = (allEvents.all() as { event: string }[]).map(({ event }) => event);
    for (const { resolution, keepSeconds } of archives) {
      for (const event of events) prunePoints.run(resolution, event, now - keepSeconds);
    }
    for (const { resolution, keepSeconds } of clientArchives) {
      for (const event of events) pruneClients.run(resolution, event, now - keepSeconds);
    }
    pruneBatches.run(now - 86_400);
    for (const { resolution, finest } of compacting) {
      const ended = now - 600 - ((now - 600) % resolution);
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
    // Each point's sums are its client rows', whatever was dropped.
    for (const { resolution } of clientArchives) named.run(resolution);
  })();
}
