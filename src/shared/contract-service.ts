// The HTTP contract's service answers, written once as TypeBox schemas, as contract.ts writes
// the decisions': health and readiness, the loaded policies, usage history. memgate's own
// modules take their types from here (usage/ its answers, commands/ what it asks a memgate);
// memgate/client asks none of these.
import { Type, type Static } from 'typebox';
import { flag, list, object, oneOf, request } from './contract-kit.js';

// ---------------------------------------------------------------------------------------
// Health

export const Status = object({ status: Type.String() });
export type Status = Static<typeof Status>;

const errorDetail = object({
  code: Type.String({ description: 'What went wrong, for programs: the README lists every code' }),
  message: Type.String({ description: 'What went wrong, for people' }),
});

/** /readyz: every counter server with whether it answers; `error` when some do not, or while draining (no servers then). */
export const Readiness = object({
  status: Type.String({ description: 'ready, unavailable, or draining (shutting down)' }),
  store: Type.String({ description: 'memcached or embedded' }),
  policyVersion: Type.Optional(
    Type.String({
      description:
        'the version of the policies in use: a hash of the policy file and MEMGATE_ENVOY_CONFIG, the same on every instance that runs the same files',
    }),
  ),
  clockOffsetMs: Type.Optional(
    Type.Integer({
      description:
        "the store's clock, which memgate counts by, minus this host's, in milliseconds (the servers' median; 0 for the embedded store)",
    }),
  ),
  servers: Type.Optional(
    list(
      object({
        server: Type.String(),
        up: Type.Boolean(),
        error: Type.Optional(Type.String()),
        evictions: Type.Optional(
          Type.Integer({ description: 'items evicted since the server started: raise its memory if this grows' }),
        ),
        clockOffsetMs: Type.Optional(
          Type.Integer({ description: "this server's clock minus this host's, in milliseconds, as last measured" }),
        ),
        state: Type.Optional(
          oneOf(['up', 'down', 'failed-over'] as const, {
            description:
              "where this server's clients are counted: `up` on it; `down` nowhere, their checks decided by each event's onStoreError; `failed-over` on the servers in failedOverTo (MEMCACHED_FAILOVER), until it has answered for MEMCACHED_FAILOVER_SETTLE_MS",
          }),
        ),
        failedOverTo: Type.Optional(
          list(Type.String(), {
            description: 'while failed over: the servers after it on the ring, which count its clients (from zero)',
          }),
        ),
        returnsInMs: Type.Optional(
          Type.Integer({
            description: 'failed over and answering again: how long until its clients move back, if it keeps answering',
          }),
        ),
      }),
    ),
  ),
  error: Type.Optional(errorDetail),
});
export type Readiness = Static<typeof Readiness>;

// ---------------------------------------------------------------------------------------
// Policies

const keysPerCheck = object({ max: Type.Integer(), mean: Type.Optional(Type.Number()) });

const limitSizing = list(
  object({
    name: Type.String(),
    limit: Type.Integer(),
    window: Type.Integer(),
    granularity: Type.Integer(),
    calendar: Type.Optional(
      object(
        {
          unit: oneOf(['day', 'week', 'month'] as const),
          anchor: Type.Integer({
            description: "the period's first day: ISO weekday for a week, day of the month for a month",
          }),
          timeZone: Type.String({ description: 'an IANA time zone, e.g. Europe/Berlin' }),
        },
        { description: 'a calendar window: periods from local midnight to local midnight' },
      ),
    ),
    rate: Type.Optional(
      object(
        { count: Type.Integer(), periodSeconds: Type.Integer() },
        { description: "a token bucket's refill rate: count tokens every periodSeconds; limit is its burst" },
      ),
    ),
    shadow: Type.Optional(flag('mode: shadow: decided and counted, never refusing')),
    inFlight: Type.Optional(flag('a concurrency limit: limit requests in flight at once, window is its timeout')),
    bucketSizes: list(Type.Integer()),
    keysPerCheck,
    itemsPerFeature: Type.Integer(),
  }),
);

