// Usage history never holds the event loop, whatever its size: a year of history with 1 KB
// client names in a real SQLite file is queried (/usage, /usage/top), compacted the hourly
// way and compacted whole as a file never compacted, while /check is asked over HTTP every
// 10 ms. No turn of the event loop may hold 50 ms of this process's CPU time, and the
// slowest /check must answer within 50 ms of when it was due unless the machine starved the
// process: on a shared machine the operating system can leave a runnable thread waiting for
// a core for 100 ms or more, which no slicing prevents, and a busy disk can hold a page read
// inside SQLite's synchronous call as long, so the wall-clock bound holds only for a run whose
// main thread never waited 20 ms for a core nor slept 20 ms inside one turn (Linux's
// schedstat, watchBlocks); the CPU bound holds always. Compaction must leave what
// it left before (src/usage/sqlite-maintenance.test.ts compares them row by row on small files). Memgate up to 4cda801 held the loop for a whole statement: hundreds
// of ms for a query or an hour's compaction here, and about half an hour for the whole file.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import Database from 'libsql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { parseRetention, type Archive } from '../src/config/retention.js';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { UsageRecorder } from '../src/usage/recorder.js';
import { openSqliteUsage, type SqliteUsageStore } from '../src/usage/sqlite-store.js';
import { createUsageHistory, type TopAnswer } from '../src/usage/usage-history.js';
import {
  DAY,
  fillStallYearApart,
  heavyAllowed,
  heavyDenied,
  HOUR,
  probeWhile,
  STALL_END as END,
  type Probed,
} from '../scripts/bench/usage-stall.js';

const ARCHIVES = parseRetention(DEFAULTS.usageRetention) as readonly Archive[];
/** Just past the grace after END: the last hour and the last day are due for compaction. */
const NOW = END + 700;
/** Each period keeps its heaviest allowed and heaviest denied client. */
const TOP = 1;
const PROBE_EVERY_MS = 10;
const SLOWEST_PROBE_MS = 50;

const dir = mkdtempSync(join(tmpdir(), 'memgate-usage-stall-'));
const path = join(dir, 'usage.db');
let clockSeconds = NOW;
let store: SqliteUsageStore;
let recorder: UsageRecorder;
let url: string;
let closeAll: (() => Promise<void>) | undefined;

let filledInSeconds = 0;

beforeAll(async () => {
  const started = performance.now();
  await fillStallYearApart(path);
  filledInSeconds = (performance.now() - started) / 1000;
  store = openSqliteUsage({ path, archives: ARCHIVES, top: TOP, nowSeconds: () => clockSeconds });
  recorder = new UsageRecorder({
    stores: { sqlite: store },
    readFrom: 'sqlite',
    flushSeconds: DEFAULTS.usageFlushSeconds,
    top: TOP,
    now: () => clockSeconds * 1000,
  });
  const history = createUsageHistory({
    reader: store,
    recorder,
    archives: ARCHIVES,
    policyEvents: () => ['login'],
    now: () => clockSeconds * 1000,
  });
  const counters = createEmbeddedStore();
  const limiter = createLimiter({
    // The probes count under an event of their own: what memory adds to login's answers is nothing.
    policies: {
      events: { login: { limits: [{ limit: 1, window: '1m' }] }, probe: { limits: [{ limit: 1e9, window: '1m' }] } },
    },
    store: counters,
    onDecision: ({ kind, event, feature, decision }) => {
      if (kind === 'check') recorder.record(event, feature, decision);
    },
  });
  const app = buildApp({ limiter, store: counters, usage: history });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  closeAll = async () => {
    await app.close();
    await recorder.close();
    await store.close();
  };
  // A first request opens the connection the probes reuse.
  await (await fetch(`${url}/check?event=probe&feature=probe`)).arrayBuffer();
}, 120_000);

afterAll(async () => {
  // Absent when the set-up failed: its own error is the one to read.
  await closeAll?.();
  rmSync(dir, { recursive: true, force: true });
});

