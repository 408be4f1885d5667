/**
 * JSON schemas of every route: the shape of each request and answer, and what the OpenAPI
 * document (/docs) says of the route. Request schemas check shape and types; what the values
 * mean (known event, feature length, cost within the limits) is the limiter's to judge, so
 * the library and HTTP refuse the same requests with the same error codes.
 *
 * In a route's answers, `x-response-description` and `x-examples` (named examples, see
 * examples.ts) and `headers` are read by @fastify/swagger only; fastify serializes by the rest.
 */
import { DEFAULTS } from '../config/defaults.js';
import {
  adminExamples,
  batchErrorExamples,
  batchExamples,
  bodyErrorExamples,
  decisionExamples,
  gatewayErrorExamples,
  gatewayOffExample,
  healthExamples,
  inputErrorExamples,
  leaseBatchErrorExamples,
  leaseBatchExamples,
  leaseExamples,
  leaseReturnExamples,
  settleExamples,
  checkQueryErrorExamples,
  metricsExample,
  overloadedExample,
  payloadTooLargeExample,
  policiesExamples,
  queryErrorExamples,
  readinessExamples,
  unsupportedMediaTypeExample,
  usageExamples,
  type Example,
} from './examples.js';

// ---------------------------------------------------------------------------------------
// Shapes

const event = { type: 'string', description: 'An event of the policy file, e.g. login', examples: ['login'] } as const;
const feature = {
  type: 'string',
  description: 'Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes',
  examples: ['203.0.113.7'],
} as const;

const tier = {
  type: 'string',
  description:
    "The client's tier (one of the event's tiers: free, pro, ...), as a caller memgate trusts knows it; an override naming the client wins over it. Unknown: 400 unknown_tier",
  examples: ['pro'],
} as const;

export const peekQuerystring = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'feature'],
  properties: {
    event,
    feature,
    cost: { type: 'string', pattern: '^[0-9]{1,16}$', description: 'A positive integer, 1 by default' },
    tier,
  },
} as const;

const RESERVE =
  'Reserves this cost (instead of `cost`) for a request whose actual cost is known only later: counted now, with a `reservation` to settle with `POST /settle`. For events with a `reservations` section';

export const checkQuerystring = {
  ...peekQuerystring,
  properties: {
    ...peekQuerystring.properties,
    reserve: { type: 'string', pattern: '^[0-9]{1,16}$', description: RESERVE },
  },
} as const;

export const peekBody = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'feature'],
  properties: { event, feature, cost: { type: 'integer', description: 'A positive integer, 1 by default' }, tier },
  examples: [{ event: 'login', feature: '203.0.113.7' }],
} as const;

export const checkBody = {
  ...peekBody,
  properties: { ...peekBody.properties, reserve: { type: 'integer', description: RESERVE } },
} as const;

export const settleBody = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'feature', 'id', 'cost'],
  properties: {
    event,
    feature,
    tier,
    id: { type: 'string', description: 'The reservation’s id, from the /check that made it' },
    cost: { type: 'integer', description: 'What the request actually cost: 0 and up, more or less than reserved' },
  },
  examples: [{ event: 'url_shorten', feature: 'user-42', id: '1795427730.q8Yc3hJd0mWn2LxTf5RkAw', cost: 17 }],
} as const;

export interface SettleBody {
  event: string;
  feature: string;
  tier?: string;
  id: string;
  cost: number;
}

export const checkBatchBody = {
  type: 'array',
  minItems: 1,
  maxItems: DEFAULTS.batchMaxChecks,
  items: checkBody,
  examples: [
    [
      { event: 'login', feature: '203.0.113.7' },
      { event: 'url_shorten', feature: 'user-42', cost: 3 },
    ],
  ],
} as const;

const units = (description: string, minimum: 0 | 1) => ({ type: 'integer', minimum, description }) as const;

export const leaseBody = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'feature', 'units'],
  properties: {
    event,
    feature,
    tier,
    units: units(
      'How many units the client would like; memgate grants at most what remains and the policy’s maxUnits',
      1,
    ),
  },
  examples: [{ event: 'url_shorten', feature: 'user-42', units: 10 }],
} as const;

export interface LeaseBody {
  event: string;
  feature: string;
  tier?: string;
  units: number;
}

export const leaseReturnBody = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'feature', 'id', 'unused'],
  properties: {
    event,
    feature,
    id: { type: 'string', description: 'The id /lease gave', maxLength: 64 },
    unused: units('Units the client did not spend', 0),
  },
  examples: [{ event: 'url_shorten', feature: 'user-42', id: '1795427730.q8Yc3hJd0mWn2LxTf5RkAw', unused: 4 }],
} as const;

export interface LeaseReturnBody {
  event: string;
  feature: string;
  id: string;
  unused: number;
}

export const leaseBatchBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    take: { type: 'array', maxItems: DEFAULTS.batchMaxChecks, items: leaseBody },
    return: { type: 'array', maxItems: DEFAULTS.batchMaxChecks, items: leaseReturnBody },
  },
  examples: [
    {
      take: [{ event: 'url_shorten', feature: 'user-42', units: 10 }],
      return: [{ event: 'url_shorten', feature: 'user-7', id: '1795427730.q8Yc3hJd0mWn2LxTf5RkAw', unused: 4 }],
    },
  ],
} as const;

export interface LeaseBatchBody {
  take?: LeaseBody[];
  return?: LeaseReturnBody[];
}

export const refundBody = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'feature', 'at'],
  properties: {
    event,
    feature,
    cost: { type: 'integer', description: 'The cost the check counted, 1 by default' },
    at: { type: 'integer', minimum: 0, description: 'When the check was counted, in milliseconds since the epoch' },
  },
  examples: [{ event: 'login', feature: '203.0.113.7', at: 1795427730250 }],
} as const;

export interface RefundBody {
  event: string;
  feature: string;
  cost?: number;
  at: number;
}

export interface CheckQuerystring {
  event: string;
  feature: string;
  cost?: string;
  tier?: string;
  reserve?: string;
}

export interface CheckBody {
  event: string;
  feature: string;
  cost?: number;
  tier?: string;
  reserve?: number;
}

export const errorResponse = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', description: 'What went wrong, for programs: the README lists every code' },
        message: { type: 'string', description: 'What went wrong, for people' },
      },
    },
  },
} as const;

