// Usage history end to end on a driven clock: what the curves say equals the decisions
// made, across flushes, refused and repeated writes, a restart, rollup boundaries and
// retention; and bad questions are refused without touching anything.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRetention, type Archive } from '../config/retention.js';
import { UsageQueryError } from './query-plan.js';
import { inMemoryUsage } from './in-memory-usage.js';
import { UsageRecorder } from './recorder.js';
import { openSqliteUsage } from './sqlite-store.js';
import { createUsageHistory, FOLD_CHUNK } from './usage-history.js';
import type { SeriesPoint, SeriesQuery, UsageBatch, UsageStore } from './usage-store.js';

const ARCHIVES = retention('1s:6h,1m:30d,1h:2y');
const EVENTS = ['login', 'url_shorten'];
const CLIENTS = ['203.0.113.7', '198.51.100.23', 'alice@example.com', '2001:db8::1', 'bob'];
/** 2026-01-01T00:58:50Z: the traffic crosses minute and hour boundaries. */
const START_MS = Date.UTC(2026, 0, 1, 0, 58, 50);

function retention(text: string): readonly Archive[] {
  const archives = parseRetention(text);
  if (typeof archives === 'string') throw new Error(archives);
  return archives;
}

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
function dbPath(): string {
  const folder = mkdtempSync(join(tmpdir(), 'memgate-usage-'));
  folders.push(folder);
  return join(folder, 'usage.db');
}

/** A deterministic stream of numbers in [0, 1). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

type Outcome = 'allowed' | 'denied' | 'degraded';
interface Decision {
  readonly second: number;
  readonly event: string;
  readonly feature: string;
  readonly outcome: Outcome;
  /** Allowed, and a shadow limit would have refused it. */
  readonly shadowDenied: boolean;
}

/** A reservation settled: at its second, with its actual cost. */
interface Settle {
  readonly second: number;
  readonly event: string;
  readonly cost: number;
}

/** What happened, to compare the curves with. */
function expected(
  log: readonly Decision[],
  filter: { event: string; feature?: string },
  from: number,
  until: number,
  step: number,
  settles: readonly Settle[] = [],
) {
  type Sums = Record<Outcome | 'shadow_denied' | 'settled' | 'settled_cost', number>;
  const points = new Map<number, Sums>();
  for (let t = from - (from % step); t < until; t += step)
    points.set(t, { allowed: 0, denied: 0, degraded: 0, shadow_denied: 0, settled: 0, settled_cost: 0 });
  // The event's only: a client's curve has none.
  for (const settle of filter.feature === undefined ? settles : []) {
    const point = settle.event === filter.event ? points.get(settle.second - (settle.second % step)) : undefined;
    if (!point) continue;
    point.settled++;
    point.settled_cost += settle.cost;
  }
  for (const decision of log) {
    if (decision.event !== filter.event || (filter.feature !== undefined && decision.feature !== filter.feature))
      continue;
    // A client's curve has no degraded points: clients are kept by allowed and denied.
    if (filter.feature !== undefined && decision.outcome === 'degraded') continue;
    const point = points.get(decision.second - (decision.second % step));
    if (point) point[decision.outcome]++;
    // In allowed too, and the event's only: a client's curve has none.
    if (point && decision.shadowDenied && filter.feature === undefined) point.shadow_denied++;
  }
  // Fewer clients than the heaviest kept: every one is named, so each count is known.
  const tracked = { allowed: true, denied: true };
  return [...points].map(([t, counts]) =>
    filter.feature === undefined ? { t, ...counts } : { t, ...counts, tracked },
  );
}

/**
 * A store that refuses some writes: before writing (nothing kept), or after (kept, but
 * the recorder is told it failed and writes the batch again).
 */
function flaky(store: UsageStore, chance: () => number): UsageStore & { refused: number; lostAnswers: number } {
  const wrapped = {
    ...store,
    refused: 0,
    lostAnswers: 0,
    async write(batch: UsageBatch) {
      const roll = chance();
      if (roll < 0.15) {
        wrapped.refused++;
        throw new Error('disk full');
      }
      await store.write(batch);
      if (roll < 0.3) {
        wrapped.lostAnswers++;
        throw new Error('answer lost after the write');
      }
    },
  };
  return wrapped;
}

