// `memgate what-if`'s answer: a log replayed through the policies in use and the new ones, and
// per event what changes: requests, denials, and the clients newly refused or newly admitted.
import type { AccessLog } from './access-log.js';
import type { ExactReplay, UncountedReason } from './exact-replay.js';

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
  /** Denials per minute (`t`: its start, epoch seconds), for a chart. */
  readonly perMinute: readonly { readonly t: number; readonly current: number; readonly new: number }[];
}

export interface WhatIfReport {
  readonly trace: {
    readonly path: string;
    readonly requests: number;
    readonly unreadable: number;
    readonly firstUnreadable?: string;
    /** Epoch seconds of the first and last request. */
    readonly from?: number;
    readonly until?: number;
  };
  readonly current: { readonly source: string; readonly uncounted: Readonly<Partial<Record<UncountedReason, number>>> };
  readonly new: { readonly source: string; readonly uncounted: Readonly<Partial<Record<UncountedReason, number>>> };
  readonly events: readonly EventChange[];
}

/** The policies in use (0) and the new ones (1). */
const SIDES = [0, 1] as const;

interface Tally {
  requests: [number, number];
  denied: [number, number];
  shadowDenied: [number, number];
  clients: Map<string, { requests: [number, number]; denied: [number, number] }>;
  minutes: Map<number, [number, number]>;
}

/** Replays `log` through both policy sets, in time order, and compares them. */
export function compareReplays(
  path: string,
  log: AccessLog,
  current: ExactReplay,
  next: ExactReplay,
  { top = 10 }: { top?: number } = {},
): WhatIfReport {
  const tallies = new Map<string, Tally>();
  const uncounted: [Partial<Record<UncountedReason, number>>, Partial<Record<UncountedReason, number>>] = [{}, {}];
  const tallyOf = (event: string): Tally => {
    let tally = tallies.get(event);
    if (!tally)
      tallies.set(
        event,
        (tally = { requests: [0, 0], denied: [0, 0], shadowDenied: [0, 0], clients: new Map(), minutes: new Map() }),
      );
    return tally;
  };
  for (const request of log.requests) {
    const both = [current.replay(request), next.replay(request)] as const;
    for (const side of SIDES) {
      const replayed = both[side];
      const { placement } = replayed;
      if (placement.kind === 'uncounted') {
        const reasons = uncounted[side];
        reasons[placement.reason] = (reasons[placement.reason] ?? 0) + 1;
        continue;
      }
      const tally = tallyOf(placement.event);
      tally.requests[side]++;
      let client = tally.clients.get(placement.feature);
      if (!client) tally.clients.set(placement.feature, (client = { requests: [0, 0], denied: [0, 0] }));
      client.requests[side]++;
      if (!replayed.allowed) {
        tally.denied[side]++;
        client.denied[side]++;
        const minute = Math.floor(request.ms / 60_000) * 60;
        let perMinute = tally.minutes.get(minute);
        if (!perMinute) tally.minutes.set(minute, (perMinute = [0, 0]));
        perMinute[side]++;
      }
      if (replayed.shadowDenied) tally.shadowDenied[side]++;
    }
  }
  return {
    trace: {
      path,
      requests: log.requests.length,
      unreadable: log.unparseable,
      ...(log.firstUnparseable === undefined ? {} : { firstUnreadable: log.firstUnparseable }),
      ...(log.requests.length > 0
        ? {
            from: Math.floor((log.requests[0]?.ms ?? 0) / 1000),
            until: Math.floor((log.requests.at(-1)?.ms ?? 0) / 1000),
          }
        : {}),
    },
    current: { source: current.policies.source, uncounted: uncounted[0] },
    new: { source: next.policies.source, uncounted: uncounted[1] },
    events: [...tallies].sort(([a], [b]) => a.localeCompare(b)).map(([event, tally]) => eventChange(event, tally, top)),
  };
}

function eventChange(event: string, tally: Tally, top: number): EventChange {
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
    perMinute: [...tally.minutes]
      .sort(([a], [b]) => a - b)
      .map(([t, [currentCount, newCount]]) => ({ t, current: currentCount, new: newCount })),
  };
}
