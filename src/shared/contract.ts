// The HTTP contract, written once: each request and answer of memgate's API as one TypeBox
// schema, which gives fastify its validation and its handlers their types (a type provider),
// the limiter and memgate/client their TypeScript types (Static, imported as types only: the
// client never loads this module), and the OpenAPI document its shapes (http/schemas.ts adds
// what each route means and its examples). What the values mean (a known event, a cost
// within the limits) is the limiter's to judge, so the library and HTTP refuse alike.
import { Type, type Static } from 'typebox';
import { flag, list, object, oneOf, request, type Asked } from './contract-kit.js';
import { CLIENT_DEFAULTS } from './defaults.js';

export type { Asked };

// ---------------------------------------------------------------------------------------
// Fields every request names

const event = Type.String({ description: 'An event of the policy file, e.g. login', examples: ['login'] });
const feature = Type.String({
  description:
    'Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)',
  examples: ['203.0.113.7'],
});
const tier = Type.String({
  description:
    "The client's tier (one of the event's tiers: free, pro, ...), as a caller memgate trusts knows it; an override naming the client wins over it. Unknown: 400 unknown_tier",
  examples: ['pro'],
});
const cost = Type.Integer({ description: 'A positive integer, 1 by default' });
const RESERVE =
  'Reserves this cost (instead of `cost`) for a request whose actual cost is known only later: counted now, with a `reservation` to settle with `POST /settle`. For events with a `reservations` section';
/** A whole number in a query string, as sent: the limiter reads its value. */
const queryNumber = (description: string) => Type.String({ pattern: '^[0-9]{1,16}$', description });

// ---------------------------------------------------------------------------------------
// Decisions

/** How one limit stands after a decision. */
export const LimitStatus = object({
  name: Type.String(),
  limit: Type.Integer({ description: 'most cost admitted per window' }),
  window: Type.Integer({ description: 'seconds' }),
  remaining: Type.Integer({ description: 'cost still admissible now (after this check counted, if it did)' }),
  resetSeconds: Type.Integer({
    description: 'seconds until some counted cost leaves the window (0 when nothing is counted)',
  }),
});
export type LimitStatus = Static<typeof LimitStatus>;

/** A cost reserved by a check (`reserve: N`), to settle within its life with what the request actually cost. */
export const Reservation = object(
  {
    id: Type.String({ description: 'Names the reservation in its settle; only its holder knows it' }),
    units: Type.Integer({ description: 'The cost counted: what was reserved' }),
    seconds: Type.Integer({ description: 'The reservation’s life: settle it by then' }),
    expiresAt: Type.Integer({ description: 'When its life ends, in milliseconds since the epoch on memgate’s clock' }),
  },
  { description: 'The reservation, when `reserve` was asked and allowed: settle it with POST /settle within its life' },
);
export type Reservation = Static<typeof Reservation>;

/** A request in flight, held against a concurrency limit until it is released, or its timeout frees it. */
export const Slot = object(
  {
    id: Type.String({ description: 'Names the slot in its release; only its holder knows it' }),
    expiresAt: Type.Integer({
      description:
        'When the slot frees itself if never released (the limit’s timeout), in milliseconds since the epoch on memgate’s clock',
    }),
  },
  {
    description:
      'The slot an allowed check of a concurrency limit holds while its request is in flight: release it with POST /release when the request is done',
  },
);
export type Slot = Static<typeof Slot>;

