// Usage history through Debian's carbon-cache and graphite-web, with examples/graphite's
// schemas: what openGraphiteUsage writes reads back through the render API with exact
// counts, per second and rolled up by whisper into its minute and hour archives.
import { describe, expect, it } from 'vitest';
import { freePort } from '../scripts/lib/memcached-process.js';
import { parseRetention, type Archive } from '../src/config/retention.js';
import { openGraphiteUsage } from '../src/usage/graphite-store.js';
import { UsageStoreUnavailableError } from '../src/usage/usage-store.js';
import { UsageRecorder } from '../src/usage/recorder.js';
import type { SeriesPoint, UsageBatch, UsageStore } from '../src/usage/usage-store.js';
import { missingGraphite, useGraphite } from './helpers/graphite.js';

const ARCHIVES = parseRetention('1s:6h,1m:30d,1h:2y') as readonly Archive[];
/** How long a point carbon took may take to show: until carbon has created its whisper file. */
const VISIBLE = { timeout: 15_000, interval: 200 };

const now = Math.floor(Date.now() / 1000);
/** The last whole hour but one: within the 1 s archive's 6 hours, ended, and not now. */
const H = now - (now % 3600) - 3600;

/** A point with no settle: what an event without reservations reads. */
const unsettled = { settled: 0, settled_cost: 0 } as const;
const zero = (t: number): SeriesPoint => ({ t, allowed: 0, denied: 0, degraded: 0, shadow_denied: 0, ...unsettled });
/** `count` zero points `step` apart from `from`, with `points` laid over them. */
function expected(from: number, step: number, count: number, points: SeriesPoint[]): SeriesPoint[] {
  const all = Array.from({ length: count }, (_, index) => zero(from + index * step));
  for (const point of points) all[(point.t - from) / step] = point;
  return all;
}

const login: UsageBatch = {
  instance: 'process-1',
  sequence: 0,
  seconds: [
    // Of the allowed, some a shadow limit would have refused; left out, none.
    { event: 'login', t: H + 5, allowed: 3, denied: 1, degraded: 0, shadow_denied: 2 },
    { event: 'login', t: H + 6, allowed: 2, denied: 0, degraded: 0 },
    // Reservations settled: two at 5,100 together, alone in their second; one at a cost of 0.
    { event: 'login', t: H + 7, allowed: 0, denied: 0, degraded: 0, settled: 2, settled_cost: 5100 },
    { event: 'login', t: H + 65, allowed: 7, denied: 0, degraded: 2, shadow_denied: 3, settled: 1, settled_cost: 0 },
    { event: 'login', t: H + 1800, allowed: 0, denied: 4, degraded: 0 },
  ],
  minutes: [
    {
      event: 'login',
      t: H,
      allowed: [
        { feature: 'alice@example.com', count: 4 },
        { feature: 'bob', count: 1 },
      ],
      denied: [{ feature: 'alice@example.com', count: 1 }],
    },
    { event: 'login', t: H + 60, allowed: [{ feature: 'alice@example.com', count: 2 }], denied: [] },
  ],
};