/** How one limit stands after a decision. */
const limitStatus = {
  type: 'object',
  required: ['name', 'limit', 'window', 'remaining', 'resetSeconds'],
  properties: {
    name: { type: 'string' },
    limit: { type: 'integer', description: 'most cost admitted per window' },
    window: { type: 'integer', description: 'seconds' },
    remaining: {
      type: 'integer',
      description: 'cost still admissible now (after this check counted, if it did)',
    },
    resetSeconds: { type: 'integer', description: 'seconds until some counted cost leaves the window' },
  },
} as const;

export const decisionResponse = {
  type: 'object',
  required: ['allowed', 'limits'],
  properties: {
    allowed: { type: 'boolean' },
    limits: {
      type: 'array',
      description:
        'Every enforced limit of the event, in policy-file order; empty when the decision is degraded or listed',
      items: limitStatus,
    },
    retryAfter: {
      type: 'integer',
      description: 'seconds until this request would be allowed, if nothing else arrives; only on a deny',
    },
    degraded: {
      type: 'boolean',
      description: "true when the store could not answer and the event's onStoreError rule decided",
    },
    shadowLimits: {
      type: 'array',
      description:
        "The event's limits in mode: shadow, decided and counted as if enforced but never refusing (never in the RateLimit headers); absent when it has none",
      items: limitStatus,
    },
    shadowDenied: {
      type: 'array',
      items: { type: 'string' },
      description: 'The shadow limits that would have refused this request, had they been enforced',
    },
    reservation: {
      type: 'object',
      description: 'The reservation, when `reserve` was asked and allowed: settle it with POST /settle within its life',
      required: ['id', 'units', 'seconds', 'expiresAt'],
      properties: {
        id: { type: 'string', description: 'Names the reservation in its settle; only its holder knows it' },
        units: { type: 'integer', description: 'The cost counted: what was reserved' },
        seconds: { type: 'integer', description: 'The reservation’s life: settle it by then' },
        expiresAt: {
          type: 'integer',
          description: 'When its life ends, in milliseconds since the epoch on memgate’s clock',
        },
      },
    },
    listed: {
      type: 'string',
      enum: ['allow', 'deny'],
      description:
        "The policy's allow or deny list holds the client: allowed without counting, or refused for good (no retryAfter); limits is empty",
    },
  },
} as const;

/** A check of a batch that /check would have refused: its error, and the status /check would have answered. */
export const batchItemErrorResponse = {
  type: 'object',
  required: ['error', 'status'],
  properties: {
    ...errorResponse.properties,
    status: { type: 'integer', description: 'the status /check would have answered: 400 for its input, 503 when shed' },
  },
} as const;

export const leaseResponse = {
  ...decisionResponse,
  properties: {
    ...decisionResponse.properties,
    lease: {
      type: 'object',
      description: 'The lease, when allowed: spend its units within its life, then return what is left',
      required: ['id', 'units', 'seconds', 'expiresAt'],
      properties: {
        id: { type: 'string', description: 'Names the lease in its return; only its holder knows it' },
        units: {
          type: 'integer',
          description: 'Units counted for the holder: at most what was asked, what remained and maxUnits',
        },
        seconds: { type: 'integer', description: 'The lease’s life' },
        expiresAt: {
          type: 'integer',
          description: 'When its life ends, in milliseconds since the epoch on memgate’s clock',
        },
      },
    },
  },
} as const;

export const leaseReturnedResponse = {
  type: 'object',
  required: ['returned', 'spent'],
  properties: {
    returned: { type: 'integer', description: 'Units taken back: others may use them now' },
    spent: { type: 'integer', description: 'Units counted again at this second, where the window keeps them longest' },
  },
} as const;

export const leaseBatchResponse = {
  type: 'object',
  required: ['returned', 'taken'],
  properties: {
    returned: {
      type: 'array',
      description: 'One answer per return, in order: as /lease/return’s 200 body, or its error and status',
      items: { anyOf: [leaseReturnedResponse, batchItemErrorResponse] },
    },
    taken: {
      type: 'array',
      description:
        'One answer per take, in order: the decision (with the lease when allowed) as /lease answers it, or its error and status',
      items: { anyOf: [leaseResponse, batchItemErrorResponse] },
    },
  },
} as const;

export const refundResponse = {
  type: 'object',
  required: ['refunded', 'event'],
  properties: {
    refunded: {
      type: 'boolean',
      description:
        'false when that second has left every window, or the feature was reset since: nothing was counted there any more',
    },
    event: { type: 'string' },
  },
} as const;

export const statusResponse = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string' } },
} as const;

/** /readyz: every counter server with whether it answers; `error` when some do not, or while draining (no servers then). */
export const readinessResponse = {
  type: 'object',
  required: ['status', 'store'],
  properties: {
    status: { type: 'string', description: 'ready, unavailable, or draining (shutting down)' },
    store: { type: 'string', description: 'memcached or embedded' },
    policyVersion: {
      type: 'string',
      description:
        'the version of the policies in use: a hash of the policy file and MEMGATE_ENVOY_CONFIG, the same on every instance that runs the same files',
    },
    clockOffsetMs: {
      type: 'integer',
      description:
        "the store's clock, which memgate counts by, minus this host's, in milliseconds (the servers' median; 0 for the embedded store)",
    },
    servers: {
      type: 'array',
      items: {
        type: 'object',
        required: ['server', 'up'],
        properties: {
          server: { type: 'string' },
          up: { type: 'boolean' },
          error: { type: 'string' },
          evictions: {
            type: 'integer',
            description: 'items evicted since the server started: raise its memory if this grows',
          },
          clockOffsetMs: {
            type: 'integer',
            description: "this server's clock minus this host's, in milliseconds, as last measured",
          },
          state: {
            type: 'string',
            enum: ['up', 'down', 'failed-over'],
            description:
              "where this server's clients are counted: `up` on it; `down` nowhere, their checks decided by each event's onStoreError; `failed-over` on the servers in failedOverTo (MEMCACHED_FAILOVER), until it has answered for MEMCACHED_FAILOVER_SETTLE_MS",
          },
          failedOverTo: {
            type: 'array',
            items: { type: 'string' },
            description: 'while failed over: the servers after it on the ring, which count its clients (from zero)',
          },
          returnsInMs: {
            type: 'integer',
            description: 'failed over and answering again: how long until its clients move back, if it keeps answering',
          },
        },
      },
    },
    error: errorResponse.properties.error,
  },
} as const;

