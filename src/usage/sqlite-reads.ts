/**
 * /usage and /usage/top over the SQLite file, as jobs for the slice lane: each step reads at
 * most CHUNK_ROWS rows in key order from where the last one stopped (an index seek, never a
 * scan from the start), and a query that would read more than its row budget is refused
 * with `usage_query_too_large` instead of holding the process for as long as it takes.
 */
import type Database from 'libsql';
import { Heaviest } from './heaviest.js';
import { UsageQueryError } from './query-plan.js';
import type { Job } from './slice-lane.js';
import type { ClientCount, SeriesPoint, SeriesQuery, TopClients, TopQuery } from './usage-store.js';

export interface SqliteReadOptions {
  /** Rows a step reads at most. */
  readonly chunkRows: number;
  /** Rows one query reads at most before it is refused. */
  readonly rowBudget: number;
}

export interface SqliteReads {
  series(query: SeriesQuery): Job<SeriesPoint[]>;
  top(query: TopQuery): Job<TopClients>;
}

interface PointRow {
  readonly t: number;
  readonly allowed: number;
  readonly denied: number;
  readonly degraded?: number;
  readonly shadow_denied?: number;
  /** An event's point: the reservations settled in it, and their actual costs. */
  readonly settled?: number;
  readonly settled_cost?: number;
  /** An event's point: what the clients the history names at it did. */
  readonly named_allowed?: number;
  readonly named_denied?: number;
}

interface ClientRow {
  readonly t: number;
  readonly feature: string;
  readonly allowed: number;
  readonly denied: number;
}

/** Clients a ranking step goes through: Map entries, each a few comparisons. */
const RANK_CHUNK = 2000;

/** Points of an answer a step makes: an object of a few numbers each, about 0.1 µs apiece. */
export const BUILD_CHUNK = 4096;

