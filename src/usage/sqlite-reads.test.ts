// /usage and /usage/top read a few rows a step must answer what the single statements of
// memgate up to 4cda801 answered, and refuse a query past its row budget instead of reading on.
import fc from 'fast-check';
import type Database from 'libsql';
import { describe, expect, it } from 'vitest';
import { UsageQueryError } from './query-plan.js';
import { BUILD_CHUNK, sqliteReads } from './sqlite-reads.js';
import { openUsageDatabase } from './sqlite-schema.js';
import type { Job } from './slice-lane.js';
import type { ClientCount } from './usage-store.js';

const START = Date.UTC(2026, 0, 5) / 1000;
const NAMES = ['a', 'b', 'B', 'ab', 'é', '\u{10000}', '\uE000', 'zz', 'x'.repeat(1024)];

const rowArbitrary = fc.record({
  resolution: fc.constantFrom(60, 3600),
  t: fc.integer({ min: 0, max: 300 }).map((minute) => START + minute * 60),
  feature: fc.constantFrom(...NAMES),
  allowed: fc.integer({ min: 0, max: 3 }),
  denied: fc.integer({ min: 0, max: 2 }),
  // Of allowed, those a shadow limit would have refused: an event's count only.
  shadowDenied: fc.integer({ min: 0, max: 3 }),
  // Reservations settled and their actual costs: an event's only too.
  settled: fc.integer({ min: 0, max: 2 }),
  settledCost: fc.integer({ min: 0, max: 5000 }),
  // False: counted for the event, by a client the history does not name.
  named: fc.boolean(),
});
type Row = typeof rowArbitrary extends fc.Arbitrary<infer T> ? T : never;

function fileOf(rows: readonly Row[]): Database.Database {
  const db = openUsageDatabase(':memory:');
  const point = db.prepare(`
    INSERT INTO usage_points (resolution, event, t, allowed, denied, degraded, shadow_denied, settled, settled_cost,
      named_allowed, named_denied)
    VALUES (?, 'login', ?, ?, ?, 1, ?, ?, ?, ?, ?)
    ON CONFLICT DO UPDATE SET allowed = allowed + excluded.allowed, denied = denied + excluded.denied,
      shadow_denied = shadow_denied + excluded.shadow_denied,
      settled = settled + excluded.settled, settled_cost = settled_cost + excluded.settled_cost,
      named_allowed = named_allowed + excluded.named_allowed, named_denied = named_denied + excluded.named_denied`);
  const client = db.prepare(`
    INSERT INTO usage_clients VALUES (?, 'login', ?, ?, ?, ?)
    ON CONFLICT DO UPDATE SET allowed = allowed + excluded.allowed, denied = denied + excluded.denied`);
  db.transaction(() => {
    for (const { resolution, t, feature, allowed, denied, shadowDenied, settled, settledCost, named } of rows) {
      const start = t - (t % resolution);
      const shadow = Math.min(shadowDenied, allowed);
      const cost = settled > 0 ? settledCost : 0;
      point.run(resolution, start, allowed, denied, shadow, settled, cost, named ? allowed : 0, named ? denied : 0);
      if (named) client.run(resolution, start, feature, allowed, denied);
    }
  })();
  return db;
}

/** What a job threw, if it did. */
function refusal(job: Job<unknown>): unknown {
  try {
    run(job);
  } catch (error) {
    return error;
  }
  return undefined;
}

function run<T>(job: Job<T>): { value: T; steps: number } {
  let steps = 0;
  for (;;) {
    const step = job.next();
    if (step.done) return { value: step.value, steps };
    steps++;
  }
}

const queryArbitrary = fc.record({
  resolution: fc.constantFrom(60, 3600),
  from: fc.integer({ min: -10, max: 200 }).map((minute) => START + minute * 60),
  minutes: fc.integer({ min: 1, max: 400 }),
  stepIn: fc.integer({ min: 1, max: 4 }),
  limit: fc.integer({ min: 1, max: 5 }),
  include: fc.subarray(NAMES),
  chunkRows: fc.integer({ min: 1, max: 6 }),
});