const keysPerCheck = {
  type: 'object',
  properties: { max: { type: 'integer' }, mean: { type: 'number' } },
} as const;

const limitSizing = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      limit: { type: 'integer' },
      window: { type: 'integer' },
      granularity: { type: 'integer' },
      bucketSizes: { type: 'array', items: { type: 'integer' } },
      keysPerCheck,
      itemsPerFeature: { type: 'integer' },
    },
  },
} as const;

export const policiesResponse = {
  type: 'object',
  properties: {
    version: {
      type: 'string',
      description:
        'a hash of the policy file and MEMGATE_ENVOY_CONFIG: the same on every instance that runs the same files, new on each reload that changed them',
    },
    source: { type: 'string', description: 'the policy file' },
    events: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          event: { type: 'string' },
          algorithm: { type: 'string' },
          edge: { type: 'string' },
          onStoreError: { type: 'string' },
          lease: {
            type: 'object',
            description: 'present when clients may take leases of this event',
            properties: {
              maxUnits: { type: 'integer', description: 'most units one lease may take' },
              life: { type: 'integer', description: 'seconds a lease lives' },
            },
          },
          reservations: {
            type: 'object',
            description: 'present when checks of this event may reserve a cost and settle it later',
            properties: { life: { type: 'integer', description: 'seconds a reservation may wait for its settle' } },
          },
          incrementsPerCheck: { type: 'integer' },
          keysPerCheck,
          itemsPerFeature: { type: 'integer', description: 'Memcached items one active feature keeps alive' },
          limits: limitSizing,
          tiers: {
            type: 'object',
            description: "present when the event has tiers: each tier's limits",
            additionalProperties: limitSizing,
          },
          overrides: {
            type: 'object',
            description: 'present when the event has overrides: how many, and how many are past their until',
            properties: { count: { type: 'integer' }, lapsed: { type: 'integer' } },
          },
          allow: { type: 'integer', description: 'entries of the allow list, when it has one' },
          deny: { type: 'integer', description: 'entries of the deny list, when it has one' },
        },
      },
    },
  },
} as const;

export const resetBody = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'feature'],
  properties: { event, feature },
  examples: [{ event: 'login', feature: '203.0.113.7' }],
} as const;

export type ResetBody = Omit<CheckBody, 'cost'>;

export const resetResponse = {
  type: 'object',
  required: ['reset', 'event'],
  properties: { reset: { type: 'boolean' }, event: { type: 'string' } },
} as const;

export const reloadResponse = {
  type: 'object',
  required: ['reloaded', 'source', 'events'],
  properties: {
    reloaded: { type: 'boolean' },
    source: { type: 'string' },
    events: { type: 'array', items: { type: 'string' } },
  },
} as const;

// ---------------------------------------------------------------------------------------
// Answers, as the OpenAPI document describes them

interface HeaderDoc {
  readonly type: 'string' | 'integer';
  readonly description: string;
}

/** An answer of a route: its shape, what it means, real examples, and the headers it carries. */
function answer<S extends object>(
  shape: S,
  description: string,
  examples: Record<string, Example>,
  headers?: Record<string, HeaderDoc>,
) {
  return { ...shape, 'x-response-description': description, 'x-examples': examples, ...(headers ? { headers } : {}) };
}

const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': {
    type: 'string',
    description:
      'Every limit of the event (IETF httpapi RateLimit headers draft): `"login-1m";q=5;w=60, "login-1d";q=100;w=86400`. Absent when `limits` is empty',
  },
  RateLimit: {
    type: 'string',
    description:
      'The limit closest to exhaustion, with what remains and when counted cost next leaves it: `"login-1m";r=0;t=60`. Absent when `limits` is empty',
  },
} as const satisfies Record<string, HeaderDoc>;

const DENIAL_HEADERS = {
  ...RATE_LIMIT_HEADERS,
  'Retry-After': {
    type: 'integer',
    description: 'Seconds until this request would be allowed, if nothing else arrives: the body’s `retryAfter`',
  },
} as const satisfies Record<string, HeaderDoc>;

const RETRY_SOON = {
  'Retry-After': { type: 'integer', description: '1: try again in a second' },
} as const satisfies Record<string, HeaderDoc>;

const GATEWAY_ERROR_HEADER = {
  'memgate-error': {
    type: 'string',
    description: 'The error code again, for gateways that cannot read a body (nginx)',
  },
} as const satisfies Record<string, HeaderDoc>;

const overloaded = answer(
  errorResponse,
  '`overloaded`: memgate sheds this check rather than queue it. Either `MEMCACHED_MAX_IN_FLIGHT` checks are already waiting on Memcached (a slow or hung server), or the event loop lags more than `MEMGATE_MAX_EVENT_LOOP_DELAY_MS`. Nothing was counted; retry in a second',
  overloadedExample,
  RETRY_SOON,
);

type Via = 'query' | 'body';

