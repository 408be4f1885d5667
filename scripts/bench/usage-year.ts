// A year of one event's usage history in an embedded SQLite file, written the way the
// service writes it (openSqliteUsage's write(), batches as the recorder makes them), but
// only what the retention keeps: a year-old file without running a service for a year.
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import Database from 'libsql';
import { randomSource } from '../accuracy/traffic.js';
import type { Archive } from '../../src/config/retention.js';
import { openSqliteUsage } from '../../src/usage/sqlite-store.js';
import type { ClientCount, Counts, MinuteTop, SecondCounts, UsageBatch } from '../../src/usage/usage-store.js';

const DAY = 86_400;
const YEAR = 365 * DAY;
/** The recorder's default flush (MEMGATE_USAGE_FLUSH_S): a batch of the last day holds 15 seconds. */
const FLUSH_SECONDS = 15;
/** Requests a second on average, over the week. */
export const MEAN_RATE = 200;
/** Share of a minute's requests refused, on average. */
const DENIED_SHARE = 0.03;
/** One minute in this many is an outage in which a fifth of the decisions are degraded. */
const OUTAGE_EVERY_MINUTES = 5000;
/** Heavy hitters a minute: MEMGATE_USAGE_TOP's default. */
export const TOP = 20;
/** Of the top, how many stay the same all day; the others change every hour. */
const STEADY = 10;
/** Clients over their limit a day, and their shares of the denials. */
const ABUSER_SHARES = [0.5, 0.25, 0.12, 0.08, 0.05];
/** The top clients' shares of allowed requests: Zipf 1.1 over 10,000 clients. */
const ZIPF_SHARES = zipfShares(10_000, 1.1, TOP);

export interface YearFillOptions {
  readonly path: string;
  readonly event: string;
  readonly archives: readonly Archive[];
  /** The fill's `now`, epoch seconds, a whole minute: the year ends here. */
  readonly end: number;
  /** With TOP heavy hitters a minute, or the event's counts alone. */
  readonly heavyHitters: boolean;
  /** Seeds the traffic: the same seed, the same counts. */
  readonly seed?: number;
}

export interface YearFilled {
  /** The first second written. */
  readonly start: number;
  readonly batches: number;
  readonly seconds: number;
  /** Every decision written, per hour (its first second): what a query over them must add up to. */
  readonly hours: ReadonlyMap<number, Counts>;
}

/**
 * Writes a year ending at `end` into a new file at `path` and closes it. The store rolls
 * every row up into every archive and prunes what is past an archive's retention; so that
 * the file ends as a year-old service's would, with nothing more:
 * - older than 30 days (the minute archive): one row an hour holding that hour's sums, in a
 *   batch a day; only the hour archive keeps them;
 * - from 30 days to a day ago: one row a minute, in a batch an hour;
 * - the last day: one row a second, in batches of 15 seconds with each minute's heaviest
 *   clients in the batch after the minute ended, as the recorder flushes them; the
 *   usage_batches table keeps a day of batches;
 * and the store's clock follows the data, so that it compacts each hour's and day's clients
 * once they have ended and prunes each archive and the batches as the service would.
 * Every count comes from the same minutes: a year of minutes at MEAN_RATE a second with a
 * daily and a weekly swing.
 */
