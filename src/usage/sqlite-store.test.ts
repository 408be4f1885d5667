// The SQLite file's bounds: clients that were never among an hour's heaviest lose their
// points once the hour has ended, so names chosen by whoever calls /check cannot fill the
// disk; and /usage/top ranks what memory adds with what the file holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { describe, expect, it } from 'vitest';
import { parseRetention, type Archive } from '../config/retention.js';
import { inMemoryUsage } from './in-memory-usage.js';
import { SCHEMA_VERSION } from './sqlite-schema.js';
import { openSqliteUsage } from './sqlite-store.js';
import { createUsageHistory } from './usage-history.js';

const ARCHIVES = parseRetention('1s:6h,1m:30d,1h:2y') as readonly Archive[];
/** 2026-01-01T10:00:00Z. */
const HOUR = Date.UTC(2026, 0, 1, 10) / 1000;

describe('the SQLite usage store', () => {
  it("keeps, once an hour has ended, only the points of that hour's heaviest clients", async () => {
    let now = HOUR;
    const store = openSqliteUsage({ path: ':memory:', archives: ARCHIVES, top: 2, nowSeconds: () => now });
    // Each minute: two steady clients, and a new name each minute (a spray).
    for (let minute = 0; minute < 60; minute++) {
      await store.write({
        instance: 'a',
        sequence: minute,
        seconds: [],
        minutes: [
          {
            event: 'login',
            t: HOUR + minute * 60,
            allowed: [
              { feature: 'alice', count: 5 },
              { feature: `spray-${minute}`, count: 1 },
            ],
            denied: [{ feature: 'mallory', count: 3 }],
          },
        ],
      });
    }
    const top = (from: number, until: number, resolution: number) =>
      store.top({ event: 'login', from, until, resolution, limit: 100 });
    expect((await top(HOUR, HOUR + 3600, 3600)).allowed).toHaveLength(61);
    // Within the grace after the hour, nothing goes: batches for it may still come.
    now = HOUR + 3600 + 60;
    await store.write({ instance: 'a', sequence: 100, seconds: [], minutes: [] });
    await store.idle();
    expect((await top(HOUR, HOUR + 3600, 60)).allowed).toHaveLength(61);
    now = HOUR + 3600 + 3600;
    await store.write({ instance: 'a', sequence: 101, seconds: [], minutes: [] });
    // Compaction runs after the write, in slices between other work.
    await store.idle();
    const hour = await top(HOUR, HOUR + 3600, 3600);
    // The top 2 allowed (alice, then the first spray name by name) and the top denied stay.
    expect(hour.allowed.map(({ feature }) => feature)).toEqual(['alice', 'spray-0']);
    expect(hour.denied).toEqual([{ feature: 'mallory', count: 180 }]);
    const minutes = await top(HOUR, HOUR + 3600, 60);
    expect(minutes.allowed.map(({ feature }) => feature)).toEqual(['alice', 'spray-0']);
    const alice = await store.series({
      event: 'login',
      feature: 'alice',
      from: HOUR,
      until: HOUR + 3600,
      step: 60,
      resolution: 60,
    });
    expect(alice.every(({ allowed }) => allowed === 5)).toBe(true);
    await store.close();
  });
});

describe('/usage/top across the file and memory', () => {
  it('ranks a client by what the file and memory hold together, whatever the limit', async () => {
    let nowMs = HOUR * 1000;
    const { recorder, history, close } = inMemoryUsage({
      policyEvents: () => ['login'],
      now: () => nowMs,
      archives: ARCHIVES,
    });
    const record = (feature: string, times: number) => {
      for (let i = 0; i < times; i++) recorder.record('login', feature, { allowed: true });
    };
    record('A', 10);
    record('B', 9);
    record('X', 5);
    nowMs += 60_000;
    await recorder.flush();
    // X's second minute is still in memory.
    record('X', 6);
    for (const limit of ['1', '2', '3']) {
      const { allowed } = await history.top({ event: 'login', from: '-10min', limit });
      expect(allowed, `limit ${limit}`).toEqual(
        [
          { feature: 'X', count: 11 },
          { feature: 'A', count: 10 },
          { feature: 'B', count: 9 },
        ].slice(0, Number(limit)),
      );
    }
    await close();
  });
});