/** The answers of /check and /peek: the same decision shapes and errors, different examples. */
function decisionAnswers(route: '/check' | '/peek', via: Via) {
  const { allowed, allowedCost, degradedAllowed, denied, degradedDenied, peekUntouched, peekDenied } = decisionExamples;
  const check = route === '/check';
  const admitted = check
    ? { allowed, ...(via === 'body' ? { allowedCost, reserved: settleExamples.reserved } : {}), degradedAllowed }
    : { peekUntouched, degradedAllowed };
  const refused = check ? { denied, degradedDenied } : { peekDenied, degradedDenied };
  const badInput = {
    ...inputErrorExamples,
    ...(via === 'query' ? queryErrorExamples : bodyErrorExamples),
    ...(check && via === 'query' ? checkQueryErrorExamples : {}),
    ...(check ? { reserveOff: settleExamples.reserveOff } : {}),
  };
  return {
    200: answer(
      decisionResponse,
      `${check ? 'Allowed: the request fits every limit of the event, and its cost is counted' : 'A request of this cost would be allowed now; nothing is counted'}. A degraded decision (\`degraded: true\`, no limits, no RateLimit headers) was made by the event's \`onStoreError\` rule because Memcached did not answer in time`,
      admitted,
      RATE_LIMIT_HEADERS,
    ),
    429: answer(
      decisionResponse,
      `${check ? 'Denied: the request does not fit some limit of the event, and nothing was counted' : 'A request of this cost would be denied now'}. \`retryAfter\` and \`Retry-After\` say when it would fit, exact to the policy’s granularity; a degraded denial says 1`,
      refused,
      DENIAL_HEADERS,
    ),
    400: answer(
      errorResponse,
      'The request is not one memgate can decide (see the examples); nothing was counted',
      badInput,
    ),
    ...(via === 'body'
      ? {
          413: answer(
            errorResponse,
            `\`payload_too_large\`: the body is over ${DEFAULTS.bodyLimitBytes / 1024} KB`,
            payloadTooLargeExample,
          ),
          415: answer(
            errorResponse,
            '`unsupported_media_type`: the body is not `application/json`',
            unsupportedMediaTypeExample,
          ),
        }
      : {}),
    503: overloaded,
  };
}

// ---------------------------------------------------------------------------------------
// Routes

const CHECK = `Decides whether \`feature\` may do \`event\` now and, when it may, counts \`cost\` against every limit of the event (a request must fit them all). The answer is the decision: 200 when allowed, 429 when not, with the RateLimit-Policy and RateLimit headers, and Retry-After on a 429. A denied request counts nothing.

When Memcached does not answer within \`MEMCACHED_TIMEOUT_MS\`, the event's \`onStoreError\` rule decides (allow by default, or deny) and the decision says \`degraded: true\`.`;

const PEEK = `The decision \`/check\` would make for this request now, counting nothing: 200 if it would be allowed, 429 if not, with the same body and headers. \`remaining\` is what is left before this request. Use it to show a client its quota without spending it.`;

export const checkQueryRoute = {
  summary: 'Decide and count a request',
  description: `${CHECK}\n\nThe same as \`POST /check\`, with the fields in the query string.`,
  tags: ['decisions'],
  querystring: checkQuerystring,
  response: decisionAnswers('/check', 'query'),
};

export const checkBodyRoute = {
  summary: 'Decide and count a request (JSON body)',
  description: `${CHECK}\n\nThe same as \`GET /check\`, with the fields in a JSON object (\`cost\` a JSON integer).`,
  tags: ['decisions'],
  body: checkBody,
  response: decisionAnswers('/check', 'body'),
};

export const peekQueryRoute = {
  summary: 'The decision /check would make, counting nothing',
  description: `${PEEK}\n\nThe same as \`POST /peek\`, with the fields in the query string.`,
  tags: ['decisions'],
  querystring: peekQuerystring,
  response: decisionAnswers('/peek', 'query'),
};

export const peekBodyRoute = {
  summary: 'The decision /check would make, counting nothing (JSON body)',
  description: `${PEEK}\n\nThe same as \`GET /peek\`, with the fields in a JSON object.`,
  tags: ['decisions'],
  body: peekBody,
  response: decisionAnswers('/peek', 'body'),
};

export const checkBatchRoute = {
  summary: 'Decide and count several requests at once',
  description: `Up to ${DEFAULTS.batchMaxChecks} checks in one request, as \`POST /check\` bodies in a JSON array: memgate's client (\`memgate/client\`) sends the checks its callers make at the same moment this way, one HTTP request instead of many. Each check is decided on its own, exactly as \`/check\` would decide it alone (checks of the same feature count as concurrent \`/check\`s do), and counted when allowed.

The answer is always 200 with an array in the order of the checks: a decision (\`allowed\` true or false, as \`/check\`'s 200 and 429 bodies) or, for a check \`/check\` would have refused, its error with the \`status\` \`/check\` would have answered (400 for its input, 503 when it was shed). A body that is not such an array, or a check of the wrong shape, is a 400 for the whole batch, and nothing is counted. No RateLimit headers: they describe one decision.`,
  tags: ['decisions'],
  body: checkBatchBody,
  response: {
    200: answer(
      { type: 'array', items: { anyOf: [decisionResponse, batchItemErrorResponse] } },
      'The decisions, in the order of the checks; a check /check would have refused holds its error and status instead',
      batchExamples,
    ),
    400: answer(
      errorResponse,
      'The body is not a JSON array of 1 to 100 checks, or a check is not an object with a string event and feature (and an integer cost); nothing was counted',
      { ...batchErrorExamples, invalidJson: bodyErrorExamples.invalidJson },
    ),
    413: answer(
      errorResponse,
      `\`payload_too_large\`: the body is over ${DEFAULTS.batchBodyLimitBytes / 1024} KB`,
      payloadTooLargeExample,
    ),
    415: answer(
      errorResponse,
      '`unsupported_media_type`: the body is not `application/json`',
      unsupportedMediaTypeExample,
    ),
  },
};

const leaseInputErrors = (extra: Record<string, Example>) =>
  answer(
    errorResponse,
    'The request is not one memgate can take (see the examples); nothing was counted or taken back',
    {
      ...extra,
      unknownEvent: inputErrorExamples.unknownEvent,
      invalidJson: bodyErrorExamples.invalidJson,
    },
  );

export const leaseRoute = {
  summary: 'Take a quota lease: several units counted at once, spent by the client',
  description: `For an event whose policy has a \`lease\` section. memgate counts up to \`units\` at once for \`feature\` (never more than what remains in every limit, nor the policy's \`maxUnits\`), and the client answers its next checks itself from those units, without asking. When the lease's \`seconds\` end, the client returns what it did not spend with \`POST /lease/return\`; memgate takes those back, and counts the spent ones again at the return's second, so that no window loses a spent unit early.

Nothing is ever admitted beyond the limit: the units are counted before they are spent. What a lease costs others is that its unspent units are refused to them until it is returned (at most its life and ${DEFAULTS.leaseReturnGraceSeconds} s). So that a denied client asks again by then, a denial of an event with leases says at most that long in \`retryAfter\`.

200 with the decision and the \`lease\` when units were counted; 429 with the decision, as \`/check\`'s, when not even one unit fits. \`memgate/client\` takes and returns leases itself (docs/client.md).`,
  tags: ['leases'],
  body: leaseBody,
  response: {
    200: answer(leaseResponse, 'Units were counted: the `lease` says how many, and until when', leaseExamples.granted),
    400: leaseInputErrors({ leaseOff: leaseExamples.leaseOff }),
    429: answer(
      decisionResponse,
      'Not even one unit fits: the decision, as /check’s',
      leaseExamples.denied,
      DENIAL_HEADERS,
    ),
    503: overloaded,
  },
};