describe.skipIf(missingGraphite() !== undefined)('Graphite', () => {
  const graphite = useGraphite();
  const open = (instance?: string): UsageStore =>
    openGraphiteUsage({ carbon: graphite().carbon, web: graphite().web, archives: ARCHIVES, instance });

  describe('one instance, no MEMGATE_GRAPHITE_INSTANCE', () => {
    it('reads back each second as written', async () => {
      const store = open();
      await store.write(login);
      await expect
        .poll(() => store.series({ event: 'login', from: H, until: H + 70, step: 1, resolution: 1 }), VISIBLE)
        .toEqual(
          expected(H, 1, 70, [
            { t: H + 5, allowed: 3, denied: 1, degraded: 0, shadow_denied: 2, ...unsettled },
            { t: H + 6, allowed: 2, denied: 0, degraded: 0, shadow_denied: 0, ...unsettled },
            { ...zero(H + 7), settled: 2, settled_cost: 5100 },
            { t: H + 65, allowed: 7, denied: 0, degraded: 2, shadow_denied: 3, settled: 1, settled_cost: 0 },
          ]),
        );
      await store.close();
    });

    it('sums seconds into 1-minute and 1-hour steps', async () => {
      const store = open();
      await expect
        .poll(() => store.series({ event: 'login', from: H, until: H + 3600, step: 60, resolution: 1 }), VISIBLE)
        .toEqual(
          expected(H, 60, 60, [
            { t: H, allowed: 5, denied: 1, degraded: 0, shadow_denied: 2, settled: 2, settled_cost: 5100 },
            { t: H + 60, allowed: 7, denied: 0, degraded: 2, shadow_denied: 3, settled: 1, settled_cost: 0 },
            { t: H + 1800, allowed: 0, denied: 4, degraded: 0, shadow_denied: 0, ...unsettled },
          ]),
        );
      expect(
        await store.series({ event: 'login', from: H - 3600, until: H + 7200, step: 3600, resolution: 1 }),
      ).toEqual(
        expected(H - 3600, 3600, 3, [
          { t: H, allowed: 12, denied: 5, degraded: 2, shadow_denied: 5, settled: 3, settled_cost: 5100 },
        ]),
      );
      await store.close();
    });

    // Ranges older than the 1 s archive's 6 hours make graphite read whisper's minute
    // archive, and older than 30 days its hour archive: sums only if storage-aggregation.conf
    // sums (an average would give 2.5 for the first minute, and xFilesFactor 0.5 nothing).
    it("reads whisper's minute and hour archives as sums of the seconds", async () => {
      const store = open();
      const minutesFrom = H - 7 * 3600;
      await expect
        .poll(
          async () =>
            (
              await store.series({ event: 'login', from: minutesFrom, until: H + 3600, step: 60, resolution: 60 })
            ).filter((point) => point.allowed + point.denied + point.degraded > 0),
          VISIBLE,
        )
        .toEqual([
          { t: H, allowed: 5, denied: 1, degraded: 0, shadow_denied: 2, settled: 2, settled_cost: 5100 },
          { t: H + 60, allowed: 7, denied: 0, degraded: 2, shadow_denied: 3, settled: 1, settled_cost: 0 },
          { t: H + 1800, allowed: 0, denied: 4, degraded: 0, shadow_denied: 0, ...unsettled },
        ]);
      const hoursFrom = H - 31 * 86_400;
      const hours = await store.series({
        event: 'login',
        from: hoursFrom,
        until: H + 3600,
        step: 3600,
        resolution: 3600,
      });
      expect(hours).toHaveLength(31 * 24 + 1);
      expect(hours.filter((point) => point.allowed + point.denied + point.degraded > 0)).toEqual([
        { t: H, allowed: 12, denied: 5, degraded: 2, shadow_denied: 5, settled: 3, settled_cost: 5100 },
      ]);
      await store.close();
    });

    it("reads a client's curve and the heaviest clients", async () => {
      const store = open();
      expect(
        await store.series({
          event: 'login',
          feature: 'alice@example.com',
          from: H,
          until: H + 180,
          step: 60,
          resolution: 60,
        }),
      ).toEqual(
        // With what the event counted for clients it does not name: in the second minute, 7
        // allowed and only alice's 2 named.
        // The event's settles are not the client's.
        [
          { ...zero(H), allowed: 4, denied: 1, unnamed: { allowed: 0, denied: 0 } },
          { ...zero(H + 60), allowed: 2, unnamed: { allowed: 5, denied: 0 } },
          { ...zero(H + 120), unnamed: { allowed: 0, denied: 0 } },
        ],
      );
      expect(await store.top({ event: 'login', from: H, until: H + 3600, resolution: 60, limit: 10 })).toEqual({
        allowed: [
          { feature: 'alice@example.com', count: 6 },
          { feature: 'bob', count: 1 },
        ],
        denied: [{ feature: 'alice@example.com', count: 1 }],
      });
      // The range holds only the minutes in it.
      expect(await store.top({ event: 'login', from: H + 60, until: H + 120, resolution: 60, limit: 1 })).toEqual({
        allowed: [{ feature: 'alice@example.com', count: 2 }],
        denied: [],
      });
      await store.close();
    });

    it('counts a batch written twice once', async () => {
      const store = open();
      const batch: UsageBatch = {
        instance: 'process-1',
        sequence: 1,
        seconds: [{ event: 'twice', t: H + 10, allowed: 3, denied: 0, degraded: 0, shadow_denied: 1 }],
        minutes: [{ event: 'twice', t: H, allowed: [{ feature: 'carol', count: 3 }], denied: [] }],
      };
      // A retry after an answer was lost: both reached carbon before anything is read.
      await store.write(batch);
      await store.write(batch);
      await expect
        .poll(() => store.series({ event: 'twice', from: H, until: H + 60, step: 60, resolution: 1 }), VISIBLE)
        .toEqual([{ t: H, allowed: 3, denied: 0, degraded: 0, shadow_denied: 1, ...unsettled }]);
      expect((await store.top({ event: 'twice', from: H, until: H + 60, resolution: 60, limit: 5 })).allowed).toEqual([
        { feature: 'carol', count: 3 },
      ]);
      await store.close();
    });

    it('gives odd client and event names back as they were', async () => {
      const store = open();
      const odd = [
        'alice@example.com',
        '2001:db8::1',
        'with space',
        '*',
        '{a,b}',
        'under_score',
        'dots.and..more',
        '../etc',
        'ünïcödé',
        '名前',
        '\u{1F600}',
        '-',
      ];
      const event = 'url.shorten_v2';
      await store.write({
        instance: 'process-1',
        sequence: 2,
        seconds: [{ event, t: H + 20, allowed: 78, denied: 0, degraded: 0 }],
        minutes: [{ event, t: H, allowed: odd.map((feature, index) => ({ feature, count: index + 1 })), denied: [] }],
      });
      const ranked = odd.map((feature, index) => ({ feature, count: index + 1 })).reverse();
      await expect
        .poll(
          async () => (await store.top({ event, from: H, until: H + 60, resolution: 60, limit: 50 })).allowed,
          VISIBLE,
        )
        .toEqual(ranked);
      // `*` is one client, not a pattern matching them all.
      expect(
        (await store.series({ event, feature: '*', from: H, until: H + 60, step: 60, resolution: 60 }))[0]?.allowed,
      ).toBe(4);
      expect((await store.events()).map((range) => range.event)).toEqual(['login', 'twice', event].sort());
      await store.close();
    });

    it('counts what the recorder flushes, each second and minute in its batch', async () => {
      let clock = (H + 2 * 60 + 58) * 1000;
      const store = open();
      const recorder = new UsageRecorder({
        stores: { graphite: store },
        readFrom: 'graphite',
        flushSeconds: 3600,
        top: 5,
        now: () => clock,
      });
      for (const [at, feature, allowed, shadowDenied] of [
        [0, 'dave', true, []],
        [0, 'dave', false, []],
        [1000, 'erin', true, []],
        [2000, 'dave', true, []],
        [2500, 'dave', true, ['recorded-1m']],
      ] as const) {
        clock = (H + 2 * 60 + 58) * 1000 + at;
        recorder.record('recorded', feature, { allowed, degraded: false, shadowDenied });
      }
      // Two settles in the second minute, each at its own second (as the service's onSettle tells it).
      recorder.recordSettled('recorded', 900);
      clock = (H + 3 * 60 + 30) * 1000;
      recorder.recordSettled('recorded', 4096);
      await recorder.flush(); // the seconds and the minute that ended
      await recorder.close(); // the open second and minute
      expect(recorder.pendingRows).toBe(0);
      const minute = H + 120;
      await expect
        .poll(
          () => store.series({ event: 'recorded', from: minute, until: minute + 120, step: 60, resolution: 1 }),
          VISIBLE,
        )
        .toEqual([
          { t: minute, allowed: 2, denied: 1, degraded: 0, shadow_denied: 0, ...unsettled },
          { t: minute + 60, allowed: 2, denied: 0, degraded: 0, shadow_denied: 1, settled: 2, settled_cost: 4996 },
        ]);
      expect(
        await store.top({ event: 'recorded', from: minute, until: minute + 120, resolution: 60, limit: 5 }),
      ).toEqual({
        allowed: [
          { feature: 'dave', count: 3 },
          { feature: 'erin', count: 1 },
        ],
        denied: [{ feature: 'dave', count: 1 }],
      });
      await store.close();
    });
  });

  // Run after the tests above: with and without MEMGATE_GRAPHITE_INSTANCE in one Graphite,
  // each layout's nodes look like the other's events (the setting is for every instance or none).
  describe('several instances, each with MEMGATE_GRAPHITE_INSTANCE', () => {
    it('sums the instances that wrote the same seconds, and their clients', async () => {
      const [a, b] = [open('web-a'), open('web-b')];
      const batch = (instance: string, allowed: number, frank: number): UsageBatch => ({
        instance,
        sequence: 0,
        // Each instance settled one reservation in the same second: their costs sum.
        seconds: [
          {
            event: 'shared',
            t: H + 30,
            allowed,
            denied: 1,
            degraded: 0,
            shadow_denied: 1,
            settled: 1,
            settled_cost: allowed * 250,
          },
        ],
        minutes: [
          {
            event: 'shared',
            t: H,
            allowed: [
              { feature: 'frank', count: frank },
              { feature: instance, count: 1 },
            ],
            denied: [],
          },
        ],
      });
      await a.write(batch('a', 5, 2));
      await b.write(batch('b', 6, 3));
      await expect
        .poll(() => a.series({ event: 'shared', from: H, until: H + 60, step: 60, resolution: 1 }), VISIBLE)
        .toEqual([{ t: H, allowed: 11, denied: 2, degraded: 0, shadow_denied: 2, settled: 2, settled_cost: 2750 }]);
      expect(await b.series({ event: 'shared', from: H + 30, until: H + 31, step: 1, resolution: 1 })).toEqual([
        { t: H + 30, allowed: 11, denied: 2, degraded: 0, shadow_denied: 2, settled: 2, settled_cost: 2750 },
      ]);
      await expect
        .poll(() => b.top({ event: 'shared', from: H, until: H + 60, resolution: 60, limit: 3 }), VISIBLE)
        .toEqual({
          allowed: [
            { feature: 'frank', count: 5 },
            { feature: 'a', count: 1 },
            { feature: 'b', count: 1 },
          ],
          denied: [],
        });
      expect(
        (await a.series({ event: 'shared', feature: 'frank', from: H, until: H + 60, step: 60, resolution: 60 }))[0],
      ).toEqual({ ...zero(H), allowed: 5, unnamed: { allowed: 4, denied: 2 } });
      expect((await a.events()).map((range) => range.event)).toContain('shared');
      await Promise.all([a.close(), b.close()]);
    });
  });

  describe('failures', () => {
    it('rejects a write when nothing listens where carbon should', async () => {
      const store = openGraphiteUsage({
        carbon: { host: '127.0.0.1', port: await freePort() },
        web: graphite().web,
        archives: ARCHIVES,
      });
      await expect(store.write(login)).rejects.toThrow(UsageStoreUnavailableError);
      await store.close();
    });

    it('rejects reads with UsageStoreUnavailableError once graphite-web is down', async () => {
      const store = open();
      await expect(store.events()).resolves.not.toHaveLength(0);
      await graphite().stopWeb();
      await expect(store.series({ event: 'login', from: H, until: H + 60, step: 60, resolution: 1 })).rejects.toThrow(
        UsageStoreUnavailableError,
      );
      await expect(store.top({ event: 'login', from: H, until: H + 60, resolution: 60, limit: 5 })).rejects.toThrow(
        UsageStoreUnavailableError,
      );
      await expect(store.events()).rejects.toThrow(UsageStoreUnavailableError);
      // Carbon still takes writes.
      await expect(store.write(login)).resolves.toBeUndefined();
      await store.close();
    });
  });
});
