// A year of usage history with 1 KB client names, written straight into a SQLite file in
// seconds, and a /check prober in a process of its own: what test/usage-stall.test.ts uses
// to show that querying and compacting the history never holds memgate's event loop.
import { spawn } from 'node:child_process';
import { closeSync, fsyncSync, openSync } from 'node:fs';
import Database from 'libsql';
import { createSchema } from '../../src/usage/sqlite-schema.js';

export const HOUR = 3600;
export const DAY = 86_400;
/** The history's last second is just before STALL_END, a midnight; it starts a year before. */
export const STALL_END = Date.UTC(2026, 10, 2) / 1000;
const START = STALL_END - 365 * DAY;

/** A client name of 1 KB, as any denied client may choose. */
export const client = (label: string) => label.padEnd(1024, '~');
/** The heaviest client of each day, allowed and denied, in 6 minutes of each of its hours. */
export const heavyAllowed = (day: number) => client(`allowed-${day}`);
export const heavyDenied = (day: number) => client(`denied-${day}`);

/**
 * A year of one event as a year-old file holds it, written row by row in one transaction
 * (about a GB: a name of 1 KB does not fit in a 4 KB page's cell, so each client row takes
 * an overflow page in the table and another in the index):
 * points a second for the last 6 hours, a minute for the last 30 days and an hour for the
 * year; clients in the minute archive for 30 days, and in the hour and day archives for the
 * year. Each hour: a heavy allowed and a heavy denied client (a name a day) in 6 of its
 * minutes, and two light clients with new names; the last day, 40 more new names an hour,
 * in every minute (what /usage/top over a day reads). Compaction is marked done up to the
 * last hour and the last day, as an hourly compaction would have left it, light clients and
 * all (as if they had come late).
 */
export function fillStallYear(file: string): void {
  const db = new Database(file);
  db.exec('PRAGMA journal_mode = OFF');
  db.exec('PRAGMA synchronous = OFF');
  db.exec('PRAGMA cache_size = -1000000');
  createSchema(db);
  // The index is built once at the end, in order, instead of row by row.
  db.exec('DROP INDEX usage_clients_by_feature');
  // With the sums of the point's client rows, as the store keeps them (sqlite-schema.ts).
  const point = db.prepare(
    'INSERT INTO usage_points (resolution, event, t, allowed, denied, degraded, named_allowed, named_denied) VALUES (?, ?, ?, ?, ?, 0, ?, ?)',
  );
  const row = db.prepare('INSERT INTO usage_clients VALUES (?, ?, ?, ?, ?, ?)');
  db.transaction(() => {
    for (let day = 0; day < 365; day++) {
      const dayStart = START + day * DAY;
      const dayRows = new Map<string, [number, number]>();
      for (let hour = 0; hour < 24; hour++) {
        const t = dayStart + hour * HOUR;
        const minutes: [number, string, number, number][] = [];
        for (let minute = 0; minute < 60; minute += 10) {
          minutes.push([t + minute * 60, heavyAllowed(day), 100, 0], [t + minute * 60, heavyDenied(day), 0, 100]);
        }
        minutes.push([t, client(`light-${t}-0`), 1, 0], [t + 60, client(`light-${t}-1`), 1, 0]);
        if (day === 364) {
          for (let i = 0; i < 40; i++) {
            for (let minute = 0; minute < 60; minute++) minutes.push([t + minute * 60, client(`top-${t}-${i}`), 1, 0]);
          }
        }
        const hourRows = new Map<string, [number, number]>();
        const minuteNamed = new Map<number, [number, number]>();
        for (const [at, feature, allowed, denied] of minutes) {
          if (at >= STALL_END - 30 * DAY) {
            row.run(60, 'login', at, feature, allowed, denied);
            const named = minuteNamed.get(at) ?? [0, 0];
            minuteNamed.set(at, [named[0] + allowed, named[1] + denied]);
          }
          for (const sums of [hourRows, dayRows]) {
            const sum = sums.get(feature) ?? [0, 0];
            sums.set(feature, [sum[0] + allowed, sum[1] + denied]);
          }
        }
        const hourNamed = { allowed: 0, denied: 0 };
        for (const [feature, [allowed, denied]] of hourRows) {
          row.run(HOUR, 'login', t, feature, allowed, denied);
          hourNamed.allowed += allowed;
          hourNamed.denied += denied;
        }
        point.run(HOUR, 'login', t, 3600, 360, hourNamed.allowed, hourNamed.denied);
        for (let minute = 0; minute < 60 && t >= STALL_END - 30 * DAY; minute++) {
          const [allowed, denied] = minuteNamed.get(t + minute * 60) ?? [0, 0];
          point.run(60, 'login', t + minute * 60, 60, 6, allowed, denied);
        }
        for (let second = 0; second < 3600 && t >= STALL_END - 6 * HOUR; second++) {
          point.run(1, 'login', t + second, 1, second % 10 === 0 ? 1 : 0, 0, 0);
        }
      }
      for (const [feature, [allowed, denied]] of dayRows) row.run(DAY, 'login', dayStart, feature, allowed, denied);
    }
    db.prepare('INSERT INTO usage_events VALUES (?, ?, ?)').run('login', START, STALL_END - 1);
    db.prepare('INSERT INTO usage_compacted VALUES (?, ?), (?, ?)').run(HOUR, STALL_END - HOUR, DAY, STALL_END - DAY);
  })();
  db.exec('CREATE INDEX usage_clients_by_feature ON usage_clients (resolution, event, feature, t, allowed, denied)');
  db.exec('PRAGMA journal_mode = WAL');
  db.close();
  // On disk, as a file a service has run on is: what the build left in the page cache is not
  // the service's to write back at its first checkpoint.
  const fd = openSync(file, 'r+');
  fsyncSync(fd);
  closeSync(fd);
}