export function sqliteReads(db: Database.Database, { chunkRows, rowBudget }: SqliteReadOptions): SqliteReads {
  // Each from just after the last row read: `t` is unique within an event's points, and within a client's.
  const points = db.prepare(`
    SELECT t, allowed, denied, degraded, shadow_denied, settled, settled_cost, named_allowed, named_denied
    FROM usage_points
    WHERE resolution = ? AND event = ? AND t > ? AND t < ? ORDER BY t LIMIT ?`);
  const clientPoints = db.prepare(`
    SELECT t, allowed, denied FROM usage_clients
    WHERE resolution = ? AND event = ? AND feature = ? AND t > ? AND t < ? ORDER BY t LIMIT ?`);
  // Clients in key order: the first step from `from`, then after the last (t, feature) read.
  // Written without `t >= ?` so that SQLite seeks on all four key columns.
  const clientsFrom = db.prepare(`
    SELECT t, feature, allowed, denied FROM usage_clients
    WHERE resolution = ? AND event = ? AND t >= ? AND t < ? ORDER BY t, feature LIMIT ?`);
  const clientsAfter = db.prepare(`
    SELECT t, feature, allowed, denied FROM usage_clients
    WHERE resolution = ? AND event = ? AND (t, feature) > (?, ?) AND t < ? ORDER BY t, feature LIMIT ?`);

  /**
   * How many rows the next step reads: one more than the budget leaves, so that a range
   * past it is known before more is read; refused once it is.
   */
  function budget(read: number, what: string): number {
    if (read > rowBudget) {
      throw new UsageQueryError(
        'usage_query_too_large',
        `${what} holds more than ${rowBudget.toLocaleString('en')} rows of usage history, more than one query may read; ask for a shorter range`,
      );
    }
    return Math.min(chunkRows, rowBudget - read + 1);
  }

  /**
   * Reads rows in `t` order from just after `after`, a chunk a step, each from just after the
   * last `t` read, handing each to `take`; `read.rows` counts them against the budget.
   */
  function* readInOrder<Row extends { readonly t: number }>(
    read: { rows: number },
    what: string,
    start: number,
    chunk: (after: number, limit: number) => readonly Row[],
    take: (row: Row) => void,
  ): Generator<undefined, void> {
    let after = start;
    for (;;) {
      const limit = budget(read.rows, what);
      const rows = chunk(after, limit);
      read.rows += rows.length;
      rows.forEach(take);
      const last = rows.at(-1);
      if (!last || rows.length < limit) return;
      after = last.t;
      yield;
    }
  }

  return {
    *series({ event, feature, from, until, step, resolution }) {
      // Sums in typed arrays, a number per point and count: nothing on the heap per point
      // while rows are read. (A client's month of minutes is 43,200 points: made as objects
      // up front and kept through hundreds of steps, they were copied by the young
      // generation's collections again and again, pauses of 10-40 ms.) The answer's objects
      // are made last, BUILD_CHUNK a step.
      const size = until > from ? Math.ceil((until - from) / step) : 0;
      // Settles are an event's only: a client's curve makes no array of them.
      const eventOnly = feature === undefined ? size : 0;
      const counts = {
        allowed: new Float64Array(size),
        denied: new Float64Array(size),
        degraded: new Float64Array(size),
        shadow_denied: new Float64Array(size),
        settled: new Float64Array(eventOnly),
        settled_cost: new Float64Array(eventOnly),
      };
      /** The index of the point whose step holds second `t`, as `t - t % step` groups them; -1 for none. */
      const indexAt = (t: number) => {
        const start = t - (t % step);
        if ((start - from) % step !== 0) return -1;
        const index = (start - from) / step;
        return index >= 0 && index < size ? index : -1;
      };
      const pointAt = (index: number) => ({
        t: from + index * step,
        allowed: counts.allowed[index] as number,
        denied: counts.denied[index] as number,
        degraded: counts.degraded[index] as number,
        shadow_denied: counts.shadow_denied[index] as number,
        settled: counts.settled[index] as number,
        settled_cost: counts.settled_cost[index] as number,
      });
      const what = `from ${from} to ${until} at ${resolution} s`;
      const read = { rows: 0 };
      const first = from - 1;
      if (feature === undefined) {
        yield* readInOrder(
          read,
          what,
          first,
          (after, limit) => points.all(resolution, event, after, until, limit) as PointRow[],
          add,
        );
        return yield* answer(pointAt);
      }
      yield* readInOrder(
        read,
        what,
        first,
        (after, limit) => clientPoints.all(resolution, event, feature, after, until, limit) as PointRow[],
        add,
      );
      // What the event counted less what its named clients did: what went to clients unnamed.
      const unnamed = { allowed: new Float64Array(size), denied: new Float64Array(size) };
      yield* readInOrder(
        read,
        what,
        first,
        (after, limit) => points.all(resolution, event, after, until, limit) as PointRow[],
        (row: PointRow) => {
          const index = indexAt(row.t);
          if (index < 0) return;
          addAt(unnamed.allowed, index, row.allowed - (row.named_allowed ?? 0));
          addAt(unnamed.denied, index, row.denied - (row.named_denied ?? 0));
        },
      );
      // One literal, not a spread of pointAt's: with a spread, the young generation's
      // collections copied these points over and over (measured: 12-18 ms of GC a query, not 2-3).
      return yield* answer((index) => ({
        t: from + index * step,
        allowed: counts.allowed[index] as number,
        denied: counts.denied[index] as number,
        degraded: counts.degraded[index] as number,
        shadow_denied: counts.shadow_denied[index] as number,
        settled: 0,
        settled_cost: 0,
        unnamed: { allowed: unnamed.allowed[index] as number, denied: unnamed.denied[index] as number },
      }));

      function add(row: PointRow) {
        const index = indexAt(row.t);
        if (index < 0) return;
        addAt(counts.allowed, index, row.allowed);
        addAt(counts.denied, index, row.denied);
        addAt(counts.degraded, index, row.degraded ?? 0);
        // An event's only: a client's rows have no degraded, shadow_denied or settles.
        addAt(counts.shadow_denied, index, row.shadow_denied ?? 0);
        if (feature === undefined) {
          addAt(counts.settled, index, row.settled ?? 0);
          addAt(counts.settled_cost, index, row.settled_cost ?? 0);
        }
      }

      /** The points, BUILD_CHUNK a step: the step that ends the reads makes the first. */
      function* answer(point: (index: number) => SeriesPoint): Job<SeriesPoint[]> {
        const made: SeriesPoint[] = [];
        for (let index = 0; index < size; index++) {
          if (index > 0 && index % BUILD_CHUNK === 0) yield;
          made.push(point(index));
        }
        return made;
      }
    },

    *top({ event, from, until, resolution, limit, include }) {
      // What memory adds is read now, at the moment what the file holds is fixed: no write
      // lands in the lane until this job ends.
      const wanted = new Set(include?.() ?? []);
      const what = `/usage/top from ${from} to ${until} at ${resolution} s`;
      const sums = new Map<string, { allowed: number; denied: number }>();
      let read = 0;
      let last: ClientRow | undefined;
      for (;;) {
        const size = budget(read, what);
        const rows = (
          last === undefined
            ? clientsFrom.all(resolution, event, from, until, size)
            : clientsAfter.all(resolution, event, last.t, last.feature, until, size)
        ) as ClientRow[];
        read += rows.length;
        for (const { feature, allowed, denied } of rows) {
          const sum = sums.get(feature);
          if (sum) {
            sum.allowed += allowed;
            sum.denied += denied;
          } else sums.set(feature, { allowed, denied });
        }
        last = rows.at(-1);
        if (!last || rows.length < size) break;
        yield;
      }
      const heaviest = { allowed: new Heaviest(limit), denied: new Heaviest(limit) };
      let ranked = 0;
      for (const [feature, sum] of sums) {
        if (sum.allowed > 0) heaviest.allowed.offer(feature, sum.allowed);
        if (sum.denied > 0) heaviest.denied.offer(feature, sum.denied);
        if (++ranked % RANK_CHUNK === 0) yield;
      }
      // The first `limit`, and the clients asked for whatever their rank (see TopQuery).
      const answer = (outcome: 'allowed' | 'denied'): ClientCount[] => {
        const found = heaviest[outcome].list();
        const listed = new Set(found.map(({ feature }) => feature));
        for (const feature of wanted) {
          const count = sums.get(feature)?.[outcome] ?? 0;
          if (count > 0 && !listed.has(feature)) found.push({ feature, count });
        }
        return found.sort((a, b) => b.count - a.count || (a.feature < b.feature ? -1 : 1));
      };
      return { allowed: answer('allowed'), denied: answer('denied') };
    },
  };
}

/** Adds `count` to the sum at `index`. */
function addAt(sums: Float64Array, index: number, count: number): void {
  sums[index] = (sums[index] as number) + count;
}