// What these tests bound is how long /check waits, not how long they take: a year's
// compaction took 17 s alone and more on a busy machine, past the default 20 s, and a test
// that runs out leaves its work running into the next (a compaction still under way when the
// next test deletes its marks leaves the hours uncompacted).
describe('a year of usage history with 1 KB client names', { timeout: 120_000 }, () => {
  it('is a file of about a GB', async ({ annotate }) => {
    const { size } = statSync(path);
    await annotate(`${Math.round(size / 2 ** 20)} MB, written in ${filledInSeconds.toFixed(1)} s`);
    expect(size).toBeGreaterThan(150 * 2 ** 20);
  });

  it('answers /usage and /usage/top while /check answers within 50 ms, each time', async ({ annotate }) => {
    const queries = [
      'usage/top?event=login&from=-1d',
      'usage/top?event=login&from=-30d',
      'usage/top?event=login&from=-1y&limit=1000',
      'usage?event=login&from=-1y',
      'usage?event=login&from=-2h&step=1',
      `usage?event=login&from=-30d&feature=${encodeURIComponent(heavyAllowed(364))}`,
    ];
    const answers = new Map<string, unknown>();
    // The queries change nothing, so a run the machine disturbed (a neighbour's burst, a
    // collection of this process's heap) is asked again, up to three times: a store that
    // holds the loop for a statement stalls every run.
    const runs: Stalls[] = [];
    do {
      runs.push(
        await whileProbing(async () => {
          for (let round = 0; round < 3; round++) {
            for (const query of queries) {
              const answer = await fetch(`${url}/${query}`);
              expect(answer.status, query).toBe(200);
              answers.set(query, await answer.json());
            }
          }
        }),
      );
    } while (runs.length < 3 && !withinBounds(runs.at(-1) as Stalls));
    await annotate(runs.map(report).join('\n'));
    expectNoStall(runs.at(-1) as Stalls);
    // The same answers as one statement over the whole range.
    const day = answers.get(queries[0] as string) as TopAnswer;
    expect(day.allowed).toEqual(topAsOneStatement(day.from, day.until, 60, 'allowed', 20));
    expect(day.allowed[0]?.feature).toBe(heavyAllowed(364));
    const year = answers.get(queries[2] as string) as TopAnswer;
    expect(year.denied).toEqual(topAsOneStatement(year.from, year.until, DAY, 'denied', 1000));
    expect(year.denied).toHaveLength(365);
    const points = answers.get(queries[3] as string) as { points: { allowed: number }[] };
    expect(points.points.reduce((sum, { allowed }) => sum + allowed, 0)).toBe(365 * 24 * 3600);
  });

  it('refuses a query past its row budget with a 400 usage_query_too_large', async () => {
    const small = openSqliteUsage({ path, archives: ARCHIVES, top: TOP, queryRowBudget: 10_000 });
    const history = createUsageHistory({
      reader: small,
      archives: ARCHIVES,
      policyEvents: () => ['login'],
      now: () => clockSeconds * 1000,
    });
    const counters = createEmbeddedStore();
    const limiter = createLimiter({
      policies: { events: { login: { limits: [{ limit: 1, window: '1m' }] } } },
      store: counters,
    });
    const app = buildApp({ limiter, store: counters, usage: history });
    const answer = await app.inject({ method: 'GET', url: '/usage/top?event=login&from=-1d' });
    expect(answer.statusCode).toBe(400);
    expect(answer.json()).toMatchObject({ error: { code: 'usage_query_too_large' } });
    expect(answer.json<{ error: { message: string } }>().error.message).toContain('more than 10,000 rows');
    await app.close();
    await small.close();
  });

  it('compacts the hour and the day that have just ended while /check answers within 50 ms', async ({ annotate }) => {
    const stalls = await whileProbing(async () => {
      // The probes' decisions make a batch; writing it starts the store's pruning and compaction.
      clockSeconds += 1;
      await recorder.flush();
      await store.idle();
    });
    await annotate(report(stalls));
    expectNoStall(stalls);
    const lastHour = END - HOUR;
    expect(clientsOf(HOUR, lastHour)).toEqual([heavyAllowed(364), heavyDenied(364)].sort());
    expect(new Set(clientsOf(60, lastHour, HOUR))).toEqual(new Set([heavyAllowed(364), heavyDenied(364)]));
    expect(clientsOf(DAY, END - DAY)).toEqual([heavyAllowed(364), heavyDenied(364)].sort());
    // The hour before was compacted before (its mark says so): its light clients stay.
    expect(clientsOf(HOUR, lastHour - HOUR)).toHaveLength(4 + 40);
  });

  it('compacts a year never compacted, period by period, while /check answers within 50 ms', async ({ annotate }) => {
    const heavy = "(feature LIKE 'allowed-%' OR feature LIKE 'denied-%')";
    const db = new Database(path);
    db.exec('DELETE FROM usage_compacted');
    const coarse = count(db, `resolution > 60 AND ${heavy}`);
    // What pruning keeps of the minute archive at the clock below.
    const minutes = count(db, `resolution = 60 AND ${heavy} AND t >= ${clockSeconds + 61 - 30 * DAY}`);
    db.close();
    const stalls = await whileProbing(async () => {
      // A minute on: pruning and compaction are due again.
      clockSeconds += 61;
      await recorder.flush();
      await store.idle();
    });
    await annotate(report(stalls));
    expectNoStall(stalls);
    const after = new Database(path);
    // Every light client went, from every period; every heavy one kept all its points but
    // the minutes pruning took (past the minute archive's 30 days).
    expect(count(after, `NOT ${heavy}`)).toBe(0);
    expect(count(after, `resolution > 60 AND ${heavy}`)).toBe(coarse);
    expect(count(after, 'resolution = 60')).toBe(minutes);
    expect(count(after, `resolution = ${HOUR}`)).toBe(2 * 365 * 24);
    expect(count(after, `resolution = ${DAY}`)).toBe(2 * 365);
    expect(after.prepare('SELECT resolution, until FROM usage_compacted ORDER BY resolution').raw().all()).toEqual([
      [HOUR, END],
      [DAY, END],
    ]);
    after.close();
  });
});