export const leaseReturnRoute = {
  summary: 'Return a lease: take back its unused units',
  description: `Takes back the units a lease did not spend, and counts its spent ones at this second instead of the lease's. A lease is returned once, within its life and ${DEFAULTS.leaseReturnGraceSeconds} s; after that its units stay counted until they leave the window. After a reset of the feature (\`/admin/reset\`) at or after the lease's second, nothing is taken back (\`returned: 0\`): the reset forgot the units already.`,
  tags: ['leases'],
  body: leaseReturnBody,
  response: {
    200: answer(leaseReturnedResponse, 'The unused units are free again; the spent ones count from now', {
      returned: leaseReturnExamples.returned,
    }),
    400: leaseInputErrors({ leaseOff: leaseExamples.leaseOff }),
    404: answer(errorResponse, '`unknown_lease`: no lease of this id for this event and feature', {
      unknownLease: leaseReturnExamples.unknownLease,
    }),
    409: answer(
      errorResponse,
      '`lease_returned`: returned already (a lease is returned once); `lease_expired`: too late',
      {
        returnedTwice: leaseReturnExamples.returnedTwice,
      },
    ),
    503: answer(
      errorResponse,
      '`store_unavailable`: Memcached did not answer in time; the units stay counted',
      { storeUnavailable: adminExamples.storeUnavailable },
      RETRY_SOON,
    ),
  },
};

export const settledResponse = {
  type: 'object',
  required: ['reserved', 'cost', 'counted'],
  properties: {
    reserved: { type: 'integer', description: 'What the reservation counted' },
    cost: { type: 'integer', description: 'What is counted instead, at the settle’s second' },
    counted: {
      type: 'integer',
      description: 'What the settle changed the counts by: cost − reserved (negative: a refund)',
    },
  },
} as const;

export const settleRoute = {
  summary: 'Settle a reservation with what its request actually cost',
  description: `For a reservation made by \`/check\` with \`reserve\`: counts the actual \`cost\` at this second and takes back what was reserved from the reservation's second, so the client's counts change by the difference (a refund when the cost is smaller). A larger cost than reserved can put the client over its limits, and its next check sees it. A reservation is settled once, within its life and ${DEFAULTS.leaseReturnGraceSeconds} s; one never settled stays counted as reserved until it leaves the window. After a reset of the feature at or after the reservation's second, only the actual cost is counted.`,
  tags: ['decisions'],
  body: settleBody,
  response: {
    200: answer(settledResponse, 'Settled: the counts changed by `counted`', { settled: settleExamples.settled }),
    400: answer(errorResponse, 'The request is not one memgate can settle (see the examples); nothing was counted', {
      reserveOff: settleExamples.reserveOff,
      unknownEvent: inputErrorExamples.unknownEvent,
      invalidJson: bodyErrorExamples.invalidJson,
    }),
    404: answer(errorResponse, '`unknown_reservation`: no reservation of this id for this event and feature', {
      unknownReservation: settleExamples.unknownReservation,
    }),
    409: answer(
      errorResponse,
      '`reservation_settled`: settled already (a reservation is settled once); `reservation_expired`: too late',
      { settledTwice: settleExamples.settledTwice },
    ),
    503: answer(
      errorResponse,
      '`store_unavailable`: Memcached did not answer in time; the reservation stays counted as reserved',
      { storeUnavailable: adminExamples.storeUnavailable },
      RETRY_SOON,
    ),
  },
};

export const leaseBatchRoute = {
  summary: 'Take and return many leases in one request',
  description: `What \`memgate/client\` sends: the leases its callers take and return at the same moment, in one request instead of one each. The returns are taken first (the units they free are there for the takes), then each take, each exactly as \`/lease/return\` and \`/lease\` would answer it alone. Up to ${DEFAULTS.batchMaxChecks} takes and returns together.

The answer is always 200 with \`returned\` and \`taken\`, in the order asked: each an answer of \`/lease/return\` or \`/lease\` (a take not granted is its decision with \`allowed: false\`), or the error and \`status\` those routes would have answered. A body of the wrong shape is a 400 for the whole batch, and nothing is counted or taken back.`,
  tags: ['leases'],
  body: leaseBatchBody,
  response: {
    200: answer(
      leaseBatchResponse,
      'The answers, in the order asked; an item those routes would have refused holds its error and status instead',
      leaseBatchExamples,
    ),
    400: answer(
      errorResponse,
      'The body is not `take` and `return` arrays of 1 to 100 items together, or an item is not of their shape; nothing was counted or taken back',
      leaseBatchErrorExamples,
    ),
    413: answer(
      errorResponse,
      `\`payload_too_large\`: the body is over ${DEFAULTS.batchBodyLimitBytes / 1024} KB`,
      payloadTooLargeExample,
    ),
  },
};

const gatewayDenied = (status: string, examples: Record<string, Example>) =>
  answer(
    decisionResponse,
    `Denied, when \`gateway.denyStatus\` is ${status}: the guarded request does not fit some limit of its event, or a degraded decision by \`onStoreError\` refused it; nothing was counted`,
    examples,
    DENIAL_HEADERS,
  );

const gatewayInvalid = (status: string, examples: Record<string, Example>) =>
  answer(
    errorResponse,
    `Input memgate cannot place, when \`gateway.invalidStatus\` is ${status}: the URI header missing or sent twice, a path that is not valid percent-encoding or that servers read as different routes, no usable client, an unknown event in an event header, an unmatched path under \`unmatched: deny\`. Nothing was counted`,
    examples,
    GATEWAY_ERROR_HEADER,
  );

const { missingUri, uriTwice, badEncoding, ambiguous, clientNotAnIp, unmatchedPath } = gatewayErrorExamples;

