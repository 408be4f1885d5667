import { DEFAULTS } from '../config/defaults.js';
import type { Archive } from '../config/retention.js';
import { canonicalFeature } from '../shared/client-address.js';
import type {
  UsagePoint as AnsweredPoint,
  UsageSeries as SeriesAnswer,
  UsageTop as TopAnswer,
} from '../shared/contract-service.js';
import {
  coarsest,
  endOfSecond,
  parseRange,
  pickArchive,
  planSeries,
  positiveWhole,
  UsageQueryError,
  type RangeParams,
  type SeriesParams,
} from './query-plan.js';
import type { UsageRecorder } from './recorder.js';
import {
  TOP_DAY_RESOLUTION,
  type ClientCount,
  type EventRange,
  type MinuteTop,
  type SeriesPoint,
  type UsageStore,
} from './usage-store.js';

export interface UsageHistoryOptions {
  /** Where points are read: the SQLite file, or graphite-web. */
  readonly reader: Pick<UsageStore, 'series' | 'top' | 'events'>;
  /** This instance's counts not yet written, added to what the reader answers. */
  readonly recorder?: UsageRecorder;
  readonly archives: readonly Archive[];
  /** The events of the policies in use: asking for one of them is never `unknown_event`. */
  readonly policyEvents: () => Iterable<string>;
  /** Milliseconds since the epoch. Default Date.now. */
  readonly now?: () => number;
}

// What /usage and /usage/top answer is the contract's (src/shared/contract-service.ts): a
// client's point says with `tracked` which of its counts are known (see SeriesPoint.unnamed).
export type { AnsweredPoint, SeriesAnswer, TopAnswer };

/** What /usage, /usage/top and /usage/events answer, from the store and this instance's memory. */
export interface UsageHistory {
  series(
    params: Omit<SeriesParams, 'perClient'> & { event?: string | undefined; feature?: string | undefined },
  ): Promise<SeriesAnswer>;
  top(params: RangeParams & { event?: string | undefined; limit?: string | undefined }): Promise<TopAnswer>;
  events(): Promise<EventRange[]>;
  /** The archives, finest first: what resolutions exist and how far back. */
  readonly retention: readonly { resolution: number; keepSeconds: number }[];
}

