// `memgate what-if`'s answer: a log replayed through the policies in use and the new ones, and
// per event what changes: requests, denials, and the clients newly refused or newly admitted.
import type { AccessLogSummary, LoggedRequest, SkipReason, SkippedLines } from './access-log.js';
import type { ExactReplay, UncountedReason } from './exact-replay.js';
import { Timeline, type TimelinePoint } from './timeline.js';

/** One client's requests of an event, and its denials under each policy set. */
export interface ClientChange {
  readonly client: string;
  readonly requests: number;
  readonly deniedNow: number;
  readonly deniedNew: number;
}

/** A count under the policies in use and under the new ones. */
export interface Both {
  readonly current: number;
  readonly new: number;
}

export interface EventChange {
  readonly event: string;
  /** Requests placed on the event. */
  readonly requests: Both;
  readonly denied: Both;
  /** Allowed requests a limit in shadow would have refused. */
  readonly shadowDenied: Both;
  /** Clients with more denials under the new policies, most added first (`top` of them). */
  readonly newlyRefused: readonly ClientChange[];
  readonly newlyRefusedCount: number;
  /** Clients with fewer denials under the new policies. */
  readonly newlyAdmitted: readonly ClientChange[];
  readonly newlyAdmittedCount: number;
  /** Denials per step of the report's `stepSeconds` (`t`: its start, epoch seconds), every step of the log, for a chart. */
  readonly deniedOverTime: readonly TimelinePoint[];
}

export interface WhatIfReport {
  readonly trace: {
    readonly path: string;
    readonly requests: number;
    /** Lines not replayed, by why. */
    readonly skipped: Readonly<Partial<Record<SkipReason, SkippedLines>>>;
    /** Epoch seconds of the first and last request. */
    readonly from?: number;
    readonly until?: number;
  };
  readonly current: { readonly source: string; readonly uncounted: Readonly<Partial<Record<UncountedReason, number>>> };
  readonly new: { readonly source: string; readonly uncounted: Readonly<Partial<Record<UncountedReason, number>>> };
  readonly events: readonly EventChange[];
  /** The step of every event's `deniedOverTime`, in seconds: a minute, or more when the log spans more than the chart's points. */
  readonly stepSeconds: number;
}

/** The policies in use (0) and the new ones (1). */
const SIDES = [0, 1] as const;

interface Tally {
  requests: [number, number];
  denied: [number, number];
  shadowDenied: [number, number];
  clients: Map<string, { requests: [number, number]; denied: [number, number] }>;
}

/**
 * Both policy sets' replays of one log, fed its requests in time order as it is read: what it
 * keeps grows with the log's clients and events, not with its requests.
 */
export class Comparison {
  readonly #tallies = new Map<string, Tally>();
  readonly #timeline: Timeline;
  readonly #uncounted: [Partial<Record<UncountedReason, number>>, Partial<Record<UncountedReason, number>>] = [{}, {}];

  constructor(
    private readonly current: ExactReplay,
    private readonly next: ExactReplay,
    private readonly options: {
      /** Clients listed per event as newly refused and newly admitted. */
      readonly top: number;
      /** The most points each event's denials over time may have, whatever span the log covers. */
      readonly chartPoints: number;
    },
  ) {
    this.#timeline = new Timeline(options.chartPoints);
  }

  /** Replays one request under both sets. */
  add(request: LoggedRequest): void {
    const both = [this.current.replay(request), this.next.replay(request)] as const;
    const second = Math.floor(request.ms / 1000);
    this.#timeline.reach(second);
    for (const side of SIDES) {
      const replayed = both[side];
      const { placement } = replayed;
      if (placement.kind === 'uncounted') {
        const reasons = this.#uncounted[side];
        reasons[placement.reason] = (reasons[placement.reason] ?? 0) + 1;
        continue;
      }
      const tally = this.#tallyOf(placement.event);
      tally.requests[side]++;
      let client = tally.clients.get(placement.feature);
      if (!client) tally.clients.set(placement.feature, (client = { requests: [0, 0], denied: [0, 0] }));
      client.requests[side]++;
      if (!replayed.allowed) {
        tally.denied[side]++;
        client.denied[side]++;
        this.#timeline.count(placement.event, side, second);
      }
      if (replayed.shadowDenied) tally.shadowDenied[side]++;
    }
  }

  /** The report, once the log `path` has been read to its end. */
  report(path: string, log: AccessLogSummary): WhatIfReport {
    return {
      trace: {
        path,
        requests: log.requests,
        skipped: log.skipped,
        ...(log.firstMs === undefined || log.lastMs === undefined
          ? {}
          : { from: Math.floor(log.firstMs / 1000), until: Math.floor(log.lastMs / 1000) }),
      },
      current: { source: this.current.policies.source, uncounted: this.#uncounted[0] },
      new: { source: this.next.policies.source, uncounted: this.#uncounted[1] },
      events: [...this.#tallies]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([event, tally]) => eventChange(event, tally, this.options.top, this.#timeline.points(event))),
      stepSeconds: this.#timeline.step,
    };
  }

  #tallyOf(event: string): Tally {
    let tally = this.#tallies.get(event);
    if (!tally)
      this.#tallies.set(
        event,
        (tally = { requests: [0, 0], denied: [0, 0], shadowDenied: [0, 0], clients: new Map() }),
      );
    return tally;
  }
}

function eventChange(event: string, tally: Tally, top: number, deniedOverTime: readonly TimelinePoint[]): EventChange {
  const changes = [...tally.clients].map(
    // Both sides place a client's requests on the same event unless the routes changed: the larger count.
    ([client, { requests, denied }]): ClientChange => ({
      client,
      requests: Math.max(...requests),
      deniedNow: denied[0],
      deniedNew: denied[1],
    }),
  );
  const refused = changes
    .filter((c) => c.deniedNew > c.deniedNow)
    .sort((a, b) => b.deniedNew - b.deniedNow - (a.deniedNew - a.deniedNow) || a.client.localeCompare(b.client));
  const admitted = changes
    .filter((c) => c.deniedNew < c.deniedNow)
    .sort((a, b) => b.deniedNow - b.deniedNew - (a.deniedNow - a.deniedNew) || a.client.localeCompare(b.client));
  return {
    event,
    requests: { current: tally.requests[0], new: tally.requests[1] },
    denied: { current: tally.denied[0], new: tally.denied[1] },
    shadowDenied: { current: tally.shadowDenied[0], new: tally.shadowDenied[1] },
    newlyRefused: refused.slice(0, top),
    newlyRefusedCount: refused.length,
    newlyAdmitted: admitted.slice(0, top),
    newlyAdmittedCount: admitted.length,
    deniedOverTime,
  };
}