/**
 * /gate answers every method. OpenAPI 3.0 can name only eight; the document lists those
 * (see openapi.ts) and says here that any other is answered the same way.
 */
export const gateRoute = {
  summary: 'Decide and count a request a gateway guards',
  description: `For gateways: nginx \`auth_request\`, Traefik ForwardAuth, Envoy \`ext_authz\` (HTTP). The gateway asks here before it forwards a client's request; memgate finds the event and the client from what the policy file's \`gateway\` section names (the URI from \`X-Original-URI\`, \`X-Forwarded-Uri\` or the path after \`/gate\`; the client from \`X-Forwarded-For\` after the trusted proxies, or a header), and decides and counts as \`/check\` does.

**Any method.** Listed here are the methods OpenAPI can name; memgate answers every other one (PROPFIND, PURGE, ...) the same way, since Envoy asks with the guarded request's own method. A body is never read, whatever its type or size.

**\`/gate/{path}\`.** With \`gateway.uri: path\` (Envoy's \`path_prefix\`), the guarded path follows \`/gate\`, e.g. \`/gate/api/links\`, and is answered as here.

200 when allowed, with the RateLimit headers (a path no route matches, under \`unmatched: allow\`, is allowed without counting: \`limits\` is empty). A denial is \`gateway.denyStatus\` (429, or 403 for nginx, which hands on only 401 and 403), with Retry-After. Input memgate cannot place is \`gateway.invalidStatus\` (400, or 401 for nginx), with a \`memgate-error\` header. Without a \`gateway\` section, 404.`,
  tags: ['gateway'],
  response: {
    200: answer(
      decisionResponse,
      'Allowed: the guarded request fits every limit of its event (counted), or no route matches its path and `gateway.unmatched` is allow (nothing counted, `limits` empty), or a degraded decision by `onStoreError`',
      {
        allowed: decisionExamples.allowed,
        unmatched: decisionExamples.unmatched,
        degradedAllowed: decisionExamples.degradedAllowed,
      },
      RATE_LIMIT_HEADERS,
    ),
    400: gatewayInvalid('400 (the default)', { missingUri, badEncoding, ambiguous, clientNotAnIp }),
    401: gatewayInvalid('401 (for nginx)', { unmatchedPath, uriTwice }),
    403: gatewayDenied('403 (for nginx)', { denied: decisionExamples.denied }),
    404: answer(
      errorResponse,
      '`not_found`: the policy file has no `gateway` section, so /gate is off',
      gatewayOffExample,
    ),
    429: gatewayDenied('429 (the default)', {
      denied: decisionExamples.denied,
      degradedDenied: decisionExamples.degradedDenied,
    }),
    503: overloaded,
  },
};

export const healthRoute = {
  summary: 'Liveness: the process answers',
  description:
    'Answers 200 while the process runs, asking nothing of Memcached, and also while it drains before stopping, so that nothing kills an instance that is finishing its requests.',
  tags: ['operations'],
  response: { 200: answer(statusResponse, 'The process is running', healthExamples) },
};

const { readyMemcached, readyEmbedded, failedOver, unavailable, draining } = readinessExamples;

export const readinessRoute = {
  summary: 'Readiness: every Memcached server answers',
  description:
    "Asks every Memcached server and lists each with whether it answers, where its clients are counted (`state`), its evictions and its clock's offset from this host (memgate counts by the servers' clocks). 200 when every client is counted somewhere: every server answers, or a down one's clients are failed over to the others; 503 when a down server's clients are not (`store_unavailable`, with each such server's reason: failover is off, or no other server answers), and at once, without asking, while the instance drains before stopping (`draining`). Load balancers should send checks only to instances that answer 200.",
  tags: ['operations'],
  response: {
    200: answer(readinessResponse, 'Ready: every client is counted, on its own server or the one it failed over to', {
      readyMemcached,
      readyEmbedded,
      failedOver,
    }),
    503: answer(
      readinessResponse,
      'Not ready: a Memcached server did not answer within `MEMCACHED_TIMEOUT_MS` and its clients could not fail over (`store_unavailable`, with `Retry-After: 1`), or the instance is shutting down (`draining`)',
      { unavailable, draining },
      { 'Retry-After': { type: 'integer', description: '1, when a server is down; absent while draining' } },
    ),
  },
};

export const policiesRoute = {
  summary: 'The loaded policies and what they cost Memcached',
  description:
    'The policies in use (after any reload: a change of the files, `SIGHUP` or `/admin/reload`), with their `version`, and with what each event and limit costs: Memcached keys a check reads (`keysPerCheck`: the most, and on average), increments per check, and items one active feature keeps alive (`itemsPerFeature`), to size a cluster. `npm run policies -- FILE` prints the same for a file.',
  tags: ['operations'],
  response: {
    200: answer(policiesResponse, 'The loaded policies, event by event and limit by limit', policiesExamples),
  },
};

export const metricsRoute = {
  summary: 'Prometheus metrics',
  description:
    "memgate's metrics in Prometheus's text format: decisions by event, route and outcome (`memgate_decisions_total`), the local caches, keys read per check, Memcached calls and their duration, each server's clock offset; and the process's own (CPU, memory, event loop). The README lists them.",
  tags: ['operations'],
  produces: ['text/plain'],
  response: {
    200: {
      type: 'string',
      'x-response-description': 'The metrics, in Prometheus text format 0.0.4',
      examples: [metricsExample],
    },
  },
};

const ADMIN = `Needs \`Authorization: Bearer <MEMGATE_ADMIN_TOKEN>\`; without that setting the admin routes do not exist (404). An address that gives a wrong token 10 times within 60 s gets 429 for every admin request, the right token included, until those failures leave the window.`;

const adminRefusals = {
  401: answer(
    errorResponse,
    '`unauthorized`: no bearer token, or the wrong one (counted against this address)',
    { unauthorized: adminExamples.unauthorized },
    {
      'WWW-Authenticate': { type: 'string', description: 'Bearer' },
    },
  ),
  429: answer(
    errorResponse,
    '`too_many_failures`: this address gave a wrong token 10 times within 60 s; every admin request from it is refused until those failures leave the window',
    { tooManyFailures: adminExamples.tooManyFailures },
    { 'Retry-After': { type: 'integer', description: 'Seconds until this address may try again' } },
  ),
};