describe('/usage/top over many days', () => {
  it('sums clients per day past 1,440 hours, to the same ranking as the hours give', async () => {
    const days = 3;
    const start = HOUR - (HOUR % 86_400);
    let nowMs = (start + days * 86_400) * 1000;
    const sqlite = openSqliteUsage({ path: ':memory:', archives: ARCHIVES, nowSeconds: () => nowMs / 1000 });
    let sequence = 0;
    for (let day = 0; day < days; day++) {
      for (const hour of [1, 13]) {
        const t = start + day * 86_400 + hour * 3600;
        await sqlite.write({
          instance: 'a',
          sequence: sequence++,
          seconds: [{ event: 'login', t, allowed: 5 + day, denied: 2, degraded: 0 }],
          minutes: [
            {
              event: 'login',
              t,
              allowed: [
                { feature: 'alice', count: 3 },
                { feature: `bob-${day}`, count: 2 + day },
              ],
              denied: [{ feature: 'mallory', count: 2 }],
            },
          ],
        });
      }
    }
    nowMs += 3600_000;
    const history = createUsageHistory({
      reader: sqlite,
      archives: ARCHIVES,
      policyEvents: () => ['login'],
      now: () => nowMs,
    });
    const year = await history.top({ event: 'login', from: '-400d' });
    // 400 days: the daily sums, so `from` counts from a day's start.
    expect(year.from % 86_400).toBe(0);
    const week = await history.top({ event: 'login', from: '-7d' });
    expect(week.from % 3600).toBe(0);
    for (const answer of [year, week]) {
      expect(answer.allowed).toEqual([
        { feature: 'alice', count: 18 },
        { feature: 'bob-2', count: 8 },
        { feature: 'bob-1', count: 6 },
        { feature: 'bob-0', count: 4 },
      ]);
      expect(answer.denied).toEqual([{ feature: 'mallory', count: 12 }]);
    }
    await sqlite.close();
  });
});