const decisionFields = {
  allowed: Type.Boolean(),
  limits: list(LimitStatus, {
    description:
      'Every enforced limit of the event, in policy-file order; empty when the decision is degraded or listed',
  }),
  retryAfter: Type.Optional(
    Type.Integer({
      description: 'seconds until this request would be allowed, if nothing else arrives; only on a deny',
    }),
  ),
  degraded: Type.Optional(flag("true when the store could not answer and the event's onStoreError rule decided")),
  shadowLimits: Type.Optional(
    list(LimitStatus, {
      description:
        "The event's limits in mode: shadow, decided and counted as if enforced but never refusing (never in the RateLimit headers); absent when it has none",
    }),
  ),
  shadowDenied: Type.Optional(
    list(Type.String(), {
      description: 'The shadow limits that would have refused this request, had they been enforced',
    }),
  ),
  listed: Type.Optional(
    oneOf(['allow', 'deny'] as const, {
      description:
        "The policy's allow or deny list holds the client: allowed without counting, or refused for good (no retryAfter); limits is empty",
    }),
  ),
  reservation: Type.Optional(Reservation),
  slot: Type.Optional(Slot),
  policyVersion: Type.Optional(
    Type.String({
      description:
        'The version of the policies the decision was made under, as /policies and /readyz name it: a reload between two requests shows here. Absent from a decision memgate/client makes itself',
    }),
  ),
};

/** What memgate answers about a check, as the service, the library and memgate/client all give it. */
export const Decision = object(decisionFields);
export type Decision = Static<typeof Decision>;

/** memgate's one error shape. */
export const ErrorBody = object({
  error: object({
    code: Type.String({ description: 'What went wrong, for programs: the README lists every code' }),
    message: Type.String({ description: 'What went wrong, for people' }),
  }),
});
export type ErrorBody = Static<typeof ErrorBody>;

/** A check of a batch that its route alone would have refused: its error, and the status it would have answered. */
export const BatchItemError = object({
  error: ErrorBody.properties.error,
  status: Type.Integer({ description: 'the status /check would have answered: 400 for its input, 503 when shed' }),
});
export type BatchItemError = Static<typeof BatchItemError>;

// ---------------------------------------------------------------------------------------
// Checks, settles, releases

/** One question to the limiter: may this feature do this event now, at this cost? (/peek's body) */
export const CheckRequest = request(
  { event, feature, cost: Type.Optional(cost), tier: Type.Optional(tier) },
  { examples: [{ event: 'login', feature: '203.0.113.7' }] },
);
export type CheckRequest = Asked<Static<typeof CheckRequest>>;

/** /check's body: a check, or with `reserve` in place of `cost` a reservation. */
export const CheckBody = request(
  { ...CheckRequest.properties, reserve: Type.Optional(Type.Integer({ description: RESERVE })) },
  { examples: [{ event: 'login', feature: '203.0.113.7' }] },
);
export type CheckBody = Asked<Static<typeof CheckBody>>;

/** GET /peek's query string. */
export const PeekQuery = request({
  event,
  feature,
  cost: Type.Optional(queryNumber('A positive integer, 1 by default')),
  tier: Type.Optional(tier),
});
export type PeekQuery = Static<typeof PeekQuery>;

/** GET /check's query string. */
export const CheckQuery = request({ ...PeekQuery.properties, reserve: Type.Optional(queryNumber(RESERVE)) });
export type CheckQuery = Static<typeof CheckQuery>;

/** POST /check/batch's body: checks decided each as /check would. */
export const CheckBatch = list(CheckBody, {
  minItems: 1,
  maxItems: CLIENT_DEFAULTS.batchMaxChecks,
  examples: [
    [
      { event: 'login', feature: '203.0.113.7' },
      { event: 'url_shorten', feature: 'user-42', cost: 3 },
    ],
  ],
});
export type CheckBatch = Static<typeof CheckBatch>;

/** Each check of a batch: its decision, or the error /check would have answered. */
export const CheckBatchAnswer = list(Type.Union([Decision, BatchItemError]));
export type CheckBatchAnswer = Static<typeof CheckBatchAnswer>;