const { unknownEvent } = inputErrorExamples;
const { missingFeature, invalidJson } = bodyErrorExamples;

export const adminResetRoute = {
  summary: 'Forget what a feature has counted for an event',
  description: `Forgets every count of \`feature\` for \`event\`, on every instance (the counts live in Memcached): its next check starts from nothing.\n\n${ADMIN}`,
  tags: ['admin'],
  security: [{ adminToken: [] }],
  body: resetBody,
  response: {
    200: answer(resetResponse, 'The counts are forgotten', { reset: adminExamples.reset }),
    400: answer(
      errorResponse,
      'The body is not an event and a feature memgate knows (see the examples); nothing was changed',
      { unknownEvent, missingFeature, invalidJson },
    ),
    ...adminRefusals,
    413: answer(errorResponse, '`payload_too_large`: the body is over 16 KB', payloadTooLargeExample),
    415: answer(
      errorResponse,
      '`unsupported_media_type`: the body is not `application/json`',
      unsupportedMediaTypeExample,
    ),
    503: answer(
      errorResponse,
      '`store_unavailable`: Memcached did not answer in time, so the counts may not be forgotten; retry',
      { storeUnavailable: adminExamples.storeUnavailable },
      RETRY_SOON,
    ),
  },
};

export const adminRefundRoute = {
  summary: 'Take back what a check counted',
  description: `Takes \`cost\` back from the buckets that counted a check at \`at\`: what express-rate-limit's \`decrement\` (\`skipFailedRequests\`, \`skipSuccessfulRequests\`) does through \`memgate/express-rate-limit\`. It gives quota back, so it is an admin route. Instances that already keep that second as settled see the refund when it leaves their window: until then they count the request still (never less than what was admitted).

${ADMIN}`,
  tags: ['admin'],
  security: [{ adminToken: [] }],
  body: refundBody,
  response: {
    200: answer(refundResponse, 'Taken back, or nothing to take back any more', {
      refunded: adminExamples.refunded,
    }),
    400: answer(errorResponse, 'The body is not a check memgate knows, or `at` is in the future; nothing was changed', {
      unknownEvent,
      missingFeature,
      futureAt: adminExamples.futureAt,
    }),
    ...adminRefusals,
    503: answer(
      errorResponse,
      '`store_unavailable`: Memcached did not answer in time, so nothing may be taken back; retry',
      { storeUnavailable: adminExamples.storeUnavailable },
      RETRY_SOON,
    ),
  },
};

export const adminReloadRoute = {
  summary: 'Read the policy file again and use it',
  description: `Reads the policy file (\`MEMGATE_CONFIG\` or \`--config\`) and the Envoy configuration (\`MEMGATE_ENVOY_CONFIG\`, when set) again and decides by them from the next check on, gRPC calls included, without a restart. A file with any problem is refused, listing every problem, and the policies in use stay. Each instance reloads on its own: call every instance.\n\n${ADMIN}`,
  tags: ['admin'],
  security: [{ adminToken: [] }],
  response: {
    200: answer(reloadResponse, 'The new policies are in use', { reloaded: adminExamples.reloaded }),
    400: answer(errorResponse, '`invalid_policies`: the file is invalid; the policies in use are unchanged', {
      invalidPolicies: adminExamples.invalidPolicies,
    }),
    ...adminRefusals,
  },
};

// ---------------------------------------------------------------------------------------
// Usage history

const usageTime = (which: 'from' | 'until', fallback: string) =>
  ({
    type: 'string',
    description: `Epoch seconds, ISO 8601 (\`2026-11-23T10:00:00Z\`), or relative to now (\`-1h\`, \`-30d\`, \`-2y\`, \`now\`; units s, min or m, h, d, w, y). Default ${fallback}`,
    examples: [which === 'from' ? '-1h' : 'now'],
  }) as const;

export const usageQuerystring = {
  type: 'object',
  additionalProperties: false,
  required: ['event'],
  properties: {
    event: { ...event, description: 'An event of the policy file, or one with usage recorded (GET /usage/events)' },
    feature: {
      ...feature,
      description:
        'One client: its curve, from the minutes it was among the heaviest (MEMGATE_USAGE_TOP). Omitted, the whole event',
    },
    from: usageTime('from', 'an hour before `until`'),
    until: usageTime('until', '`now`, which counts the current second'),
    step: {
      type: 'string',
      description:
        'Seconds per point, rounded up to a multiple of the resolution kept that far back (1 s for 6 hours, 1 min for 30 days, 1 h for 2 years by default). Default: a round step giving at most `maxDataPoints` points',
      examples: ['60'],
    },
    maxDataPoints: {
      type: 'string',
      description: 'The most points wanted when no `step` is given, up to 10000. Default 60',
      examples: ['300'],
    },
  },
} as const;

export interface UsageQuerystring {
  event: string;
  feature?: string;
  from?: string;
  until?: string;
  step?: string;
  maxDataPoints?: string;
}

export const usageTopQuerystring = {
  type: 'object',
  additionalProperties: false,
  required: ['event'],
  properties: {
    event: usageQuerystring.properties.event,
    from: usageTime('from', 'an hour before `until`'),
    until: usageTime('until', '`now`'),
    limit: { type: 'string', description: 'Clients listed per outcome, up to 1000. Default 20', examples: ['10'] },
  },
} as const;

export interface UsageTopQuerystring {
  event: string;
  from?: string;
  until?: string;
  limit?: string;
}

const counts = {
  allowed: { type: 'integer', description: 'decisions that admitted the request' },
  denied: { type: 'integer', description: 'decisions that refused it' },
  degraded: {
    type: 'integer',
    description: "decisions made by the event's onStoreError rule, without counts, because the store did not answer",
  },
  shadow_denied: {
    type: 'integer',
    description:
      "of the allowed decisions, those a limit in `mode: shadow` would have denied (counted in `allowed` too); 0 on a client's curve, as it is counted per event only",
  },
  settled: {
    type: 'integer',
    description:
      "reservations settled in this step (`POST /settle`, and Envoy's at a stream's end), counted at the settle's second; 0 on a client's curve, as settles are counted per event only",
  },
  settled_cost: {
    type: 'integer',
    description:
      "the sum of those settles' actual `cost`, in the units the event's limits count (tokens, say), not decisions; 0 on a client's curve",
  },
} as const;