export async function fillYear({
  path,
  event,
  archives,
  end,
  heavyHitters,
  seed = 1,
}: YearFillOptions): Promise<YearFilled> {
  const started = performance.now();
  const start = Math.floor((end - YEAR) / 3600) * 3600;
  const minuteArchiveStart = Math.floor((end - 30 * DAY) / 3600) * 3600;
  const lastDay = end - DAY;
  // The store's clock follows the data, as in a year of service: each period is compacted
  // once it has ended, points and batches are pruned as they age.
  let clock = start;
  const store = openSqliteUsage({ path, archives, nowSeconds: () => clock });
  const instance = randomUUID();
  let sequence = 0;
  const write = async (seconds: SecondCounts[], minutes: MinuteTop[]) => {
    const batch: UsageBatch = { instance, sequence: sequence++, seconds, minutes };
    await store.write(batch);
    // Let timers (the bench's progress) run: the driver is synchronous.
    if (sequence % 200 === 0) await new Promise((resolve) => setImmediate(resolve));
  };
  const random = randomSource(seed);
  const hours = new Map<number, Counts>();
  const tops = (t: number, counts: Counts): MinuteTop[] =>
    heavyHitters ? [{ event, t, ...minuteClients(t, counts) }] : [];

  let seconds: SecondCounts[] = [];
  let minutes: MinuteTop[] = [];
  let hour: { counts: Counts; allowed: Map<string, number>; denied: Map<string, number> } | undefined;
  for (let t = start; t < end; t += 60) {
    const counts = minuteCounts(t, random);
    const hourStart = t - (t % 3600);
    const sum = hours.get(hourStart) ?? { allowed: 0, denied: 0, degraded: 0 };
    hours.set(hourStart, add(sum, counts));
    if (t < minuteArchiveStart) {
      // An hour's row and its clients' sums, in a batch a day.
      hour ??= { counts: { allowed: 0, denied: 0, degraded: 0 }, allowed: new Map(), denied: new Map() };
      add(hour.counts, counts);
      for (const { allowed, denied } of tops(t, counts)) {
        for (const { feature, count } of allowed) hour.allowed.set(feature, (hour.allowed.get(feature) ?? 0) + count);
        for (const { feature, count } of denied) hour.denied.set(feature, (hour.denied.get(feature) ?? 0) + count);
      }
      if ((t + 60) % 3600 === 0) {
        clock = t + 60;
        seconds.push({ event, t: hourStart, ...hour.counts });
        if (heavyHitters) minutes.push({ event, t: hourStart, allowed: list(hour.allowed), denied: list(hour.denied) });
        hour = undefined;
        if ((t + 60) % DAY === 0 || t + 60 === minuteArchiveStart) {
          await write(seconds, minutes);
          [seconds, minutes] = [[], []];
        }
      }
    } else if (t < lastDay - (lastDay % 60)) {
      // A minute's row and its clients, in a batch an hour.
      seconds.push({ event, t, ...counts });
      minutes.push(...tops(t, counts));
      if ((t + 60) % 3600 === 0 || t + 60 === lastDay - (lastDay % 60)) {
        clock = t + 60;
        await write(seconds, minutes);
        [seconds, minutes] = [[], []];
      }
    } else {
      // A second's rows, 15 to a batch; the minute's clients once it has ended.
      clock = end - 60;
      const split = splitMinute(counts, random);
      for (let part = 0; part < 60 / FLUSH_SECONDS; part++) {
        const batchSeconds = split
          .slice(part * FLUSH_SECONDS, (part + 1) * FLUSH_SECONDS)
          .map((second, i) => ({ event, t: t + part * FLUSH_SECONDS + i, ...second }));
        const last = part === 60 / FLUSH_SECONDS - 1;
        // The last batch is written at `end`: a minute past the one before, so the store prunes.
        if (last && t + 60 === end) clock = end;
        await write(batchSeconds, last ? tops(t, counts) : []);
      }
    }
  }
  // Pruning and compaction run in slices after the writes: the file ends as they leave it.
  await store.idle();
  await store.close();
  return { start, batches: sequence, seconds: (performance.now() - started) / 1000, hours };
}

/** A file once VACUUM has packed it: its size, and each table's bytes (SQLite's dbstat). */
export interface Weighed {
  readonly fileBytes: number;
  readonly tables: Readonly<Record<string, number>>;
}

/**
 * Packs the file with VACUUM and weighs it. In WAL mode VACUUM writes the packed copy into
 * the log: the checkpoint puts it in the file, and truncates the log, before it is measured.
 */
export async function vacuumAndWeigh(path: string): Promise<Weighed> {
  const db = new Database(path);
  db.exec('VACUUM');
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  const tables = db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all() as {
    name: string;
    bytes: number;
  }[];
  db.close();
  const size = async (file: string) => (await stat(file).catch(() => undefined))?.size ?? 0;
  return {
    fileBytes: (await size(path)) + (await size(`${path}-wal`)),
    tables: Object.fromEntries(tables.map(({ name, bytes }) => [name, bytes])),
  };
}

/** Rows of each archive, the event's own and its clients', and of the batch table. */
export function rowCounts(
  path: string,
): { resolution: number; whole: number; clients: number }[] & { batches: number } {
  const db = new Database(path);
  const count = (table: string) =>
    new Map(
      (
        db.prepare(`SELECT resolution, count(*) AS n FROM ${table} GROUP BY resolution`).all() as {
          resolution: number;
          n: number;
        }[]
      ).map(({ resolution, n }) => [resolution, n]),
    );
  const whole = count('usage_points');
  const clients = count('usage_clients');
  const rows = [...new Set([...whole.keys(), ...clients.keys()])]
    .sort((a, b) => a - b)
    .map((resolution) => ({ resolution, whole: whole.get(resolution) ?? 0, clients: clients.get(resolution) ?? 0 }));
  const { batches } = db.prepare('SELECT count(*) AS batches FROM usage_batches').get() as { batches: number };
  db.close();
  return Object.assign(rows, { batches });
}

/**
 * How long the recorder's flush takes on this file, with and without the pruning the store
 * starts once a minute (until that pruning has ended), and the longest the store held the
 * event loop in one turn: `rounds` of a 15-second batch written a minute after the last
 * prune, then one written a second later. Adds those seconds to the file.
 */