/**
 * Runs `work` while another process asks /check every 10 ms: how late the slowest answer
 * was from when it was due, the longest this process's event loop was held, and the
 * longest the store held it in one turn.
 */
async function whileProbing(work: () => Promise<void>): Promise<Stalls> {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const blocks = watchBlocks();
  try {
    const probed = await probeWhile(`${url}/check?event=probe&feature=probe`, PROBE_EVERY_MS, work);
    return {
      ...probed,
      loopMaxMs: Math.round(loop.max / 1e6),
      sliceMs: Math.round(store.longestSliceMs),
      ...blocks.stop(),
    };
  } finally {
    loop.disable();
  }
}

interface Stalls extends Probed {
  readonly loopMaxMs: number;
  readonly sliceMs: number;
  /** The most time the main thread ran between two ticks of a 1 ms timer: the longest the loop was held by work. */
  readonly blockCpuMs: number;
  /** The most time the main thread waited for a core between two ticks: runnable, but the machine ran others. */
  readonly starvedMs: number;
  /** The most time the main thread slept between two ticks, neither running nor runnable: a read from a busy disk. */
  readonly sleptMs: number;
}

/** How long a process waiting for a core or a disk still counts as running: beyond it, wall-clock bounds are the machine's. */
const STARVED_MS = 20;

/**
 * The main thread's time on a core and waiting for one, in ms, from Linux's per-thread
 * scheduler statistics (/proc/thread-self/schedstat: ns running, ns runnable on a run queue).
 * Waiting on a run queue is the machine's doing; blocking on I/O is not counted there.
 */
function schedstat(): { runningMs: number; waitingMs: number } {
  if (!HAS_SCHEDSTAT) {
    // Without it (not Linux): the process's CPU time, and no waiting known, so every bound holds.
    const { user, system } = process.cpuUsage();
    return { runningMs: (user + system) / 1000, waitingMs: 0 };
  }
  const [running = '0', waiting = '0'] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
  return { runningMs: Number(running) / 1e6, waitingMs: Number(waiting) / 1e6 };
}

const HAS_SCHEDSTAT = existsSync('/proc/thread-self/schedstat');