/**
 * fillStallYear in a process of its own: the garbage of writing a GB stays there, and is
 * not collected later in the middle of what the caller measures.
 */
export async function fillStallYearApart(file: string): Promise<void> {
  const fill = `import { fillStallYear } from ${JSON.stringify(import.meta.url)}; fillStallYear(process.argv[1]);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', fill, file], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`writing the year of usage history to ${file} failed: exit ${code}`);
}

export interface Probed {
  /** The latest answer, in ms from when its request was due. */
  readonly slowestMs: number;
  /** The 99th percentile of the answers' times, in ms from when each was due. */
  readonly p99Ms: number;
  readonly probes: number;
  readonly seconds: number;
}

/**
 * Asks `url` every `everyMs` from another process while `work` runs, after a second of warming
 * up that is not counted: the prober's own loop
 * is never the one held, and each request counts from when it was due, so one the prober
 * sent late (its timer fired late) still counts from then.
 */
export async function probeWhile(
  url: string,
  everyMs: number,
  work: () => Promise<void>,
  { onStarted }: { readonly onStarted?: (proberPid: number) => void } = {},
): Promise<Probed> {
  const prober = spawn(process.execPath, ['--input-type=module', '-e', PROBER, url, String(everyMs)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  if (prober.pid !== undefined) onStarted?.(prober.pid);
  let output = '';
  prober.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => prober.on('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    prober.stdout.once('data', () => {
      resolve();
    });
    prober.once('exit', () => {
      reject(new Error('the prober stopped before it began'));
    });
  });
  try {
    await work();
  } finally {
    prober.stdin.end();
  }
  const code = await exited;
  const result = output.trim().split('\n').at(-1) ?? '';
  if (code !== 0) throw new Error(`the prober exited with ${code}: ${output}`);
  return JSON.parse(result) as Probed;
}

/**
 * The prober: `ready` once warm, then a line of JSON when its input ends. node:http on one
 * kept-alive connection pool, not fetch: fetch's objects per request kept the prober itself
 * busy (90 ms of its CPU within 100 ms at a collection), and it shares the cores it measures.
 */
const PROBER = `
import { Agent, get } from 'node:http';
const [url, every] = process.argv.slice(1);
const everyMs = Number(every);
const WARM_UP_MS = 1000;
const agent = new Agent({ keepAlive: true });
const latencies = [];
const inFlight = new Set();
let failure;
const ask = (due) => {
  const answered = new Promise((resolve) => {
    get(url, { agent }, (answer) => {
      answer.resume();
      answer.on('error', (error) => { failure = error; resolve(); });
      answer.on('end', () => {
        if (answer.statusCode !== 200) failure = new Error('/check answered ' + answer.statusCode);
        latencies.push(performance.now() - due);
        resolve();
      });
    }).on('error', (error) => { failure = error; resolve(); });
  });
  inFlight.add(answered);
  answered.finally(() => inFlight.delete(answered));
  return answered;
};
await ask(performance.now());
const start = performance.now();
let sent = 0;
let running = true;
const tick = () => {
  if (!running) return;
  // Every request now due, each counted from its own due time.
  while (start + sent * everyMs <= performance.now()) ask(start + sent++ * everyMs);
  setTimeout(tick, Math.max(0, start + sent * everyMs - performance.now()));
};
tick();
// Ready once warm: the answers of the first second (this process compiling its client, the
// service its route) are not what is measured.
setTimeout(() => {
  latencies.length = 0;
  process.stdout.write('ready\\n');
}, WARM_UP_MS);
process.stdin.on('end', async () => {
  running = false;
  await Promise.all(inFlight);
  if (failure) { process.stderr.write(String(failure) + '\\n'); process.exit(1); }
  const sorted = [...latencies].sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({
    slowestMs: Math.round(sorted.at(-1)),
    p99Ms: Math.round(sorted[Math.floor(sorted.length * 0.99)]),
    probes: latencies.length,
    seconds: (performance.now() - start) / 1000,
  }) + '\\n');
  process.exit(0);
});
process.stdin.resume();
`;