/** Settles a reservation with what its request actually cost. */
export const SettleBody = request(
  {
    event,
    feature,
    tier: Type.Optional(
      Type.String({
        description:
          'Checked as a tier of the event (unknown: 400 unknown_tier), and otherwise ignored: a reservation settles under the plan it was reserved under (its tier or override then)',
        examples: ['pro'],
      }),
    ),
    id: Type.String({ description: 'The reservation’s id, from the /check that made it' }),
    cost: Type.Integer({ description: 'What the request actually cost: 0 and up, more or less than reserved' }),
  },
  { examples: [{ event: 'url_shorten', feature: 'user-42', id: '1795427730.q8Yc3hJd0mWn2LxTf5RkAw', cost: 17 }] },
);
export type SettleBody = Asked<Static<typeof SettleBody>>;

export const Settled = object({
  reserved: Type.Integer({ description: 'What the reservation counted' }),
  cost: Type.Integer({ description: 'What is counted instead, at the settle’s second' }),
  counted: Type.Integer({ description: 'What the settle changed the counts by: cost − reserved (negative: a refund)' }),
});
export type Settled = Static<typeof Settled>;

/** Gives back the slot a check of a concurrency limit holds. */
export const ReleaseBody = request(
  {
    event,
    feature,
    id: Type.String({ description: 'The slot’s id, from the /check that took it', maxLength: 1024 }),
  },
  { examples: [{ event: 'export', feature: 'user-42', id: '1.1vdd71vim1' }] },
);
export type ReleaseBody = Asked<Static<typeof ReleaseBody>>;

export const Released = object({
  released: Type.Boolean({
    description:
      'The slot was held and is free now; false when it was free already (released before, or freed by its timeout)',
  }),
});
export type Released = Static<typeof Released>;

// ---------------------------------------------------------------------------------------
// Leases

const units = (description: string, minimum: 0 | 1) => Type.Integer({ minimum, description });

/** Asks for up to `units` of a feature's quota at once, to spend without asking again. */
export const LeaseBody = request(
  {
    event,
    feature,
    tier: Type.Optional(tier),
    units: units(
      'How many units the client would like; memgate grants at most what remains and the policy’s maxUnits',
      1,
    ),
  },
  { examples: [{ event: 'url_shorten', feature: 'user-42', units: 10 }] },
);
export type LeaseBody = Asked<Static<typeof LeaseBody>>;

/** A granted lease: the units counted for its holder, and until when it may spend them. */
export const Lease = object(
  {
    id: Type.String({ description: 'Names the lease in its return; only its holder knows it' }),
    units: Type.Integer({
      description: 'Units counted for the holder: at most what was asked, what remained and maxUnits',
    }),
    seconds: Type.Integer({ description: 'The lease’s life' }),
    expiresAt: Type.Integer({ description: 'When its life ends, in milliseconds since the epoch on memgate’s clock' }),
  },
  { description: 'The lease, when allowed: spend its units within its life, then return what is left' },
);
export type Lease = Static<typeof Lease>;

/** A lease's answer: the decision of counting its units, and the lease when it was allowed and counted. */
export const LeaseDecision = object({ ...decisionFields, lease: Type.Optional(Lease) });
export type LeaseDecision = Static<typeof LeaseDecision>;

/** Gives back what a lease did not spend; its spent units are counted at the return's second. */
export const LeaseReturnBody = request(
  {
    event,
    feature,
    id: Type.String({ description: 'The id /lease gave', maxLength: 64 }),
    unused: units('Units the client did not spend', 0),
  },
  { examples: [{ event: 'url_shorten', feature: 'user-42', id: '1795427730.q8Yc3hJd0mWn2LxTf5RkAw', unused: 4 }] },
);
export type LeaseReturnBody = Asked<Static<typeof LeaseReturnBody>>;

export const LeaseReturned = object({
  returned: Type.Integer({
    description:
      'Units taken back from the lease’s second (others may use them now); 0 when a reset since the lease forgot its units already',
  }),
  spent: Type.Integer({ description: 'Units counted again at this second, where the window keeps them longest' }),
});
export type LeaseReturned = Static<typeof LeaseReturned>;