describe('usage history, on a driven clock', () => {
  it('counts every decision exactly over 75 minutes: flushes, refused and repeated writes, a restart, every archive', async () => {
    const path = dbPath();
    let nowMs = START_MS;
    const now = () => nowMs;
    const roll = random(7);
    let sqlite = openSqliteUsage({ path, archives: ARCHIVES, nowSeconds: () => nowMs / 1000 });
    let store = flaky(sqlite, roll);
    let recorder = new UsageRecorder({ stores: { sqlite: store }, readFrom: 'sqlite', flushSeconds: 15, top: 20, now });
    const log: Decision[] = [];
    const settles: Settle[] = [];
    // Settles from a stream of their own: the decisions, refusals and restarts are those of before.
    const settleRoll = random(11);
    const seconds = 75 * 60 + 7;
    for (let s = 0; s < seconds; s++) {
      nowMs = START_MS + s * 1000 + 137;
      const second = Math.floor(nowMs / 1000);
      const many = Math.floor(roll() * 6);
      for (let i = 0; i < many; i++) {
        const event = EVENTS[Math.floor(roll() * EVENTS.length)] ?? 'login';
        const feature = CLIENTS[Math.floor(roll() * CLIENTS.length)] ?? 'bob';
        const r = roll();
        const outcome: Outcome = r < 0.6 ? 'allowed' : r < 0.95 ? 'denied' : 'degraded';
        // Some allowed ones over a shadow limit; an empty list names none, so it counts none.
        const shadow = r < 0.15 ? ['login-1m'] : r < 0.2 ? [] : undefined;
        recorder.record(event, feature, {
          allowed: outcome === 'allowed',
          degraded: outcome === 'degraded',
          shadowDenied: shadow,
        });
        log.push({ second, event, feature, outcome, shadowDenied: shadow !== undefined && shadow.length > 0 });
        // Now and then a reservation settled, at any cost from 0.
        if (settleRoll() < 0.2) {
          const cost = Math.floor(settleRoll() * 5000);
          recorder.recordSettled(event, cost);
          settles.push({ second, event, cost });
        }
      }
      if (s % 15 === 14) await recorder.flush();
      if (s === 40 * 60) {
        // A restart: the last counts written at shutdown, then a new process on the same file.
        await recorder.close();
        await sqlite.close();
        sqlite = openSqliteUsage({ path, archives: ARCHIVES, nowSeconds: () => nowMs / 1000 });
        store = flaky(sqlite, roll);
        recorder = new UsageRecorder({ stores: { sqlite: store }, readFrom: 'sqlite', flushSeconds: 15, top: 20, now });
      }
    }
    const history = createUsageHistory({
      reader: sqlite,
      recorder,
      archives: ARCHIVES,
      policyEvents: () => EVENTS,
      now,
    });
    const from = Math.floor(START_MS / 1000);
    const until = Math.floor(nowMs / 1000) + 1;
    // Some of it is still in memory: the curve includes it.
    expect(recorder.pendingRows).toBeGreaterThan(0);
    for (const event of EVENTS) {
      for (const step of [1, 60, 900, 3600]) {
        const answer = await history.series({ event, from: String(from), until: String(until), step: String(step) });
        expect(answer.points, `${event} at ${step} s`).toEqual(expected(log, { event }, from, until, step, settles));
      }
      for (const feature of CLIENTS) {
        const answer = await history.series({ event, feature, from: String(from), until: String(until), step: '60' });
        expect(answer.points, `${event} ${feature}`).toEqual(expected(log, { event, feature }, from, until, 60));
      }
    }
    expect(store.refused + store.lostAnswers).toBeGreaterThan(10);
    expect(new Set(settles.map(({ event }) => event))).toEqual(new Set(EVENTS));

    // Everything written; 31 days later only the hourly points are left, and they still add up.
    await recorder.close();
    nowMs += 31 * 86_400_000;
    const later = openSqliteUsage({ path, archives: ARCHIVES, nowSeconds: () => nowMs / 1000 });
    await later.write({ instance: 'pruner', sequence: 0, seconds: [], minutes: [] });
    const afterMonth = createUsageHistory({ reader: later, archives: ARCHIVES, policyEvents: () => EVENTS, now });
    for (const event of EVENTS) {
      const answer = await afterMonth.series({ event, from: String(from), until: String(until), step: '3600' });
      expect(answer.points, event).toEqual(expected(log, { event }, from, until, 3600, settles));
      // The minutes were pruned: a query at minute steps reads the hourly archive, rounded up.
      expect((await afterMonth.series({ event, from: String(from), until: String(until), step: '60' })).step).toBe(
        3600,
      );
    }
    const top = await afterMonth.top({ event: 'login', from: String(from), until: String(until), limit: '3' });
    const truth = (outcome: Outcome) =>
      CLIENTS.map((feature) => ({
        feature,
        count: log.filter((d) => d.event === 'login' && d.feature === feature && d.outcome === outcome).length,
      }))
        .sort((a, b) => b.count - a.count || (a.feature < b.feature ? -1 : 1))
        .slice(0, 3);
    expect(top.allowed).toEqual(truth('allowed'));
    expect(top.denied).toEqual(truth('denied'));
    await later.close();
    await sqlite.close();
  });

  it("says which of a client's counts are unknown: where it was below the heaviest while others went unnamed", async () => {
    const minute = Date.UTC(2026, 0, 1, 1, 0) / 1000;
    let nowMs = minute * 1000 + 5000;
    const now = () => nowMs;
    const sqlite = openSqliteUsage({ path: ':memory:', archives: ARCHIVES, nowSeconds: () => nowMs / 1000 });
    const recorder = new UsageRecorder({ stores: { sqlite }, readFrom: 'sqlite', flushSeconds: 15, top: 2, now });
    const history = createUsageHistory({
      reader: sqlite,
      recorder,
      archives: ARCHIVES,
      policyEvents: () => ['login'],
      now,
    });
    const record = (feature: string, allowed: boolean, times: number) => {
      for (let i = 0; i < times; i++) recorder.record('login', feature, { allowed });
    };
    // The first minute: three clients allowed, two named (top 2); one denied, named.
    record('heavy', true, 5);
    record('medium', true, 3);
    record('light', true, 1);
    record('light', false, 2);
    // The second: only two clients, both named: a client absent from it had 0.
    nowMs += 60_000;
    record('heavy', true, 2);
    record('medium', true, 1);
    // The third: medium, named before, is below two others.
    nowMs += 60_000;
    record('light', true, 5);
    record('heavy', true, 4);
    record('medium', true, 3);
    nowMs += 60_000;
    const curve = async (feature: string, step = 60) =>
      (
        await history.series({
          event: 'login',
          feature,
          from: String(minute),
          until: String(minute + 180),
          step: String(step),
        })
      ).points.map(({ allowed, denied, tracked }) => ({ allowed, denied, tracked }));
    const known = { allowed: true, denied: true };
    const allowedUnknown = { allowed: false, denied: true };
    const expectations = async () => {
      expect(await curve('heavy')).toEqual([
        { allowed: 5, denied: 0, tracked: known },
        { allowed: 2, denied: 0, tracked: known },
        { allowed: 4, denied: 0, tracked: known },
      ]);
      // light's allowed decision went unnamed: unknown in the first minute, not 0.
      for (const feature of ['light', 'never-seen']) {
        expect(await curve(feature)).toEqual([
          { allowed: 0, denied: feature === 'light' ? 2 : 0, tracked: allowedUnknown },
          { allowed: 0, denied: 0, tracked: known },
          { allowed: feature === 'light' ? 5 : 0, denied: 0, tracked: feature === 'light' ? known : allowedUnknown },
        ]);
      }
      // In one step of three minutes, medium's 4 is a lower bound: its third minute is unknown.
      expect(await curve('medium', 180)).toEqual([{ allowed: 4, denied: 0, tracked: allowedUnknown }]);
      expect(await curve('heavy', 180)).toEqual([{ allowed: 11, denied: 0, tracked: known }]);
      // The whole event's curve has no such field: its counts are all known.
      const whole = await history.series({
        event: 'login',
        from: String(minute),
        until: String(minute + 180),
        step: '60',
      });
      expect(whole.points.map(({ allowed, denied }) => ({ allowed, denied }))).toEqual([
        { allowed: 9, denied: 2 },
        { allowed: 3, denied: 0 },
        { allowed: 12, denied: 0 },
      ]);
      expect(whole.points.every((point) => !('tracked' in point))).toBe(true);
    };
    await expectations(); // from memory
    await recorder.close(); // written to the file
    expect(recorder.pendingRows).toBe(0);
    await expectations(); // from the file
    await sqlite.close();
  });

  it("folds a client's year of minutes into its steps a slice a turn, the event loop running between", async () => {
    const until = Date.UTC(2026, 1, 1) / 1000;
    const from = until - 365 * 86_400;
    // A store's answer of 525,600 archive points (a retention of 1m:1y): the client allowed
    // once in each; in minute 7 of every 30,000, others went unnamed with denials where it had none.
    const reader = {
      series: ({ from, until, step }: SeriesQuery) => {
        const points: SeriesPoint[] = [];
        for (let t = from; t < until; t += step) {
          const unknown = ((t - from) / step) % 30_000 === 7;
          points.push({
            t,
            allowed: 1,
            denied: 0,
            degraded: 0,
            shadow_denied: 0,
            settled: 0,
            settled_cost: 0,
            unnamed: { allowed: 0, denied: unknown ? 1 : 0 },
          });
        }
        return Promise.resolve(points);
      },
      top: () => Promise.resolve({ allowed: [], denied: [] }),
      events: () => Promise.resolve([]),
    };
    const history = createUsageHistory({
      reader,
      archives: retention('1m:1y'),
      policyEvents: () => ['login'],
      // Just before `until`: `from` is within the archive's year.
      now: () => (until - 2) * 1000,
    });
    let turns = 0;
    let counting = true;
    const count = () => {
      if (!counting) return;
      turns++;
      setImmediate(count);
    };
    setImmediate(count);
    const answer = await history.series({
      event: 'login',
      feature: 'a',
      from: String(from),
      until: String(until),
      step: String(86_400),
    });
    counting = false;
    expect(turns).toBeGreaterThanOrEqual(Math.floor((365 * 1440) / FOLD_CHUNK) - 1);
    expect(answer.points).toHaveLength(365);
    expect(answer.points.every(({ allowed }) => allowed === 1440)).toBe(true);
    // Its denials are unknown on the days that hold such a minute, and only there.
    const unknown = answer.points
      .filter(({ tracked }) => tracked?.denied === false)
      .map(({ t }) => (t - from) / 86_400);
    const expected = Array.from({ length: 18 }, (_, i) => Math.floor((i * 30_000 + 7) / 1440));
    expect(unknown).toEqual(expected);
    expect(answer.points.every(({ tracked }) => tracked?.allowed === true)).toBe(true);
  });

  it('includes what is not written yet, and nothing twice once it is', async () => {
    let nowMs = START_MS;
    const { recorder, history, close } = inMemoryUsage({
      policyEvents: () => EVENTS,
      now: () => nowMs,
      archives: ARCHIVES,
    });
    const total = async () => {
      const { points } = await history.series({ event: 'login', from: '-10min' });
      return points.reduce((sum, point) => sum + point.allowed, 0);
    };
    for (let i = 0; i < 5; i++) recorder.record('login', 'bob', { allowed: true });
    expect(await total()).toBe(5);
    nowMs += 1000;
    recorder.record('login', 'bob', { allowed: true });
    await recorder.flush();
    expect(recorder.pendingRows).toBe(1);
    expect(await total()).toBe(6);
    nowMs += 1000;
    await recorder.flush();
    expect(recorder.pendingRows).toBe(0);
    expect(await total()).toBe(6);
    await close();
  });

  it('keeps a store that refuses from holding up another: each keeps its own batches, in order, up to a bound', async () => {
    let nowMs = START_MS;
    let carbonUp = false;
    const carbon: number[] = [];
    let carbonMinutes = 0;
    const dropped: [number, string][] = [];
    const sqlite = openSqliteUsage({ path: ':memory:', archives: ARCHIVES, nowSeconds: () => nowMs / 1000 });
    const recorder = new UsageRecorder({
      stores: {
        sqlite,
        graphite: {
          write: (batch) => {
            if (!carbonUp) return Promise.reject(new Error('carbon is down'));
            carbon.push(...batch.seconds.map(({ t }) => t));
            carbonMinutes += batch.minutes.length;
            return Promise.resolve();
          },
        },
      },
      readFrom: 'sqlite',
      flushSeconds: 15,
      top: 20,
      maxPendingRows: 20,
      now: () => nowMs,
      onDropped: (rows, store) => dropped.push([rows, store]),
    });
    const history = createUsageHistory({
      reader: sqlite,
      recorder,
      archives: ARCHIVES,
      policyEvents: () => EVENTS,
      now: () => nowMs,
    });
    for (let s = 0; s < 40; s++) {
      recorder.record('login', 'bob', { allowed: true });
      nowMs += 1000;
      if (s % 5 === 4) await recorder.flush();
    }
    // The file took every batch, once, while carbon refused them all.
    const { points } = await history.series({ event: 'login', from: '-5min', step: '1' });
    expect(points.reduce((sum, point) => sum + point.allowed, 0)).toBe(40);
    expect(
      (
        await sqlite.series({
          event: 'login',
          from: Math.floor(START_MS / 60_000) * 60,
          until: Math.floor(START_MS / 60_000) * 60 + 120,
          step: 60,
          resolution: 60,
        })
      ).reduce((sum, p) => sum + p.allowed, 0),
    ).toBe(40);
    // Carbon's queue was bounded: the oldest went, and were counted as dropped from it alone.
    expect(dropped.length).toBeGreaterThan(0);
    expect(dropped.every(([, store]) => store === 'graphite')).toBe(true);
    expect(recorder.pendingRows).toBeLessThanOrEqual(20 + 5);
    carbonUp = true;
    await recorder.flush();
    expect(carbon).toEqual([...carbon].sort((a, b) => a - b));
    expect(carbon.at(-1)).toBe(Math.floor(START_MS / 1000) + 39);
    // Every row is in carbon or was dropped: 40 seconds and the one minute that ended (00:58).
    expect(carbon.length + carbonMinutes + dropped.reduce((sum, [rows]) => sum + rows, 0)).toBe(41);
    await recorder.close();
    await sqlite.close();
  });

  it('refuses bad questions with a 400 code, and answers the same after', async () => {
    const nowMs = START_MS;
    const sqlite = openSqliteUsage({ path: ':memory:', archives: ARCHIVES, nowSeconds: () => nowMs / 1000 });
    const history = createUsageHistory({
      reader: sqlite,
      archives: ARCHIVES,
      policyEvents: () => EVENTS,
      now: () => nowMs,
    });
    const refused = async (params: Record<string, string>, code: string) => {
      const error: unknown = await history.series({ event: 'login', ...params }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error, JSON.stringify(params)).toBeInstanceOf(UsageQueryError);
      expect((error as UsageQueryError).code, JSON.stringify(params)).toBe(code);
    };
    await refused({ from: 'now', until: '-1h' }, 'invalid_range');
    await refused({ from: '-1h', until: '-1h' }, 'invalid_range');
    await refused({ step: '0' }, 'invalid_range');
    await refused({ step: '-5' }, 'invalid_range');
    await refused({ step: '1.5' }, 'invalid_range');
    await refused({ maxDataPoints: '10001' }, 'invalid_range');
    await refused({ from: '-2y', step: '1' }, 'invalid_range');
    await refused({ from: 'yesterday' }, 'invalid_time');
    await refused({ until: '2026-13-45' }, 'invalid_time');
    await refused({ from: '-1fortnight' }, 'invalid_time');
    await refused({ event: 'signup' }, 'unknown_event');
    await refused({ event: '' }, 'invalid_event');
    const answer = await history.series({
      event: 'login',
      from: '2025-12-31T23:00:00Z',
      until: '2026-01-01T00:00:00Z',
    });
    expect(answer).toMatchObject({
      from: Date.UTC(2025, 11, 31, 23) / 1000,
      until: Date.UTC(2026, 0, 1) / 1000,
      step: 60,
    });
    expect(answer.points).toHaveLength(60);
    await sqlite.close();
  });
});
