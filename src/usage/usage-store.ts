/**
 * What usage history is made of, and the one interface its backends implement (the
 * embedded SQLite file, Graphite). The recorder hands a store batches of finished seconds
 * and minutes; queries ask it for points at one archive's resolution.
 */

/**
 * What usage history counts of decisions: the first three are what a decision was (admitted,
 * refused, or decided by `onStoreError` without counts), one each, so that they sum to every
 * decision; `shadow_denied` counts the allowed ones a limit in `mode: shadow` would have
 * refused, a part of `allowed` and not a fourth kind of decision.
 */
export const OUTCOMES = ['allowed', 'denied', 'degraded', 'shadow_denied'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/**
 * What usage history counts of reservations settled (POST /settle, and Envoy's call at a
 * stream's end), per event at the settle's second: `settled`, how many, and `settled_cost`,
 * the sum of their actual costs, in the units the event's limits count (tokens, say), not
 * decisions. Kept per event only: no client is ranked by them.
 */
export const SETTLED = ['settled', 'settled_cost'] as const;
export type SettledCount = (typeof SETTLED)[number];

/** Everything counted per event and second: the decisions' outcomes, then the settles. */
export const EVENT_COUNTS = [...OUTCOMES, ...SETTLED] as const;
export type EventCount = (typeof EVENT_COUNTS)[number];

/**
 * The resolution /usage/top may ask for beyond the archives: clients summed per day, for
 * ranges of many days. Graphite sums a range itself and ignores it.
 */
export const TOP_DAY_RESOLUTION = 86_400;

/** How many decisions of each outcome, and what was settled. */
export interface Counts {
  allowed: number;
  denied: number;
  degraded: number;
  /**
   * Of `allowed`, those a shadow limit would have refused. Left out, 0: a writer whose events
   * have no shadow limits may leave it out (the benchmarks' do); what a store answers has it.
   */
  shadow_denied?: number;
  /**
   * Reservations settled, and the sum of their actual costs. Left out, 0, as shadow_denied:
   * what a store answers has them.
   */
  settled?: number;
  settled_cost?: number;
}

/** One finished second of one event, as one instance decided it. */
export interface SecondCounts extends Counts {
  readonly event: string;
  /** The second, in epoch seconds. */
  readonly t: number;
}

/** A client and how many decisions of one outcome it got. */
export interface ClientCount {
  readonly feature: string;
  readonly count: number;
}

/**
 * One finished minute's heaviest clients of one event on one instance: up to
 * MEMGATE_USAGE_TOP each for allowed and denied, with counts that are never more than the
 * client got (exact unless the minute had more clients than the summary could follow).
 */
export interface MinuteTop {
  readonly event: string;
  /** The minute's first second, in epoch seconds. */
  readonly t: number;
  readonly allowed: readonly ClientCount[];
  readonly denied: readonly ClientCount[];
}

/**
 * What one flush writes. Each second and each minute of an instance is in one batch only,
 * and a batch written twice (a retry after an answer was lost) counts once: stores key what
 * they write by instance and second.
 */
export interface UsageBatch {
  /** This process: a new one at each start, so a restart never overwrites the last run. */
  readonly instance: string;
  /** This batch's number within the instance: with `instance`, what makes a batch written twice count once. */
  readonly sequence: number;
  readonly seconds: readonly SecondCounts[];
  readonly minutes: readonly MinuteTop[];
}

/** Points of one event (or one of its clients) at one resolution. */
export interface SeriesQuery {
  readonly event: string;
  /** One client's curve, from the minutes it was among the heaviest; undefined for the whole event. */
  readonly feature?: string;
  /** The first point's start, a multiple of `step`. */
  readonly from: number;
  /** Points start before this. */
  readonly until: number;
  /** Seconds per point: a multiple of `resolution`. */
  readonly step: number;
  /** The archive to read: 1, 60 or 3600 by default (see Retention). */
  readonly resolution: number;
}

export interface SeriesPoint extends Counts {
  /** The step's first second, in epoch seconds. */
  readonly t: number;
  /** Always there in an answer; 0 on a client's curve, as it is counted per event only. */
  shadow_denied: number;
  /** Always there in an answer; 0 on a client's curve, as they are counted per event only. */
  settled: number;
  settled_cost: number;
  /**
   * A client's curve only: the event's allowed and denied decisions in this step less what the
   * clients the history names did, i.e. what went to clients outside the heaviest of their
   * minute or dropped from a period by compaction (below 0 when a minute's names were written
   * before its seconds). Where the client has no count of an outcome and this is above 0, its
   * count there is unknown, not 0. usage-history.ts asks for a point per archive point.
   */
  readonly unnamed?: { readonly allowed: number; readonly denied: number };
}

export interface TopQuery {
  readonly event: string;
  readonly from: number;
  readonly until: number;
  /** The archive to read, at least 60: clients are kept per minute. */
  readonly resolution: number;
  readonly limit: number;
  /**
   * Clients whose counts the answer must hold even below the limit: those the caller adds
   * counts to from memory, so that its ranking of the sum is right. Called once, when the
   * store fixes what it answers from, so that the caller reads its memory at that moment.
   */
  readonly include?: () => readonly string[];
}

export interface TopClients {
  readonly allowed: readonly ClientCount[];
  readonly denied: readonly ClientCount[];
}

/** An event with recorded data, and the span its data covers, in epoch seconds. */
export interface EventRange {
  readonly event: string;
  readonly from: number;
  readonly until: number;
}

export interface UsageStore {
  /** For logs and /usage/events: `sqlite` or `graphite`. */
  readonly kind: string;
  /** Writes a batch; throws when it could not, and the recorder keeps the batch to retry. */
  write(batch: UsageBatch): Promise<void>;
  /** One point per step from `from` while before `until`, zero-filled. */
  series(query: SeriesQuery): Promise<SeriesPoint[]>;
  /** The clients with the most decisions of each outcome over the range, most first. */
  top(query: TopQuery): Promise<TopClients>;
  /** Every event with data. */
  events(): Promise<EventRange[]>;
  close(): Promise<void>;
}

/**
 * The usage store did not answer in time, or not as it should (carbon, graphite-web). A
 * write that throws it stays with the recorder for the next flush; a /usage read answers
 * 502 `usage_store_unavailable`.
 */
export class UsageStoreUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UsageStoreUnavailableError';
  }
}