/** Many leases taken and returned in one request. */
export const LeaseBatchBody = request(
  {
    take: Type.Optional(list(LeaseBody, { maxItems: CLIENT_DEFAULTS.batchMaxChecks })),
    return: Type.Optional(list(LeaseReturnBody, { maxItems: CLIENT_DEFAULTS.batchMaxChecks })),
  },
  {
    examples: [
      {
        take: [{ event: 'url_shorten', feature: 'user-42', units: 10 }],
        return: [{ event: 'url_shorten', feature: 'user-7', id: '1795427730.q8Yc3hJd0mWn2LxTf5RkAw', unused: 4 }],
      },
    ],
  },
);
export type LeaseBatchBody = Static<typeof LeaseBatchBody>;

export const LeaseBatchAnswer = object({
  returned: list(Type.Union([LeaseReturned, BatchItemError]), {
    description: 'One answer per return, in order: as /lease/return’s 200 body, or its error and status',
  }),
  taken: list(Type.Union([LeaseDecision, BatchItemError]), {
    description:
      'One answer per take, in order: the decision (with the lease when allowed) as /lease answers it, or its error and status',
  }),
});
export type LeaseBatchAnswer = Static<typeof LeaseBatchAnswer>;

// ---------------------------------------------------------------------------------------
// Admin calls

/** Forgets everything a feature has counted for an event. */
export const ResetBody = request({ event, feature }, { examples: [{ event: 'login', feature: '203.0.113.7' }] });
export type ResetBody = Asked<Static<typeof ResetBody>>;

export const ResetAnswer = object({
  reset: flag('always true: what the feature counted is forgotten'),
  event: Type.String(),
});
export type ResetAnswer = Static<typeof ResetAnswer>;

/** Takes back `cost` a check counted at `at`. */
export const RefundBody = request(
  {
    event,
    feature,
    cost: Type.Optional(Type.Integer({ description: 'The cost the check counted, 1 by default' })),
    tier: Type.Optional(tier),
    at: Type.Integer({ minimum: 0, description: 'When the check was counted, in milliseconds since the epoch' }),
  },
  { examples: [{ event: 'login', feature: '203.0.113.7', at: 1795427730250 }] },
);
export type RefundBody = Asked<Static<typeof RefundBody>>;

export const Refunded = object({
  refunded: Type.Boolean({
    description:
      'false when that second has left every window, or the feature was reset since: nothing was counted there any more',
  }),
  event: Type.String(),
});
export type Refunded = Static<typeof Refunded>;

/** What a reload kept of an event's counts, when its new limits are not judged exactly on them at once. */
export const ReloadCarried = object(
  {
    event: Type.String(),
    how: oneOf(['conservative', 'not-carried'] as const, {
      description:
        'conservative: until exactAt each limit is judged on an upper bound of what the counters hold (buckets every instance counted, any overlapping its window counted whole); not-carried: an algorithm of another kind, whose counts are not read (clients start afresh)',
    }),
    since: Type.Integer({
      description: 'the second of the reload (since the epoch), by the clock of the instance that answers',
    }),
    exactAt: Type.Integer({
      description: 'from this second (since the epoch) on, the event is judged exactly on its own buckets',
    }),
    secondsUntilExact: Type.Integer({ description: 'how long until then, from the answer' }),
    reasons: list(Type.String(), {
      description: 'why: sizes new to the reload, sizes kept for less time, counts older than the old policies kept',
    }),
  },
  { description: 'docs/operations.md, Changing policies: the bounds of a reload' },
);
export type ReloadCarried = Static<typeof ReloadCarried>;

export const Reloaded = object({
  reloaded: Type.Boolean(),
  source: Type.String(),
  events: list(Type.String()),
  carried: Type.Optional(
    list(ReloadCarried, {
      description:
        'present when this reload changed what some event counts in: each such event, how it is judged meanwhile and until when',
    }),
  ),
});
export type Reloaded = Static<typeof Reloaded>;