export async function timeFlushes(
  path: string,
  { event, archives, end, rounds }: { event: string; archives: readonly Archive[]; end: number; rounds: number },
): Promise<{ pruning: number[]; plain: number[]; longestSliceMs: number }> {
  let clock = end;
  const store = openSqliteUsage({ path, archives, nowSeconds: () => clock });
  const instance = randomUUID();
  const times = { pruning: [] as number[], plain: [] as number[] };
  for (let round = 0; round < 2 * rounds; round++) {
    const t = end + round * FLUSH_SECONDS;
    const seconds = Array.from({ length: FLUSH_SECONDS }, (_, i) => ({
      event,
      t: t + i,
      allowed: MEAN_RATE,
      denied: 0,
      degraded: 0,
    }));
    // Even rounds a minute after the last prune (the store prunes), odd ones a second later (it does not).
    clock = round % 2 === 0 ? end + 60 * (round / 2 + 1) : clock + 1;
    const started = performance.now();
    await store.write({ instance, sequence: round, seconds, minutes: [] });
    await store.idle();
    (round % 2 === 0 ? times.pruning : times.plain).push(performance.now() - started);
  }
  await store.close();
  return { ...times, longestSliceMs: store.longestSliceMs };
}

/** One minute's decisions: MEAN_RATE a second swinging ±60% over the day, 70% at weekends, ±10% noise. */
function minuteCounts(t: number, random: () => number): Counts {
  const hourOfDay = (t % DAY) / 3600;
  // 1970-01-01 was a Thursday: day 2 and 3 of each week are Saturday and Sunday.
  const weekend = [2, 3].includes(Math.floor(t / DAY) % 7) ? 0.7 : 1;
  const rate = MEAN_RATE * weekend * (1 + 0.6 * Math.sin((2 * Math.PI * (hourOfDay - 8)) / 24));
  const total = Math.round(rate * 60 * (0.9 + 0.2 * random()));
  const degraded = random() < 1 / OUTAGE_EVERY_MINUTES ? Math.round(total / 5) : 0;
  const denied = Math.round((total - degraded) * DENIED_SHARE * (0.5 + random()));
  return { allowed: total - degraded - denied, denied, degraded };
}

/** A minute's counts over its 60 seconds, unevenly, adding up to the minute's. */
function splitMinute(counts: Counts, random: () => number): Counts[] {
  const weights = Array.from({ length: 60 }, () => 0.7 + 0.6 * random());
  const total = weights.reduce((a, b) => a + b, 0);
  let before = 0;
  return weights.map((weight) => {
    const share = (cut: number) => ({
      allowed: Math.round(counts.allowed * cut),
      denied: Math.round(counts.denied * cut),
      degraded: Math.round(counts.degraded * cut),
    });
    const from = share(before / total);
    before += weight;
    const to = share(before / total);
    return {
      allowed: to.allowed - from.allowed,
      denied: to.denied - from.denied,
      degraded: to.degraded - from.degraded,
    };
  });
}

/**
 * The minute's heaviest clients: TOP allowed, the first STEADY the same all day and the
 * others new each hour, with Zipf shares of the allowed requests; and the day's abusers
 * with shares of the denials. Addresses as clients are usually named.
 */
function minuteClients(t: number, counts: Counts): { allowed: ClientCount[]; denied: ClientCount[] } {
  const day = Math.floor(t / DAY);
  const hour = Math.floor(t / 3600);
  const address = (prefix: string, id: number) => `${prefix}.${(id >> 16) & 255}.${(id >> 8) & 255}.${id & 255}`;
  const allowed = ZIPF_SHARES.map((share, rank) => ({
    feature: rank < STEADY ? address('10', day * STEADY + rank) : address('172', hour * (TOP - STEADY) + rank - STEADY),
    count: Math.floor(counts.allowed * share),
  }));
  const denied = ABUSER_SHARES.map((share, k) => ({
    feature: address('100', day * ABUSER_SHARES.length + k),
    count: Math.floor(counts.denied * share),
  }));
  return { allowed: allowed.filter(({ count }) => count > 0), denied: denied.filter(({ count }) => count > 0) };
}

function zipfShares(clients: number, exponent: number, top: number): number[] {
  let total = 0;
  for (let rank = 1; rank <= clients; rank++) total += 1 / rank ** exponent;
  return Array.from({ length: top }, (_, i) => 1 / (i + 1) ** exponent / total);
}

function add(sum: Counts, counts: Counts): Counts {
  sum.allowed += counts.allowed;
  sum.denied += counts.denied;
  sum.degraded += counts.degraded;
  return sum;
}

function list(counts: ReadonlyMap<string, number>): ClientCount[] {
  return [...counts].map(([feature, count]) => ({ feature, count })).sort((a, b) => b.count - a.count);
}