export const usageResponse = {
  type: 'object',
  required: ['event', 'feature', 'from', 'until', 'step', 'points'],
  properties: {
    event: { type: 'string' },
    feature: { type: ['string', 'null'], description: 'the client asked for, or null for the whole event' },
    from: { type: 'integer', description: 'the range asked, in epoch seconds' },
    until: { type: 'integer', description: 'its end, in epoch seconds (not included)' },
    step: { type: 'integer', description: 'seconds per point' },
    points: {
      type: 'array',
      description:
        'One per step from the step holding `from` while before `until`, zero-filled, oldest first; they include what instances have not written yet',
      items: {
        type: 'object',
        required: ['t', 'allowed', 'denied', 'degraded', 'shadow_denied', 'settled', 'settled_cost'],
        properties: {
          t: { type: 'integer', description: "the step's first second, in epoch seconds" },
          ...counts,
          tracked: {
            type: 'object',
            description:
              "A client's curve only: for each outcome, whether its count is known. False where, in some minute (or hour, for older history) of this step, the client was not among the heaviest the history names while other clients went unnamed: its count there is unknown, so the point's count is a lower bound (0: unknown, not none)",
            required: ['allowed', 'denied'],
            properties: { allowed: { type: 'boolean' }, denied: { type: 'boolean' } },
          },
        },
      },
    },
  },
} as const;

const clientList = {
  type: 'array',
  description:
    'most first; a count is never more than the client got (exact unless a minute had more clients than memgate follows)',
  items: {
    type: 'object',
    required: ['feature', 'count'],
    properties: { feature: { type: 'string' }, count: { type: 'integer' } },
  },
} as const;

export const usageTopResponse = {
  type: 'object',
  required: ['event', 'from', 'until', 'allowed', 'denied'],
  properties: {
    event: { type: 'string' },
    from: {
      type: 'integer',
      description:
        'the start of the range as counted: `from` rounded down to the minute, or to the hour past a day (clients are kept per minute and hour)',
    },
    until: { type: 'integer' },
    allowed: clientList,
    denied: clientList,
  },
} as const;

export const usageEventsResponse = {
  type: 'object',
  required: ['events', 'retention'],
  properties: {
    events: {
      type: 'array',
      items: {
        type: 'object',
        required: ['event', 'from', 'until'],
        properties: {
          event: { type: 'string' },
          from: { type: 'integer', description: 'its oldest data still kept, in epoch seconds' },
          until: { type: 'integer', description: 'the end of its newest data' },
        },
      },
    },
    retention: {
      type: 'array',
      description: 'the resolutions kept, finest first (MEMGATE_USAGE_RETENTION)',
      items: {
        type: 'object',
        required: ['resolution', 'keepSeconds'],
        properties: { resolution: { type: 'integer' }, keepSeconds: { type: 'integer' } },
      },
    },
  },
} as const;

const USAGE_UNAVAILABLE =
  '`usage_store_unavailable`: graphite-web (`MEMGATE_GRAPHITE_WEB`) did not answer, or answered an error';
const USAGE_OFF = '`usage_off`: usage history is off (`MEMGATE_USAGE_DB=off` and no `MEMGATE_GRAPHITE_WEB`)';

export const usageRoute = {
  summary: 'Request counts over time',
  description:
    "Allowed, denied and degraded decisions of an event, or of one of its clients, one point per step over any range: from the finest resolution still kept for the range (1 s points for 6 hours, 1 min for 30 days, 1 h for 2 years by default). Counts are exact, and current: they include what this instance has counted and not yet written (it writes every `MEMGATE_USAGE_FLUSH_S`). With several instances, read it from Graphite (`MEMGATE_GRAPHITE_WEB`). A client has a curve for the minutes it was among the `MEMGATE_USAGE_TOP` heaviest of the event; each of its points says, per outcome, whether its count is known (`tracked`): where it was below the heaviest in part of the step while others went unnamed, the count is a lower bound, and a 0 means unknown. `shadow_denied` is the part of `allowed` that a limit in `mode: shadow` would have denied (per event: 0 on a client's curve). `settled` and `settled_cost` are the reservations settled in the step and the sum of their actual costs, in the limits' units (per event: 0 on a client's curve).",
  tags: ['usage'],
  querystring: usageQuerystring,
  response: {
    200: answer(usageResponse, 'The points, one a step, zero-filled', usageExamples.series),
    400: answer(
      errorResponse,
      'A range or time memgate cannot read, an event it knows nothing of, or a range that would read more of the history than one query may (`usage_query_too_large`: ask for a shorter one)',
      usageExamples.seriesErrors,
    ),
    404: answer(errorResponse, USAGE_OFF, usageExamples.off),
    502: answer(errorResponse, USAGE_UNAVAILABLE, usageExamples.unavailable),
  },
};

export const usageTopRoute = {
  summary: 'The heaviest clients of a range',
  description:
    'The clients with the most allowed and the most denied decisions of an event over a range, from the heaviest of each minute (`MEMGATE_USAGE_TOP` per minute and outcome).',
  tags: ['usage'],
  querystring: usageTopQuerystring,
  response: {
    200: answer(usageTopResponse, 'The clients, most first', usageExamples.top),
    400: answer(
      errorResponse,
      'A range or time memgate cannot read, an event it knows nothing of, or a range that would read more of the history than one query may (`usage_query_too_large`: ask for a shorter one)',
      usageExamples.topErrors,
    ),
    404: answer(errorResponse, USAGE_OFF, usageExamples.off),
    502: answer(errorResponse, USAGE_UNAVAILABLE, usageExamples.unavailable),
  },
};

export const usageEventsRoute = {
  summary: 'The events with usage recorded',
  description: 'Each event with usage still kept, and the range its data covers; and the resolutions kept.',
  tags: ['usage'],
  response: {
    200: answer(usageEventsResponse, 'The events, each with the range of its data', usageExamples.events),
    404: answer(errorResponse, USAGE_OFF, usageExamples.off),
    502: answer(errorResponse, USAGE_UNAVAILABLE, usageExamples.unavailable),
  },
};