export function createUsageHistory({
  reader,
  recorder,
  archives,
  policyEvents,
  now = Date.now,
}: UsageHistoryOptions): UsageHistory {
  /** The event asked, if memgate has a policy or data for it. */
  async function knownEvent(event: string | undefined): Promise<string> {
    if (event === undefined || event === '')
      throw new UsageQueryError('invalid_event', 'event is required: one of GET /usage/events, or of the policy file');
    if (new Set(policyEvents()).has(event) || recorder?.unflushedEvents().has(event)) return event;
    if ((await reader.events()).some((range) => range.event === event)) return event;
    throw new UsageQueryError('unknown_event', `no policy and no usage recorded for event ${JSON.stringify(event)}`);
  }

  return {
    retention: archives,
    async series(params) {
      const event = await knownEvent(params.event);
      // Recorded as checks name it, in its one spelling: an address asked for however it is written.
      const feature =
        params.feature === undefined || params.feature === '' ? undefined : canonicalFeature(params.feature);
      const nowMs = now();
      const plan = planSeries({ ...params, perClient: feature !== undefined }, archives, nowMs);
      const { firstPoint, until, step, resolution } = plan;
      // A client's curve is read a point per archive point: whether its count is known is
      // decided where the history decides it, then folded into the steps asked.
      const stored = await reader.series({
        event,
        ...(feature ? { feature } : {}),
        from: firstPoint,
        until,
        step: feature === undefined ? step : resolution,
        resolution,
      });
      // Read in the same turn as the store's answer arrives: a flush removes what it wrote in
      // its own turn, and none lands while the file is read (slice-lane.ts).
      const unflushed = recorder?.unflushed(event);
      const per = feature === undefined ? step : resolution;
      /** The point holding second `t`, as the store files it: in its archive point, then in the point holding that. */
      const pointAt = (t: number) => {
        const archived = t - (t % resolution);
        if (archived < firstPoint || archived >= until) return undefined;
        return stored[(archived - firstPoint - ((archived - firstPoint) % per)) / per] as
          Mutable<SeriesPoint> | undefined;
      };
      if (feature === undefined) {
        for (const second of unflushed?.seconds ?? []) {
          const point = pointAt(second.t);
          if (!point) continue;
          point.allowed += second.allowed;
          point.denied += second.denied;
          point.degraded += second.degraded;
          point.shadow_denied += second.shadow_denied ?? 0;
          point.settled += second.settled ?? 0;
          point.settled_cost += second.settled_cost ?? 0;
        }
        return { event, feature: null, from: plan.from, until: plan.until, step, points: stored };
      }
      // What went unnamed at each archive point, memory's share added: its seconds, less its
      // minutes' named clients (written or not, a minute's list covers the whole minute).
      const unnamed = new Map<Mutable<SeriesPoint>, { allowed: number; denied: number }>();
      const unnamedOf = (point: Mutable<SeriesPoint>) => {
        let counts = unnamed.get(point);
        if (!counts) unnamed.set(point, (counts = { allowed: 0, denied: 0, ...point.unnamed }));
        return counts;
      };
      for (const second of unflushed?.seconds ?? []) {
        const point = pointAt(second.t);
        if (!point) continue;
        unnamedOf(point).allowed += second.allowed;
        unnamedOf(point).denied += second.denied;
      }
      for (const minute of unflushed?.minutes ?? []) {
        const point = pointAt(minute.t);
        if (!point) continue;
        for (const outcome of ['allowed', 'denied'] as const) {
          for (const client of minute[outcome]) {
            unnamedOf(point)[outcome] -= client.count;
            if (client.feature === feature) point[outcome] += client.count;
          }
        }
      }
      // A step's count is known where every archive point of it is: the client was named
      // there, or nothing went unnamed.
      const points: AnsweredPoint[] = [];
      let folded = 0;
      for (let t = firstPoint, index = 0; t < until; t += step) {
        // degraded, shadow_denied and settles are counted per event only: 0 on a client's curve.
        const sum = {
          t,
          allowed: 0,
          denied: 0,
          degraded: 0,
          shadow_denied: 0,
          settled: 0,
          settled_cost: 0,
          tracked: { allowed: true, denied: true },
        };
        // A year of minutes is half a million points: no allocation per point.
        for (; index < stored.length && (stored[index]?.t ?? until) < t + step; index++) {
          // A year of minutes (a retention of 1m:1y) is half a million points: folded a slice a
          // turn, from what was read above (memory's share is in `unnamed` and the points already).
          if (++folded % FOLD_CHUNK === 0) await nextTurn();
          const point = stored[index] as Mutable<SeriesPoint>;
          const counts = unnamed.get(point) ?? point.unnamed;
          sum.allowed += point.allowed;
          sum.denied += point.denied;
          if (point.allowed === 0 && (counts?.allowed ?? 0) > 0) sum.tracked.allowed = false;
          if (point.denied === 0 && (counts?.denied ?? 0) > 0) sum.tracked.denied = false;
        }
        points.push(sum);
      }
      return { event, feature, from: plan.from, until: plan.until, step, points };
    },

    async top(params) {
      const event = await knownEvent(params.event);
      const limit = positiveWhole(params.limit, 'limit') ?? DEFAULTS.usageTopDefaultLimit;
      if (limit > DEFAULTS.usageTopMaxLimit)
        throw new UsageQueryError('invalid_range', `limit must be at most ${DEFAULTS.usageTopMaxLimit} (got ${limit})`);
      const nowMs = now();
      const { from, until } = parseRange(params, nowMs);
      // Summing a long range minute by minute costs the event loop: past a day, hours.
      const picked = pickArchive(archives, from, nowMs, {
        perClient: true,
        span: until - from,
        maxPoints: DEFAULTS.usageTopMaxPeriods,
      }).resolution;
      // Still too many periods in the coarsest archive: the stores' daily sums of clients.
      const resolution =
        (until - from) / picked > DEFAULTS.usageTopMaxPeriods && TOP_DAY_RESOLUTION % picked === 0
          ? TOP_DAY_RESOLUTION
          : picked;
      const start = from - (from % resolution);
      let minutes: MinuteTop[] = [];
      // The store's counts of every client memory adds to, ranked or not: a client outside
      // the store's top may climb into it with what memory holds. Memory is read when the
      // store asks, at the moment its answer is fixed, so nothing counts twice or not at all.
      const include = () => {
        minutes = (recorder?.unflushed(event).minutes ?? []).filter(
          ({ t }) => t - (t % resolution) >= start && t - (t % resolution) < until,
        );
        return [
          ...new Set(minutes.flatMap((minute) => [...minute.allowed, ...minute.denied].map(({ feature }) => feature))),
        ];
      };
      const stored = await reader.top({ event, from: start, until, resolution, limit, include });
      const merge = (fromStore: readonly ClientCount[], outcome: 'allowed' | 'denied') => {
        const counts = new Map(fromStore.map(({ feature, count }) => [feature, count]));
        for (const minute of minutes)
          for (const { feature, count } of minute[outcome]) counts.set(feature, (counts.get(feature) ?? 0) + count);
        return [...counts]
          .map(([feature, count]) => ({ feature, count }))
          .sort((a, b) => b.count - a.count || (a.feature < b.feature ? -1 : 1))
          .slice(0, limit);
      };
      // `from` as counted: the start of the archive's period that holds it.
      return {
        event,
        from: start,
        until,
        allowed: merge(stored.allowed, 'allowed'),
        denied: merge(stored.denied, 'denied'),
      };
    },

    async events() {
      const oldest = endOfSecond(now()) - coarsest(archives).keepSeconds;
      const ranges = new Map((await reader.events()).map((range) => [range.event, range]));
      for (const event of recorder?.unflushedEvents() ?? []) {
        for (const { t } of recorder?.unflushed(event).seconds ?? []) {
          const range = ranges.get(event);
          ranges.set(event, {
            event,
            from: Math.min(range?.from ?? t, t),
            until: Math.max(range?.until ?? t + 1, t + 1),
          });
        }
      }
      return [...ranges.values()]
        .filter(({ until }) => until > oldest)
        .map((range) => ({ ...range, from: Math.max(range.from, oldest) }))
        .sort((a, b) => (a.event < b.event ? -1 : 1));
    },
  };
}

/**
 * Archive points a turn folds into a client's curve, a few comparisons each (about 1 ms):
 * the default retention's month of minutes (43,200) in one go. Pausing is not free: the
 * store's answer, a few MB of objects, then lives through the pause, and a young-generation
 * collection that runs in it copies them all.
 */
export const FOLD_CHUNK = 65_536;

/** Lets the event loop answer what waits (a /check) before going on. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