describe('a file of the first layout', () => {
  it('opens with every row it held, and gains the index pruning reads batches by', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memgate-usage-layout-'));
    const path = join(dir, 'usage.db');
    // The tables as memgate up to 4cda801 created them, with a point, a client and a batch.
    const first = new Database(path);
    first.exec(`
      PRAGMA journal_mode = WAL;
      CREATE TABLE usage_points (resolution INTEGER NOT NULL, event TEXT NOT NULL, t INTEGER NOT NULL,
        allowed INTEGER NOT NULL, denied INTEGER NOT NULL, degraded INTEGER NOT NULL,
        PRIMARY KEY (resolution, event, t)) WITHOUT ROWID;
      CREATE TABLE usage_clients (resolution INTEGER NOT NULL, event TEXT NOT NULL, t INTEGER NOT NULL,
        feature TEXT NOT NULL, allowed INTEGER NOT NULL, denied INTEGER NOT NULL,
        PRIMARY KEY (resolution, event, t, feature)) WITHOUT ROWID;
      CREATE INDEX usage_clients_by_feature ON usage_clients (resolution, event, feature, t, allowed, denied);
      CREATE TABLE usage_batches (instance TEXT NOT NULL, sequence INTEGER NOT NULL, written INTEGER NOT NULL,
        PRIMARY KEY (instance, sequence)) WITHOUT ROWID;
      CREATE TABLE usage_events (event TEXT PRIMARY KEY, first INTEGER NOT NULL, last INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE usage_compacted (resolution INTEGER PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO usage_points VALUES (60, 'login', ${HOUR}, 7, 2, 1);
      INSERT INTO usage_clients VALUES (60, 'login', ${HOUR}, 'alice', 7, 2);
      INSERT INTO usage_batches VALUES ('old', 1, ${HOUR});
      INSERT INTO usage_events VALUES ('login', ${HOUR}, ${HOUR + 59});
    `);
    first.close();
    const now = HOUR + 120;
    const store = openSqliteUsage({ path, archives: ARCHIVES, nowSeconds: () => now });
    const range = { event: 'login', from: HOUR, until: HOUR + 60, resolution: 60 };
    expect(await store.series({ ...range, step: 60 })).toEqual([
      { t: HOUR, allowed: 7, denied: 2, degraded: 1, shadow_denied: 0, settled: 0, settled_cost: 0 },
    ]);
    // Points written before memgate kept their clients' sums: a client absent from one is not
    // known to have had none.
    expect(await store.series({ ...range, step: 60, feature: 'bob' })).toEqual([
      {
        t: HOUR,
        allowed: 0,
        denied: 0,
        degraded: 0,
        shadow_denied: 0,
        settled: 0,
        settled_cost: 0,
        unnamed: { allowed: 7, denied: 2 },
      },
    ]);
    expect(await store.top({ ...range, limit: 5 })).toEqual({
      allowed: [{ feature: 'alice', count: 7 }],
      denied: [{ feature: 'alice', count: 2 }],
    });
    expect(await store.events()).toEqual([{ event: 'login', from: HOUR, until: HOUR + 60 }]);
    // The old batch is still known: written again, it adds nothing.
    await store.write({
      instance: 'old',
      sequence: 1,
      seconds: [{ event: 'login', t: HOUR, allowed: 1, denied: 0, degraded: 0 }],
      minutes: [],
    });
    expect((await store.series({ ...range, step: 60 }))[0]?.allowed).toBe(7);
    await store.close();
    const after = new Database(path);
    expect(after.prepare('PRAGMA user_version').get()).toMatchObject({ user_version: SCHEMA_VERSION });
    const plan = after.prepare('EXPLAIN QUERY PLAN SELECT 1 FROM usage_batches WHERE written < 5').all() as {
      detail: string;
    }[];
    expect(plan.map(({ detail }) => detail).join()).toContain('usage_batches_by_written');
    after.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('a file of schema 2, before shadow_denied', () => {
  it('opens with every row it held, reads 0 shadow_denied for them, and sums the new ones into every archive', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memgate-usage-schema2-'));
    const path = join(dir, 'usage.db');
    // The tables as memgate up to c92cae5 created them, with a second's point in every
    // archive (7 allowed, 2 denied, 1 degraded; alice named in the minute and the hour).
    const previous = new Database(path);
    const points = [1, 60, 3600]
      .map((resolution) => {
        const named = resolution === 1 ? '0, 0' : '7, 2';
        return `(${resolution}, 'login', ${HOUR + (resolution === 1 ? 5 : 0)}, 7, 2, 1, ${named})`;
      })
      .join(', ');
    previous.exec(`
      PRAGMA journal_mode = WAL;
      CREATE TABLE usage_points (resolution INTEGER NOT NULL, event TEXT NOT NULL, t INTEGER NOT NULL,
        allowed INTEGER NOT NULL, denied INTEGER NOT NULL, degraded INTEGER NOT NULL,
        named_allowed INTEGER NOT NULL DEFAULT 0, named_denied INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (resolution, event, t)) WITHOUT ROWID;
      CREATE TABLE usage_clients (resolution INTEGER NOT NULL, event TEXT NOT NULL, t INTEGER NOT NULL,
        feature TEXT NOT NULL, allowed INTEGER NOT NULL, denied INTEGER NOT NULL,
        PRIMARY KEY (resolution, event, t, feature)) WITHOUT ROWID;
      CREATE INDEX usage_clients_by_feature ON usage_clients (resolution, event, feature, t, allowed, denied);
      CREATE TABLE usage_batches (instance TEXT NOT NULL, sequence INTEGER NOT NULL, written INTEGER NOT NULL,
        PRIMARY KEY (instance, sequence)) WITHOUT ROWID;
      CREATE TABLE usage_events (event TEXT PRIMARY KEY, first INTEGER NOT NULL, last INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE usage_compacted (resolution INTEGER PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX usage_batches_by_written ON usage_batches (written);
      INSERT INTO usage_points VALUES ${points};
      INSERT INTO usage_clients VALUES (60, 'login', ${HOUR}, 'alice', 7, 2), (3600, 'login', ${HOUR}, 'alice', 7, 2);
      INSERT INTO usage_batches VALUES ('old', 1, ${HOUR});
      INSERT INTO usage_events VALUES ('login', ${HOUR + 5}, ${HOUR + 5});
      PRAGMA user_version = 2;
    `);
    previous.close();

    const store = openSqliteUsage({ path, archives: ARCHIVES, nowSeconds: () => HOUR + 120 });
    const series = (resolution: number, feature?: string) =>
      store.series({
        event: 'login',
        ...(feature === undefined ? {} : { feature }),
        from: HOUR,
        until: HOUR + 60,
        step: 60,
        resolution,
      });
    // What the file held, as it held it: no decision of then was over a shadow limit.
    for (const resolution of [1, 60, 3600]) {
      expect(await series(resolution), `${resolution} s`).toEqual([
        { t: HOUR, allowed: 7, denied: 2, degraded: 1, shadow_denied: 0, settled: 0, settled_cost: 0 },
      ]);
    }
    // A second of the new layout, 3 of its 4 allowed over a shadow limit: in every archive.
    await store.write({
      instance: 'new',
      sequence: 0,
      seconds: [{ event: 'login', t: HOUR + 6, allowed: 4, denied: 0, degraded: 0, shadow_denied: 3 }],
      minutes: [],
    });
    for (const resolution of [1, 60, 3600]) {
      expect(await series(resolution), `${resolution} s`).toEqual([
        { t: HOUR, allowed: 11, denied: 2, degraded: 1, shadow_denied: 3, settled: 0, settled_cost: 0 },
      ]);
    }
    // The named sums kept theirs: alice's 7 and 2, and the new second's 4 unnamed.
    expect(await series(60, 'alice')).toEqual([
      {
        t: HOUR,
        allowed: 7,
        denied: 2,
        degraded: 0,
        shadow_denied: 0,
        settled: 0,
        settled_cost: 0,
        unnamed: { allowed: 4, denied: 0 },
      },
    ]);
    // The old batch is still known: written again, it adds nothing.
    await store.write({
      instance: 'old',
      sequence: 1,
      seconds: [{ event: 'login', t: HOUR + 5, allowed: 1, denied: 0, degraded: 0, shadow_denied: 1 }],
      minutes: [],
    });
    expect((await series(60))[0]).toMatchObject({ allowed: 11, shadow_denied: 3 });
    expect(await store.events()).toEqual([{ event: 'login', from: HOUR + 5, until: HOUR + 7 }]);
    await store.close();

    const after = new Database(path);
    expect(after.prepare('PRAGMA user_version').get()).toMatchObject({ user_version: SCHEMA_VERSION });
    expect(SCHEMA_VERSION).toBe(4);
    expect(
      after.prepare('SELECT name, "notnull", dflt_value FROM pragma_table_info(\'usage_points\')').all(),
    ).toContainEqual({ name: 'shadow_denied', notnull: 1, dflt_value: '0' });
    after.close();
    // Opened again, nothing to migrate: the same answer.
    const again = openSqliteUsage({ path, archives: ARCHIVES, nowSeconds: () => HOUR + 120 });
    expect(await again.series({ event: 'login', from: HOUR, until: HOUR + 60, step: 60, resolution: 3600 })).toEqual([
      { t: HOUR, allowed: 11, denied: 2, degraded: 1, shadow_denied: 3, settled: 0, settled_cost: 0 },
    ]);
    await again.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('a file of schema 3, before settles', () => {
  it('opens with every row it held, reads 0 settled for them, and sums new settles into every archive', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memgate-usage-schema3-'));
    const path = join(dir, 'usage.db');
    // The tables as memgate up to 1d1a29f created them, with a second's point in every archive
    // (7 allowed of which 3 over a shadow limit, 2 denied, 1 degraded; alice named in the
    // minute and the hour).
    const previous = new Database(path);
    const points = [1, 60, 3600]
      .map((resolution) => {
        const named = resolution === 1 ? '0, 0' : '7, 2';
        return `(${resolution}, 'llm', ${HOUR + (resolution === 1 ? 5 : 0)}, 7, 2, 1, ${named}, 3)`;
      })
      .join(', ');
    previous.exec(`
      PRAGMA journal_mode = WAL;
      CREATE TABLE usage_points (resolution INTEGER NOT NULL, event TEXT NOT NULL, t INTEGER NOT NULL,
        allowed INTEGER NOT NULL, denied INTEGER NOT NULL, degraded INTEGER NOT NULL,
        named_allowed INTEGER NOT NULL DEFAULT 0, named_denied INTEGER NOT NULL DEFAULT 0,
        shadow_denied INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (resolution, event, t)) WITHOUT ROWID;
      CREATE TABLE usage_clients (resolution INTEGER NOT NULL, event TEXT NOT NULL, t INTEGER NOT NULL,
        feature TEXT NOT NULL, allowed INTEGER NOT NULL, denied INTEGER NOT NULL,
        PRIMARY KEY (resolution, event, t, feature)) WITHOUT ROWID;
      CREATE INDEX usage_clients_by_feature ON usage_clients (resolution, event, feature, t, allowed, denied);
      CREATE TABLE usage_batches (instance TEXT NOT NULL, sequence INTEGER NOT NULL, written INTEGER NOT NULL,
        PRIMARY KEY (instance, sequence)) WITHOUT ROWID;
      CREATE TABLE usage_events (event TEXT PRIMARY KEY, first INTEGER NOT NULL, last INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE usage_compacted (resolution INTEGER PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX usage_batches_by_written ON usage_batches (written);
      INSERT INTO usage_points VALUES ${points};
      INSERT INTO usage_clients VALUES (60, 'llm', ${HOUR}, 'alice', 7, 2), (3600, 'llm', ${HOUR}, 'alice', 7, 2);
      INSERT INTO usage_batches VALUES ('old', 1, ${HOUR});
      INSERT INTO usage_events VALUES ('llm', ${HOUR + 5}, ${HOUR + 5});
      PRAGMA user_version = 3;
    `);
    previous.close();

    let now = HOUR + 120;
    const store = openSqliteUsage({ path, archives: ARCHIVES, top: 1, nowSeconds: () => now });
    const series = (resolution: number, step = resolution === 3600 ? 3600 : 60) =>
      store.series({ event: 'llm', from: HOUR, until: HOUR + 120, step, resolution });
    const held = { allowed: 7, denied: 2, degraded: 1, shadow_denied: 3 };
    const empty = { allowed: 0, denied: 0, degraded: 0, shadow_denied: 0, settled: 0, settled_cost: 0 };
    // What the file held, as it held it: no reservation was settled then.
    for (const resolution of [1, 60]) {
      expect(await series(resolution), `${resolution} s`).toEqual([
        { t: HOUR, ...held, settled: 0, settled_cost: 0 },
        { t: HOUR + 60, ...empty },
      ]);
    }
    expect(await series(3600)).toEqual([{ t: HOUR, ...held, settled: 0, settled_cost: 0 }]);

    // Settles of the new layout in two minutes of the hour, one in a second with decisions,
    // two alone, one at a cost of 0, and a client's minute for compaction to drop later.
    await store.write({
      instance: 'new',
      sequence: 0,
      seconds: [
        { event: 'llm', t: HOUR + 6, allowed: 1, denied: 0, degraded: 0, settled: 1, settled_cost: 1700 },
        { event: 'llm', t: HOUR + 59, allowed: 0, denied: 0, degraded: 0, settled: 1, settled_cost: 0 },
        { event: 'llm', t: HOUR + 61, allowed: 0, denied: 0, degraded: 0, settled: 1, settled_cost: 2200 },
      ],
      minutes: [{ event: 'llm', t: HOUR, allowed: [{ feature: 'bob', count: 1 }], denied: [] }],
    });
    const minutes = [
      { t: HOUR, ...held, allowed: 8, settled: 2, settled_cost: 1700 },
      { t: HOUR + 60, ...empty, settled: 1, settled_cost: 2200 },
    ];
    // Summed at write time into the second, its minute and its hour: a coarse point is its fine ones' sum.
    for (const resolution of [1, 60]) expect(await series(resolution), `${resolution} s`).toEqual(minutes);
    expect(await series(1, 1)).toContainEqual({ t: HOUR + 61, ...empty, settled: 1, settled_cost: 2200 });
    expect(await series(3600)).toEqual([{ t: HOUR, ...held, allowed: 8, settled: 3, settled_cost: 3900 }]);
    // The old batch is still known: written again, it adds nothing.
    await store.write({
      instance: 'old',
      sequence: 1,
      seconds: [{ event: 'llm', t: HOUR + 5, allowed: 1, denied: 0, degraded: 0, settled: 1, settled_cost: 5 }],
      minutes: [],
    });
    expect(await series(60)).toEqual(minutes);
    expect(await store.events()).toEqual([{ event: 'llm', from: HOUR + 5, until: HOUR + 62 }]);

    // Once the hour has ended, compaction drops bob (below the hour's top 1) and leaves the
    // points' counts, settles too, as they are; pruning past the 1 s archive's 6 hours drops
    // those points only.
    now = HOUR + 7 * 3600;
    await store.write({ instance: 'new', sequence: 1, seconds: [], minutes: [] });
    await store.idle();
    expect(
      (await store.top({ event: 'llm', from: HOUR, until: HOUR + 3600, resolution: 3600, limit: 5 })).allowed,
    ).toEqual([{ feature: 'alice', count: 7 }]);
    expect(await series(60)).toEqual(minutes);
    expect(await series(3600)).toEqual([{ t: HOUR, ...held, allowed: 8, settled: 3, settled_cost: 3900 }]);
    expect(await series(1)).toEqual([
      { t: HOUR, ...empty },
      { t: HOUR + 60, ...empty },
    ]);
    await store.close();

    const after = new Database(path);
    expect(after.prepare('PRAGMA user_version').get()).toMatchObject({ user_version: SCHEMA_VERSION });
    expect(SCHEMA_VERSION).toBe(4);
    const columns = after
      .prepare('SELECT name, "notnull", dflt_value FROM pragma_table_info(\'usage_points\')')
      .all() as { name: string }[];
    for (const name of ['settled', 'settled_cost'])
      expect(columns).toContainEqual({ name, notnull: 1, dflt_value: '0' });
    after.close();
    // Opened again, nothing to migrate: the same answer.
    const again = openSqliteUsage({ path, archives: ARCHIVES, nowSeconds: () => now });
    expect(await again.series({ event: 'llm', from: HOUR, until: HOUR + 3600, step: 3600, resolution: 3600 })).toEqual([
      { t: HOUR, ...held, allowed: 8, settled: 3, settled_cost: 3900 },
    ]);
    await again.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
