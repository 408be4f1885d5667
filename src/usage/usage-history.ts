import { DEFAULTS } from '../config/defaults.js';
import type { Archive } from '../config/retention.js';
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

/** A point of /usage: the step's counts, and for a client's curve which of them are known. */
export interface AnsweredPoint extends Omit<SeriesPoint, 'unnamed'> {
  /**
   * A client's curve only. False for an outcome where the client is not among the clients
   * the history names in this step while others went unnamed: its count there is unknown (it
   * was below the step's heaviest), not the 0 the point holds.
   */
  readonly tracked?: { readonly allowed: boolean; readonly denied: boolean };
}

export interface SeriesAnswer {
  readonly event: string;
  readonly feature: string | null;
  readonly from: number;
  readonly until: number;
  readonly step: number;
  readonly points: readonly AnsweredPoint[];
}

export interface TopAnswer {
  readonly event: string;
  readonly from: number;
  readonly until: number;
  readonly allowed: readonly ClientCount[];
  readonly denied: readonly ClientCount[];
}

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
      const feature = params.feature === undefined || params.feature === '' ? undefined : params.feature;
      const nowMs = now();
      const plan = planSeries({ ...params, perClient: feature !== undefined }, archives, nowMs);
      const { firstPoint, until, step, resolution } = plan;
      const points = await reader.series({
        event,
        ...(feature ? { feature } : {}),
        from: firstPoint,
        until,
        step,
        resolution,
      });
      // Read in the same turn as the store's answer arrives: a flush removes what it wrote in
      // its own turn, and none lands while the file is read (slice-lane.ts).
      const unflushed = recorder?.unflushed(event);
      /** The index of the point that holds second `t`, as the store files it: its archive point, then the step holding that. */
      const indexAt = (t: number) => {
        const archived = t - (t % resolution);
        if (archived < firstPoint || archived >= until) return -1;
        return (archived - firstPoint - ((archived - firstPoint) % step)) / step;
      };
      const pointAt = (t: number) => points[indexAt(t)] as Mutable<SeriesPoint> | undefined;
      if (unflushed && feature === undefined) {
        for (const second of unflushed.seconds) {
          const point = pointAt(second.t);
          if (!point) continue;
          point.allowed += second.allowed;
          point.denied += second.denied;
          point.degraded += second.degraded;
        }
      }
      if (feature === undefined) return { event, feature: null, from: plan.from, until: plan.until, step, points };
      // A client's curve: its counts and what went unnamed, with memory's share of both.
      const unnamed = points.map(({ unnamed: stored }) => ({ allowed: 0, denied: 0, ...stored }));
      const unnamedAt = (t: number) => unnamed[indexAt(t)];
      for (const second of unflushed?.seconds ?? []) {
        const counts = unnamedAt(second.t);
        if (!counts) continue;
        counts.allowed += second.allowed;
        counts.denied += second.denied;
      }
      for (const minute of unflushed?.minutes ?? []) {
        const point = pointAt(minute.t);
        const counts = unnamedAt(minute.t);
        if (!point || !counts) continue;
        for (const outcome of ['allowed', 'denied'] as const) {
          for (const client of minute[outcome]) {
            counts[outcome] -= client.count;
            if (client.feature === feature) point[outcome] += client.count;
          }
        }
      }
      const answered = points.map(({ t, allowed, denied, degraded }, index): AnsweredPoint => {
        const counts = unnamed[index] ?? { allowed: 0, denied: 0 };
        const tracked = { allowed: allowed > 0 || counts.allowed <= 0, denied: denied > 0 || counts.denied <= 0 };
        return { t, allowed, denied, degraded, tracked };
      });
      return { event, feature, from: plan.from, until: plan.until, step, points: answered };
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

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