/** Ticks every millisecond, noting the main thread's time running and waiting for a core between ticks. */
function watchBlocks(): { stop(): { blockCpuMs: number; starvedMs: number; sleptMs: number } } {
  let last = { ...schedstat(), at: performance.now() };
  let blockCpuMs = 0;
  let starvedMs = 0;
  let sleptMs = 0;
  const tick = () => {
    const now = { ...schedstat(), at: performance.now() };
    const running = now.runningMs - last.runningMs;
    const waiting = now.waitingMs - last.waitingMs;
    blockCpuMs = Math.max(blockCpuMs, running);
    starvedMs = Math.max(starvedMs, waiting);
    // Between ticks 1 ms apart, the rest of the gap is sleep: idle in the loop for about a
    // millisecond, or blocked inside a synchronous call (a page read waiting on the disk).
    if (HAS_SCHEDSTAT) sleptMs = Math.max(sleptMs, now.at - last.at - running - waiting - 1);
    last = now;
  };
  const timer = setInterval(tick, 1);
  return {
    stop: () => {
      clearInterval(timer);
      return { blockCpuMs: Math.round(blockCpuMs), starvedMs: Math.round(starvedMs), sleptMs: Math.round(sleptMs) };
    },
  };
}

/**
 * The bounds: no turn holds 50 ms of CPU; and on a machine that never starved the process
 * nor held it on its disk, no /check waits 50 ms.
 */
function expectNoStall(stalls: Stalls): void {
  expect(stalls.blockCpuMs, report(stalls)).toBeLessThan(SLOWEST_PROBE_MS);
  if (!machineHeld(stalls)) expect(stalls.slowestMs, report(stalls)).toBeLessThan(SLOWEST_PROBE_MS);
}

function withinBounds(stalls: Stalls): boolean {
  return stalls.blockCpuMs < SLOWEST_PROBE_MS && (machineHeld(stalls) || stalls.slowestMs < SLOWEST_PROBE_MS);
}

function machineHeld({ starvedMs, sleptMs }: Stalls): boolean {
  return starvedMs >= STARVED_MS || sleptMs >= STARVED_MS;
}

function report(stalls: Stalls): string {
  const { slowestMs, probes, seconds, loopMaxMs, sliceMs, blockCpuMs, starvedMs, sleptMs } = stalls;
  return `slowest /check ${slowestMs} ms of ${probes} in ${seconds.toFixed(1)} s; the event loop's longest delay ${loopMaxMs} ms, its longest turn ${blockCpuMs} ms of CPU; the store's longest turn so far ${sliceMs} ms; the process waited up to ${starvedMs} ms for a core and slept up to ${sleptMs} ms in one turn${machineHeld(stalls) ? ' (the machine held the process: the wall-clock bound is not asserted)' : ''}`;
}

/** The clients of one period of one archive, by name. */
function clientsOf(resolution: number, from: number, span = resolution): string[] {
  const db = new Database(path);
  const found = db
    .prepare(
      'SELECT DISTINCT feature FROM usage_clients WHERE resolution = ? AND event = ? AND t >= ? AND t < ? ORDER BY feature',
    )
    .raw()
    .all(resolution, 'login', from, from + span) as [string][];
  db.close();
  return found.map(([feature]) => feature);
}

function count(db: Database.Database, where: string): number {
  const sql = `SELECT count(*) AS n FROM usage_clients WHERE event = 'login' AND ${where}`;
  return (db.prepare(sql).get() as { n: number }).n;
}

/** /usage/top's ranking as one statement over every row of the range (memgate's up to 4cda801). */
function topAsOneStatement(
  from: number,
  until: number,
  resolution: number,
  outcome: 'allowed' | 'denied',
  limit: number,
) {
  const db = new Database(path);
  const found = db
    .prepare(
      `SELECT feature, sum(${outcome}) AS count FROM usage_clients
       WHERE resolution = ? AND event = 'login' AND t >= ? AND t < ?
       GROUP BY feature HAVING count > 0 ORDER BY count DESC, feature LIMIT ?`,
    )
    .all(resolution, from, until, limit) as { feature: string; count: number }[];
  db.close();
  return found
    .map(({ feature, count }) => ({ feature, count }))
    .sort((a, b) => b.count - a.count || (a.feature < b.feature ? -1 : 1));
}