/** /policies: the loaded policies and what each costs Memcached. */
export const Policies = object({
  version: Type.Optional(
    Type.String({
      description:
        'a hash of the policy file and MEMGATE_ENVOY_CONFIG: the same on every instance that runs the same files, new on each reload that changed them',
    }),
  ),
  source: Type.String({ description: 'the policy file' }),
  events: list(
    object({
      event: Type.String(),
      algorithm: Type.String(),
      edge: Type.Optional(Type.String()),
      onStoreError: Type.String(),
      lease: Type.Optional(
        object(
          {
            maxUnits: Type.Integer({ description: 'most units one lease may take' }),
            life: Type.Integer({ description: 'seconds a lease lives' }),
          },
          { description: 'present when clients may take leases of this event' },
        ),
      ),
      reservations: Type.Optional(
        object(
          { life: Type.Integer({ description: 'seconds a reservation may wait for its settle' }) },
          { description: 'present when checks of this event may reserve a cost and settle it later' },
        ),
      ),
      incrementsPerCheck: Type.Integer(),
      keysPerCheck: object({ max: Type.Integer() }),
      itemsPerFeature: Type.Integer({ description: 'Memcached items one active feature keeps alive' }),
      limits: limitSizing,
      tiers: Type.Optional(
        Type.Record(Type.String(), limitSizing, {
          description: "present when the event has tiers: each tier's limits",
        }),
      ),
      overrides: Type.Optional(
        object(
          { count: Type.Integer(), lapsed: Type.Integer() },
          { description: 'present when the event has overrides: how many, and how many are past their until' },
        ),
      ),
      reload: Type.Optional(
        object(
          {
            how: oneOf(['conservative', 'not-carried'] as const),
            since: Type.Integer({ description: 'the second of the reload (since the epoch)' }),
            exactAt: Type.Integer({ description: 'from this second on, judged exactly on its own buckets' }),
            secondsUntilExact: Type.Integer(),
            reasons: list(Type.String()),
          },
          {
            description:
              'present while the reload that loaded these policies is not yet exact for this event: how it is judged until then (see the answer of /admin/reload, carried)',
          },
        ),
      ),
      allow: Type.Optional(Type.Integer({ description: 'entries of the allow list, when it has one' })),
      deny: Type.Optional(Type.Integer({ description: 'entries of the deny list, when it has one' })),
    }),
  ),
});
export type Policies = Static<typeof Policies>;

// ---------------------------------------------------------------------------------------
// Usage history

const usageTime = (which: 'from' | 'until', fallback: string) =>
  Type.String({
    description: `Epoch seconds, ISO 8601 (\`2026-11-23T10:00:00Z\`), or relative to now (\`-1h\`, \`-30d\`, \`-2y\`, \`now\`; units s, min or m, h, d, w, y). Default ${fallback}`,
    examples: [which === 'from' ? '-1h' : 'now'],
  });

const usageEvent = Type.String({
  description: 'An event of the policy file, or one with usage recorded (GET /usage/events)',
  examples: ['login'],
});

/** GET /usage's query string. */
export const UsageQuery = request({
  event: usageEvent,
  feature: Type.Optional(
    Type.String({
      description:
        'One client: its curve, from the minutes it was among the heaviest (MEMGATE_USAGE_TOP). Omitted, the whole event',
      examples: ['203.0.113.7'],
    }),
  ),
  from: Type.Optional(usageTime('from', 'an hour before `until`')),
  until: Type.Optional(usageTime('until', '`now`, which counts the current second')),
  step: Type.Optional(
    Type.String({
      description:
        'Seconds per point, rounded up to a multiple of the resolution kept that far back (1 s for 6 hours, 1 min for 30 days, 1 h for 2 years by default). Default: a round step giving at most `maxDataPoints` points',
      examples: ['60'],
    }),
  ),
  maxDataPoints: Type.Optional(
    Type.String({
      description: 'The most points wanted when no `step` is given, up to 10000. Default 60',
      examples: ['300'],
    }),
  ),
});
export type UsageQuery = Static<typeof UsageQuery>;