describe('reads in steps', () => {
  it('answer /usage and /usage/top as the single statements did (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(rowArbitrary, { maxLength: 120 }), queryArbitrary, (rows, query) => {
        const db = fileOf(rows);
        const { resolution, limit, chunkRows } = query;
        const step = resolution * query.stepIn;
        const from = query.from - (query.from % step);
        const until = query.from + query.minutes * 60;
        const reads = sqliteReads(db, { chunkRows, rowBudget: 10_000 });
        const before = readAsBefore(db);
        expect(run(reads.series({ event: 'login', from, until, step, resolution })).value).toEqual(
          before.series(undefined, from, until, step, resolution),
        );
        expect(run(reads.series({ event: 'login', feature: 'a', from, until, step, resolution })).value).toEqual(
          before.series('a', from, until, step, resolution),
        );
        const include = () => query.include;
        expect(run(reads.top({ event: 'login', from, until, resolution, limit, include })).value).toEqual(
          before.top(from, until, resolution, limit, query.include),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('read at most chunkRows rows a step, and refuse a query past its row budget with usage_query_too_large', () => {
    const rows = Array.from({ length: 100 }, (_, i): Row => ({
      resolution: 60,
      t: START + (i % 10) * 60,
      feature: `client-${i}`,
      allowed: 1,
      denied: 0,
      shadowDenied: 0,
      settled: 0,
      settledCost: 0,
      named: true,
    }));
    const db = fileOf(rows);
    const query = { event: 'login', from: START, until: START + 600, resolution: 60, limit: 3 };
    // 100 client rows: 10 steps of 10, and the budget met exactly is not past it.
    expect(run(sqliteReads(db, { chunkRows: 10, rowBudget: 100 }).top(query)).steps).toBe(10);
    for (const rowBudget of [99, 50, 1]) {
      const error = refusal(sqliteReads(db, { chunkRows: 10, rowBudget }).top(query));
      expect(error).toBeInstanceOf(UsageQueryError);
      expect((error as UsageQueryError).code).toBe('usage_query_too_large');
      expect((error as UsageQueryError).message).toContain(`more than ${rowBudget} rows`);
    }
    // 10 minutes of points, and one client's 1.
    const series = { ...query, step: 60 };
    expect(run(sqliteReads(db, { chunkRows: 3, rowBudget: 10 }).series(series)).steps).toBe(3);
    expect(refusal(sqliteReads(db, { chunkRows: 3, rowBudget: 9 }).series(series))).toBeInstanceOf(UsageQueryError);
    // A client's curve reads its own row and the event's 10 points (what went unnamed).
    const client = { ...series, feature: 'client-1' };
    expect(run(sqliteReads(db, { chunkRows: 3, rowBudget: 11 }).series(client)).value).toHaveLength(10);
    for (const rowBudget of [10, 5, 1]) {
      expect(refusal(sqliteReads(db, { chunkRows: 3, rowBudget }).series(client))).toBeInstanceOf(UsageQueryError);
    }
  });

  it("make a long answer a slice a step: a client's month of minutes is 43,200 points", () => {
    // A row or two around each slice's first and last point, and the range's own ends.
    const minutes = 30 * 24 * 60;
    const at = [0, 1, BUILD_CHUNK - 1, BUILD_CHUNK, 2 * BUILD_CHUNK + 7, 5 * BUILD_CHUNK - 1, minutes - 2, minutes - 1];
    const rows = at.flatMap((minute, i): Row[] => [
      {
        resolution: 60,
        t: START + minute * 60,
        feature: 'a',
        allowed: 1 + (i % 3),
        denied: i % 2,
        shadowDenied: 1,
        settled: 1,
        settledCost: 40 + i,
        named: true,
      },
      {
        resolution: 60,
        t: START + minute * 60,
        feature: 'b',
        allowed: 2,
        denied: 1,
        shadowDenied: 0,
        settled: 0,
        settledCost: 0,
        named: i % 2 === 0,
      },
    ]);
    const db = fileOf(rows);
    const before = readAsBefore(db);
    // Reads of a step each: what remains is the making of the answer.
    const reads = sqliteReads(db, { chunkRows: 1000, rowBudget: 10_000 });
    const query = { event: 'login', from: START, until: START + minutes * 60, step: 60, resolution: 60 };
    const slices = Math.ceil(minutes / BUILD_CHUNK);
    const event = run(reads.series(query));
    expect(event.value).toEqual(before.series(undefined, query.from, query.until, 60, 60));
    expect(event.steps).toBeGreaterThanOrEqual(slices - 1);
    const client = run(reads.series({ ...query, feature: 'a' }));
    expect(client.value).toEqual(before.series('a', query.from, query.until, 60, 60));
    expect(client.steps).toBeGreaterThanOrEqual(slices - 1);
  });

  it('asks for the clients memory adds once, before reading', () => {
    const db = fileOf([
      {
        resolution: 60,
        t: START,
        feature: 'a',
        allowed: 1,
        denied: 0,
        shadowDenied: 0,
        settled: 0,
        settledCost: 0,
        named: true,
      },
    ]);
    const asked: number[] = [];
    const job = sqliteReads(db, { chunkRows: 1, rowBudget: 10 }).top({
      event: 'login',
      from: START,
      until: START + 60,
      resolution: 60,
      limit: 1,
      include: () => {
        asked.push(asked.length);
        return [];
      },
    });
    job.next();
    expect(asked).toEqual([0]);
    run(job);
    expect(asked).toEqual([0]);
  });
});

/**
 * /usage and /usage/top of memgate up to 4cda801: one statement each, over every row of the
 * range (shadow_denied and the settles, which came later, summed as degraded is).
 */
function readAsBefore(db: Database.Database) {
  const points = db.prepare(`
    SELECT t - t % ? AS t, sum(allowed) AS allowed, sum(denied) AS denied, sum(degraded) AS degraded,
      sum(shadow_denied) AS shadow_denied, sum(settled) AS settled, sum(settled_cost) AS settled_cost FROM usage_points
    WHERE resolution = ? AND event = ? AND t >= ? AND t < ? GROUP BY 1`);
  const clientPoints = db.prepare(`
    SELECT t - t % ? AS t, sum(allowed) AS allowed, sum(denied) AS denied, 0 AS degraded, 0 AS shadow_denied,
      0 AS settled, 0 AS settled_cost
    FROM usage_clients
    WHERE resolution = ? AND event = ? AND feature = ? AND t >= ? AND t < ? GROUP BY 1`);
  const named = db.prepare(`
    SELECT t - t % ? AS t, sum(allowed) AS allowed, sum(denied) AS denied FROM usage_clients
    WHERE resolution = ? AND event = ? AND t >= ? AND t < ? GROUP BY 1`);
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
  return {
    series(feature: string | undefined, from: number, until: number, step: number, resolution: number) {
      type Counts = {
        allowed: number;
        denied: number;
        degraded: number;
        shadow_denied: number;
        settled: number;
        settled_cost: number;
      };
      const found = new Map<number, Counts>();
      const rows =
        feature === undefined
          ? points.all(step, resolution, 'login', from, until)
          : clientPoints.all(step, resolution, 'login', feature, from, until);
      for (const row of rows as (Counts & { t: number })[]) found.set(row.t, row);
      type Sums = { t: number; allowed: number; denied: number };
      const sums = (statement: Database.Statement, ...args: unknown[]) =>
        new Map((statement.all(step, resolution, 'login', ...args) as Sums[]).map((row) => [row.t, row]));
      const totals = sums(points, from, until);
      const namedSums = sums(named, from, until);
      const answer = [];
      for (let t = from; t < until; t += step) {
        const point = found.get(t);
        const counts = {
          t,
          allowed: point?.allowed ?? 0,
          denied: point?.denied ?? 0,
          degraded: point?.degraded ?? 0,
          shadow_denied: point?.shadow_denied ?? 0,
          settled: point?.settled ?? 0,
          settled_cost: point?.settled_cost ?? 0,
        };
        const unnamed = (outcome: 'allowed' | 'denied') =>
          (totals.get(t)?.[outcome] ?? 0) - (namedSums.get(t)?.[outcome] ?? 0);
        answer.push(
          feature === undefined
            ? counts
            : { ...counts, unnamed: { allowed: unnamed('allowed'), denied: unnamed('denied') } },
        );
      }
      return answer;
    },
    top(from: number, until: number, resolution: number, limit: number, include: readonly string[]) {
      const read = (outcome: 'allowed' | 'denied') =>
        (
          heaviest(outcome).all({
            resolution,
            event: 'login',
            from,
            until,
            limit,
            include: JSON.stringify(include),
          }) as {
            feature: string;
            count: number;
          }[]
        )
          .map(({ feature, count }): ClientCount => ({ feature, count }))
          .sort((a, b) => b.count - a.count || (a.feature < b.feature ? -1 : 1));
      return { allowed: read('allowed'), denied: read('denied') };
    },
  };
}
