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
// The contract's schemas as plain objects (generated from shared/contract*.ts): no TypeBox at run time.
import {
  CheckBatch,
  CheckBatchAnswer,
  CheckBody,
  CheckQuery,
  CheckRequest,
  Decision,
  ErrorBody,
  LeaseBatchAnswer,
  LeaseBatchBody,
  LeaseBody,
  LeaseDecision,
  LeaseReturnBody,
  LeaseReturned,
  PeekQuery,
  Policies,
  Readiness,
  RefundBody,
  Refunded,
  ReleaseBody,
  Released,
  Reloaded,
  ResetAnswer,
  ResetBody,
  SettleBody,
  Settled,
  Status,
  UsageEvents,
  UsageQuery,
  UsageSeries,
  UsageTop,
  UsageTopQuery,
} from '../shared/contract-schemas.js';
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
  releaseExamples,
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
  ErrorBody,
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
    ? {
        allowed,
        ...(via === 'body' ? { allowedCost, reserved: settleExamples.reserved, holding: releaseExamples.holding } : {}),
        degradedAllowed,
      }
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
      Decision,
      `${check ? 'Allowed: the request fits every limit of the event, and its cost is counted' : 'A request of this cost would be allowed now; nothing is counted'}. A degraded decision (\`degraded: true\`, no limits, no RateLimit headers) was made by the event's \`onStoreError\` rule because Memcached did not answer in time`,
      admitted,
      RATE_LIMIT_HEADERS,
    ),
    429: answer(
      Decision,
      `${check ? 'Denied: the request does not fit some limit of the event, and nothing was counted' : 'A request of this cost would be denied now'}. \`retryAfter\` and \`Retry-After\` say when it would fit, exact to the policy’s granularity; a degraded denial says 1`,
      refused,
      DENIAL_HEADERS,
    ),
    400: answer(
      ErrorBody,
      'The request is not one memgate can decide (see the examples); nothing was counted',
      badInput,
    ),
    ...(via === 'body'
      ? {
          413: answer(
            ErrorBody,
            `\`payload_too_large\`: the body is over ${DEFAULTS.bodyLimitBytes / 1024} KB`,
            payloadTooLargeExample,
          ),
          415: answer(
            ErrorBody,
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
  querystring: CheckQuery,
  response: decisionAnswers('/check', 'query'),
};

export const checkBodyRoute = {
  summary: 'Decide and count a request (JSON body)',
  description: `${CHECK}\n\nThe same as \`GET /check\`, with the fields in a JSON object (\`cost\` a JSON integer).`,
  tags: ['decisions'],
  body: CheckBody,
  response: decisionAnswers('/check', 'body'),
};

export const peekQueryRoute = {
  summary: 'The decision /check would make, counting nothing',
  description: `${PEEK}\n\nThe same as \`POST /peek\`, with the fields in the query string.`,
  tags: ['decisions'],
  querystring: PeekQuery,
  response: decisionAnswers('/peek', 'query'),
};

export const peekBodyRoute = {
  summary: 'The decision /check would make, counting nothing (JSON body)',
  description: `${PEEK}\n\nThe same as \`GET /peek\`, with the fields in a JSON object.`,
  tags: ['decisions'],
  body: CheckRequest,
  response: decisionAnswers('/peek', 'body'),
};

export const checkBatchRoute = {
  summary: 'Decide and count several requests at once',
  description: `Up to ${DEFAULTS.batchMaxChecks} checks in one request, as \`POST /check\` bodies in a JSON array: memgate's client (\`memgate/client\`) sends the checks its callers make at the same moment this way, one HTTP request instead of many. Each check is decided on its own, exactly as \`/check\` would decide it alone (checks of the same feature count as concurrent \`/check\`s do), and counted when allowed.

The answer is always 200 with an array in the order of the checks: a decision (\`allowed\` true or false, as \`/check\`'s 200 and 429 bodies) or, for a check \`/check\` would have refused, its error with the \`status\` \`/check\` would have answered (400 for its input, 503 when it was shed). A body that is not such an array, or a check of the wrong shape, is a 400 for the whole batch, and nothing is counted. No RateLimit headers: they describe one decision.`,
  tags: ['decisions'],
  body: CheckBatch,
  response: {
    200: answer(
      CheckBatchAnswer,
      'The decisions, in the order of the checks; a check /check would have refused holds its error and status instead',
      batchExamples,
    ),
    400: answer(
      ErrorBody,
      'The body is not a JSON array of 1 to 100 checks, or a check is not an object with a string event and feature (and an integer cost); nothing was counted',
      { ...batchErrorExamples, invalidJson: bodyErrorExamples.invalidJson },
    ),
    413: answer(
      ErrorBody,
      `\`payload_too_large\`: the body is over ${DEFAULTS.batchBodyLimitBytes / 1024} KB`,
      payloadTooLargeExample,
    ),
    415: answer(ErrorBody, '`unsupported_media_type`: the body is not `application/json`', unsupportedMediaTypeExample),
  },
};

const leaseInputErrors = (extra: Record<string, Example>) =>
  answer(ErrorBody, 'The request is not one memgate can take (see the examples); nothing was counted or taken back', {
    ...extra,
    unknownEvent: inputErrorExamples.unknownEvent,
    invalidJson: bodyErrorExamples.invalidJson,
  });

export const leaseRoute = {
  summary: 'Take a quota lease: several units counted at once, spent by the client',
  description: `For an event whose policy has a \`lease\` section. memgate counts up to \`units\` at once for \`feature\` (never more than what remains in every limit, nor the policy's \`maxUnits\`), and the client answers its next checks itself from those units, without asking. When the lease's \`seconds\` end, the client returns what it did not spend with \`POST /lease/return\`; memgate takes those back, and counts the spent ones again at the return's second, so that no window loses a spent unit early.

Nothing is ever admitted beyond the limit: the units are counted before they are spent. What a lease costs others is that its unspent units are refused to them until it is returned (at most its life and ${DEFAULTS.leaseReturnGraceSeconds} s). So that a denied client asks again by then, a denial of an event with leases says at most that long in \`retryAfter\`.

200 with the decision and the \`lease\` when units were counted; 429 with the decision, as \`/check\`'s, when not even one unit fits. \`memgate/client\` takes and returns leases itself (docs/client.md).`,
  tags: ['leases'],
  body: LeaseBody,
  response: {
    200: answer(LeaseDecision, 'Units were counted: the `lease` says how many, and until when', leaseExamples.granted),
    400: leaseInputErrors({ leaseOff: leaseExamples.leaseOff }),
    429: answer(Decision, 'Not even one unit fits: the decision, as /check’s', leaseExamples.denied, DENIAL_HEADERS),
    503: overloaded,
  },
};

export const leaseReturnRoute = {
  summary: 'Return a lease: take back its unused units',
  description: `Takes back the units a lease did not spend, and counts its spent ones at this second instead of the lease's. A lease is returned once, within its life and ${DEFAULTS.leaseReturnGraceSeconds} s; after that its units stay counted until they leave the window. After a reset of the feature (\`/admin/reset\`) at or after the lease's second, nothing is taken back (\`returned: 0\`): the reset forgot the units already.`,
  tags: ['leases'],
  body: LeaseReturnBody,
  response: {
    200: answer(LeaseReturned, 'The unused units are free again; the spent ones count from now', {
      returned: leaseReturnExamples.returned,
    }),
    400: leaseInputErrors({ leaseOff: leaseExamples.leaseOff }),
    404: answer(ErrorBody, '`unknown_lease`: no lease of this id for this event and feature', {
      unknownLease: leaseReturnExamples.unknownLease,
    }),
    409: answer(ErrorBody, '`lease_returned`: returned already (a lease is returned once); `lease_expired`: too late', {
      returnedTwice: leaseReturnExamples.returnedTwice,
    }),
    503: answer(
      ErrorBody,
      '`store_unavailable`: Memcached did not answer in time; the units stay counted',
      { storeUnavailable: adminExamples.storeUnavailable },
      RETRY_SOON,
    ),
  },
};

export const releaseRoute = {
  summary: 'Release the slot a request of a concurrency limit holds',
  description:
    'For an event with `algorithm: concurrency`: a `/check` that is allowed holds a `slot` while its request is in flight; release it here once the request is done, so that the client may have another in flight. A slot never released frees itself when the limit’s `timeout` has passed since it was taken (an instance that stopped, a caller that forgot). Releasing a slot that is free already answers `released: false` and changes nothing.',
  tags: ['decisions'],
  body: ReleaseBody,
  response: {
    200: answer(Released, 'Released: the slot is free for another request of the client', {
      released: releaseExamples.released,
      freeAlready: releaseExamples.freeAlready,
    }),
    400: answer(ErrorBody, 'The request is not one memgate can release (see the examples); nothing changed', {
      releaseOff: releaseExamples.releaseOff,
      unknownEvent: inputErrorExamples.unknownEvent,
      invalidJson: bodyErrorExamples.invalidJson,
    }),
    404: answer(ErrorBody, '`unknown_slot`: the id is not one memgate gave', {
      unknownSlot: releaseExamples.unknownSlot,
    }),
    503: answer(
      ErrorBody,
      '`store_unavailable`: Memcached did not answer in time; the slot stays held until released or timed out',
      { storeUnavailable: adminExamples.storeUnavailable },
      RETRY_SOON,
    ),
  },
};

export const settleRoute = {
  summary: 'Settle a reservation with what its request actually cost',
  description: `For a reservation made by \`/check\` with \`reserve\`: counts the actual \`cost\` at this second and takes back what was reserved from the reservation's second, so the client's counts change by the difference (a refund when the cost is smaller). A larger cost than reserved can put the client over its limits, and its next check sees it. A reservation is settled once, within its life and ${DEFAULTS.leaseReturnGraceSeconds} s; one never settled stays counted as reserved until it leaves the window. After a reset of the feature at or after the reservation's second, only the actual cost is counted. It settles under the plan it was reserved under (the tier or override that applied then, for a token bucket its rate then), whatever \`tier\` the settle names.`,
  tags: ['decisions'],
  body: SettleBody,
  response: {
    200: answer(Settled, 'Settled: the counts changed by `counted`', { settled: settleExamples.settled }),
    400: answer(ErrorBody, 'The request is not one memgate can settle (see the examples); nothing was counted', {
      reserveOff: settleExamples.reserveOff,
      unknownEvent: inputErrorExamples.unknownEvent,
      invalidJson: bodyErrorExamples.invalidJson,
    }),
    404: answer(ErrorBody, '`unknown_reservation`: no reservation of this id for this event and feature', {
      unknownReservation: settleExamples.unknownReservation,
    }),
    409: answer(
      ErrorBody,
      '`reservation_settled`: settled already (a reservation is settled once); `reservation_expired`: too late',
      { settledTwice: settleExamples.settledTwice },
    ),
    503: answer(
      ErrorBody,
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
  body: LeaseBatchBody,
  response: {
    200: answer(
      LeaseBatchAnswer,
      'The answers, in the order asked; an item those routes would have refused holds its error and status instead',
      leaseBatchExamples,
    ),
    400: answer(
      ErrorBody,
      'The body is not `take` and `return` arrays of 1 to 100 items together, or an item is not of their shape; nothing was counted or taken back',
      leaseBatchErrorExamples,
    ),
    413: answer(
      ErrorBody,
      `\`payload_too_large\`: the body is over ${DEFAULTS.batchBodyLimitBytes / 1024} KB`,
      payloadTooLargeExample,
    ),
  },
};

const gatewayDenied = (status: string, examples: Record<string, Example>) =>
  answer(
    Decision,
    `Denied, when \`gateway.denyStatus\` is ${status}: the guarded request does not fit some limit of its event, or a degraded decision by \`onStoreError\` refused it; nothing was counted`,
    examples,
    DENIAL_HEADERS,
  );

const gatewayInvalid = (status: string, examples: Record<string, Example>) =>
  answer(
    ErrorBody,
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
      Decision,
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
    404: answer(ErrorBody, '`not_found`: the policy file has no `gateway` section, so /gate is off', gatewayOffExample),
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
  response: { 200: answer(Status, 'The process is running', healthExamples) },
};

const { readyMemcached, readyEmbedded, failedOver, unavailable, draining } = readinessExamples;

export const readinessRoute = {
  summary: 'Readiness: every Memcached server answers',
  description:
    "Asks every Memcached server and lists each with whether it answers, where its clients are counted (`state`), its evictions and its clock's offset from this host (memgate counts by the servers' clocks). 200 when every client is counted somewhere: every server answers, or a down one's clients are failed over to the others; 503 when a down server's clients are not (`store_unavailable`, with each such server's reason: failover is off, or no other server answers), and at once, without asking, while the instance drains before stopping (`draining`). Load balancers should send checks only to instances that answer 200.",
  tags: ['operations'],
  response: {
    200: answer(Readiness, 'Ready: every client is counted, on its own server or the one it failed over to', {
      readyMemcached,
      readyEmbedded,
      failedOver,
    }),
    503: answer(
      Readiness,
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
    200: answer(Policies, 'The loaded policies, event by event and limit by limit', policiesExamples),
  },
};

export const upstreamHealthRoute = {
  summary: "envoyproxy/ratelimit's health check",
  description:
    'The probe envoyproxy/ratelimit serves, for deployments that switch to memgate unchanged: `OK` with 200 when memgate is ready (as `/readyz` decides), an empty 500 otherwise (the store cannot count every client, or the instance is draining), as upstream answers. `/healthz` and `/readyz` say more.',
  tags: ['operations'],
  produces: ['text/plain'],
  response: {
    200: {
      type: 'string',
      'x-response-description': 'Ready: every client is counted somewhere, as /readyz decides',
      examples: ['OK'],
    },
    500: {
      type: 'string',
      'x-response-description': 'Not ready: draining, or a store server whose clients are not counted',
      examples: [''],
    },
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
    ErrorBody,
    '`unauthorized`: no bearer token, or the wrong one (counted against this address)',
    { unauthorized: adminExamples.unauthorized },
    {
      'WWW-Authenticate': { type: 'string', description: 'Bearer' },
    },
  ),
  429: answer(
    ErrorBody,
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
  body: ResetBody,
  response: {
    200: answer(ResetAnswer, 'The counts are forgotten', { reset: adminExamples.reset }),
    400: answer(
      ErrorBody,
      'The body is not an event and a feature memgate knows (see the examples); nothing was changed',
      { unknownEvent, missingFeature, invalidJson },
    ),
    ...adminRefusals,
    413: answer(ErrorBody, '`payload_too_large`: the body is over 16 KB', payloadTooLargeExample),
    415: answer(ErrorBody, '`unsupported_media_type`: the body is not `application/json`', unsupportedMediaTypeExample),
    503: answer(
      ErrorBody,
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
  body: RefundBody,
  response: {
    200: answer(Refunded, 'Taken back, or nothing to take back any more', {
      refunded: adminExamples.refunded,
    }),
    400: answer(ErrorBody, 'The body is not a check memgate knows, or `at` is in the future; nothing was changed', {
      unknownEvent,
      missingFeature,
      futureAt: adminExamples.futureAt,
    }),
    ...adminRefusals,
    503: answer(
      ErrorBody,
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
    200: answer(Reloaded, 'The new policies are in use', { reloaded: adminExamples.reloaded }),
    400: answer(ErrorBody, '`invalid_policies`: the file is invalid; the policies in use are unchanged', {
      invalidPolicies: adminExamples.invalidPolicies,
    }),
    503: answer(ErrorBody, '`draining`: the instance is shutting down; nothing was loaded', {
      draining: adminExamples.reloadWhileDraining,
    }),
    ...adminRefusals,
  },
};

// ---------------------------------------------------------------------------------------
// Usage history

const USAGE_UNAVAILABLE =
  '`usage_store_unavailable`: graphite-web (`MEMGATE_GRAPHITE_WEB`) did not answer, or answered an error';
const USAGE_OFF = '`usage_off`: usage history is off (`MEMGATE_USAGE_DB=off` and no `MEMGATE_GRAPHITE_WEB`)';

export const usageRoute = {
  summary: 'Request counts over time',
  description:
    "Allowed, denied and degraded decisions of an event, or of one of its clients, one point per step over any range: from the finest resolution still kept for the range (1 s points for 6 hours, 1 min for 30 days, 1 h for 2 years by default). Counts are exact, and current: they include what this instance has counted and not yet written (it writes every `MEMGATE_USAGE_FLUSH_S`). With several instances, read it from Graphite (`MEMGATE_GRAPHITE_WEB`). A client has a curve for the minutes it was among the `MEMGATE_USAGE_TOP` heaviest of the event; each of its points says, per outcome, whether its count is known (`tracked`): where it was below the heaviest in part of the step while others went unnamed, the count is a lower bound, and a 0 means unknown. `shadow_denied` is the part of `allowed` that a limit in `mode: shadow` would have denied (per event: 0 on a client's curve). `settled` and `settled_cost` are the reservations settled in the step and the sum of their actual costs, in the limits' units (per event: 0 on a client's curve).",
  tags: ['usage'],
  querystring: UsageQuery,
  response: {
    200: answer(UsageSeries, 'The points, one a step, zero-filled', usageExamples.series),
    400: answer(
      ErrorBody,
      'A range or time memgate cannot read, an event it knows nothing of, or a range that would read more of the history than one query may (`usage_query_too_large`: ask for a shorter one)',
      usageExamples.seriesErrors,
    ),
    404: answer(ErrorBody, USAGE_OFF, usageExamples.off),
    502: answer(ErrorBody, USAGE_UNAVAILABLE, usageExamples.unavailable),
  },
};

export const usageTopRoute = {
  summary: 'The heaviest clients of a range',
  description:
    'The clients with the most allowed and the most denied decisions of an event over a range, from the heaviest of each minute (`MEMGATE_USAGE_TOP` per minute and outcome).',
  tags: ['usage'],
  querystring: UsageTopQuery,
  response: {
    200: answer(UsageTop, 'The clients, most first', usageExamples.top),
    400: answer(
      ErrorBody,
      'A range or time memgate cannot read, an event it knows nothing of, or a range that would read more of the history than one query may (`usage_query_too_large`: ask for a shorter one)',
      usageExamples.topErrors,
    ),
    404: answer(ErrorBody, USAGE_OFF, usageExamples.off),
    502: answer(ErrorBody, USAGE_UNAVAILABLE, usageExamples.unavailable),
  },
};

export const usageEventsRoute = {
  summary: 'The events with usage recorded',
  description: 'Each event with usage still kept, and the range its data covers; and the resolutions kept.',
  tags: ['usage'],
  response: {
    200: answer(UsageEvents, 'The events, each with the range of its data', usageExamples.events),
    404: answer(ErrorBody, USAGE_OFF, usageExamples.off),
    502: answer(ErrorBody, USAGE_UNAVAILABLE, usageExamples.unavailable),
  },
};