/** GET /usage/top's query string. */
export const UsageTopQuery = request({
  event: usageEvent,
  from: Type.Optional(usageTime('from', 'an hour before `until`')),
  until: Type.Optional(usageTime('until', '`now`')),
  limit: Type.Optional(
    Type.String({ description: 'Clients listed per outcome, up to 1000. Default 20', examples: ['10'] }),
  ),
});
export type UsageTopQuery = Static<typeof UsageTopQuery>;

/** A point of /usage: the step's counts, and for a client's curve which of them are known. */
export const UsagePoint = object({
  t: Type.Integer({ description: "the step's first second, in epoch seconds" }),
  allowed: Type.Integer({ description: 'decisions that admitted the request' }),
  denied: Type.Integer({ description: 'decisions that refused it' }),
  degraded: Type.Integer({
    description: "decisions made by the event's onStoreError rule, without counts, because the store did not answer",
  }),
  shadow_denied: Type.Integer({
    description:
      "of the allowed decisions, those a limit in `mode: shadow` would have denied (counted in `allowed` too); 0 on a client's curve, as it is counted per event only",
  }),
  settled: Type.Integer({
    description:
      "reservations settled in this step (`POST /settle`, and Envoy's at a stream's end), counted at the settle's second; 0 on a client's curve, as settles are counted per event only",
  }),
  settled_cost: Type.Integer({
    description:
      "the sum of those settles' actual `cost`, in the units the event's limits count (tokens, say), not decisions; 0 on a client's curve",
  }),
  tracked: Type.Optional(
    object(
      { allowed: Type.Boolean(), denied: Type.Boolean() },
      {
        description:
          "A client's curve only: for each outcome, whether its count is known. False where, in some minute (or hour, for older history) of this step, the client was not among the heaviest the history names while other clients went unnamed: its count there is unknown, so the point's count is a lower bound (0: unknown, not none)",
      },
    ),
  ),
});
export type UsagePoint = Static<typeof UsagePoint>;

/** GET /usage: an event's (or a client's) counts over a range, a point per step. */
export const UsageSeries = object({
  event: Type.String(),
  feature: Type.Union([Type.String(), Type.Null()], {
    description: 'the client asked for, or null for the whole event',
  }),
  from: Type.Integer({ description: 'the range asked, in epoch seconds' }),
  until: Type.Integer({ description: 'its end, in epoch seconds (not included)' }),
  step: Type.Integer({ description: 'seconds per point' }),
  points: list(UsagePoint, {
    description:
      'One per step from the step holding `from` while before `until`, zero-filled, oldest first; they include what instances have not written yet',
  }),
});
export type UsageSeries = Static<typeof UsageSeries>;

const clientList = list(object({ feature: Type.String(), count: Type.Integer() }), {
  description:
    'most first; a count is never more than the client got (exact unless a minute had more clients than memgate follows)',
});

/** GET /usage/top: the clients with the most allowed and denied requests over a range. */
export const UsageTop = object({
  event: Type.String(),
  from: Type.Integer({
    description:
      'the start of the range as counted: `from` rounded down to the minute, or to the hour past a day (clients are kept per minute and hour)',
  }),
  until: Type.Integer(),
  allowed: clientList,
  denied: clientList,
});
export type UsageTop = Static<typeof UsageTop>;

/** GET /usage/events: the events with usage recorded, and the resolutions kept. */
export const UsageEvents = object({
  events: list(
    object({
      event: Type.String(),
      from: Type.Integer({ description: 'its oldest data still kept, in epoch seconds' }),
      until: Type.Integer({ description: 'the end of its newest data' }),
    }),
  ),
  retention: list(object({ resolution: Type.Integer(), keepSeconds: Type.Integer() }), {
    description: 'the resolutions kept, finest first (MEMGATE_USAGE_RETENTION)',
  }),
});
export type UsageEvents = Static<typeof UsageEvents>;
