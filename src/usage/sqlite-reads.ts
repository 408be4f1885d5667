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
const RANK_CHUNK = 5000;

export function sqliteReads(db: Database.Database, { chunkRows, rowBudget }: SqliteReadOptions): SqliteReads {
  // Each from just after the last row read: `t` is unique within an event's points, and within a client's.
  const points = db.prepare(`
    SELECT t, allowed, denied, degraded, shadow_denied, named_allowed, named_denied FROM usage_points
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
      const answer: Mutable<SeriesPoint>[] = [];
      for (let t = from; t < until; t += step) answer.push({ t, allowed: 0, denied: 0, degraded: 0, shadow_denied: 0 });
      /** The point whose step holds second `t`, as `t - t % step` groups them. */
      const pointAt = (t: number) => {
        const start = t - (t % step);
        return (start - from) % step === 0 ? answer[(start - from) / step] : undefined;
      };
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
        return answer;
      }
      yield* readInOrder(
        read,
        what,
        first,
        (after, limit) => clientPoints.all(resolution, event, feature, after, until, limit) as PointRow[],
        add,
      );
      // What the event counted less what its named clients did: what went to clients unnamed.
      const unnamed = answer.map(() => ({ allowed: 0, denied: 0 }));
      yield* readInOrder(
        read,
        what,
        first,
        (after, limit) => points.all(resolution, event, after, until, limit) as PointRow[],
        (row: PointRow) => {
          const point = pointAt(row.t);
          const counts = point ? unnamed[(point.t - from) / step] : undefined;
          if (!counts) return;
          counts.allowed += row.allowed - (row.named_allowed ?? 0);
          counts.denied += row.denied - (row.named_denied ?? 0);
        },
      );
      answer.forEach((point, index) => {
        const counts = unnamed[index] as { allowed: number; denied: number };
        point.unnamed = { allowed: counts.allowed, denied: counts.denied };
      });
      return answer;

      function add(row: PointRow) {
        const point = pointAt(row.t);
        if (!point) return;
        point.allowed += row.allowed;
        point.denied += row.denied;
        point.degraded += row.degraded ?? 0;
        // An event's only: a client's rows have no degraded or shadow_denied.
        point.shadow_denied += row.shadow_denied ?? 0;
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

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
