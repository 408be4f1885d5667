/**
 * Every error code memgate answers with, in `{"error": {"code", "message"}}`, and the
 * codes of the library's LimiterInputError: one table, so the HTTP layer, the limiter and
 * the docs (README's error table is generated from it) cannot disagree. A leaf: the
 * layers that send these codes import it, it imports none of them.
 */
import { DEFAULTS } from './defaults.js';

export interface ErrorCodeSpec {
  /**
   * The HTTP status it is sent with. On /gate, every refusal of the gateway's input
   * takes the policy's `gateway.invalidStatus` (400 or 401) instead.
   */
  readonly status: number;
  /** When it is sent, for the docs: one line, markdown. */
  readonly when: string;
}

const KB = (bytes: number) => `${bytes / 1024} KB`;

/** In the order the README lists them. */
export const ERROR_CODES = {
  invalid_event: {
    status: 400,
    when: 'the event is missing, empty, not a string or not well-formed Unicode (bytes that are not UTF-8 included); on `/gate`, the event header was sent twice',
  },
  invalid_feature: {
    status: 400,
    when: 'the feature is missing, empty, not a string or not well-formed Unicode (bytes that are not UTF-8 included); on `/gate`, the feature header is missing or sent twice, or the client address is not an IP address',
  },
  invalid_cost: { status: 400, when: '`cost` is not a positive integer' },
  unknown_event: { status: 400, when: 'the event is not in the policy file' },
  feature_too_long: { status: 400, when: 'the feature is over 1024 UTF-8 bytes' },
  cost_exceeds_limit: { status: 400, when: '`cost` is larger than a limit of the event: it could never be allowed' },
  invalid_tier: {
    status: 400,
    when: '`tier` is empty, not a string or not well-formed Unicode; on `/gate`, the tier header was sent twice',
  },
  unknown_tier: { status: 400, when: '`tier` names no tier of the event (or the event has no `tiers`): never a silent default' },
  lease_off: { status: 400, when: '`/lease`, `/lease/return`: the event has no `lease` section in the policy file' },
  unknown_lease: {
    status: 404,
    when: '`/lease/return`: no lease of this id for this event and feature (never given, or forgotten after its life)',
  },
  lease_returned: { status: 409, when: '`/lease/return`: the lease was returned already; a lease is returned once' },
  lease_expired: {
    status: 409,
    when: `\`/lease/return\`: more than the lease's life and ${DEFAULTS.leaseReturnGraceSeconds} s have passed since it was taken; its units stay counted`,
  },
  reserve_off: {
    status: 400,
    when: '`reserve` on `/check`, `/settle`: the event has no `reservations` section in the policy file',
  },
  unknown_reservation: {
    status: 404,
    when: '`/settle`: no reservation of this id for this event and feature (never given, or forgotten after its life)',
  },
  reservation_settled: { status: 409, when: '`/settle`: the reservation was settled already; a reservation is settled once' },
  reservation_expired: {
    status: 409,
    when: `\`/settle\`: more than the reservation's life and ${DEFAULTS.leaseReturnGraceSeconds} s have passed since it was made; it stays counted as reserved`,
  },
  release_off: {
    status: 400,
    when: '`/release`: the event holds no requests in flight (only `algorithm: concurrency` does); its checks are over when decided',
  },
  unknown_slot: { status: 404, when: '`/release`: the slot id is not one memgate gave' },
  invalid_request: {
    status: 400,
    when: `an unknown field, a body that is not a JSON object or nests arrays and objects more than ${DEFAULTS.jsonMaxDepth} deep, or a URL that is not valid percent-encoding`,
  },
  invalid_json: { status: 400, when: 'the body is broken or empty JSON' },
  malformed_request: { status: 400, when: 'the request is not valid HTTP' },
  invalid_uri: { status: 400, when: '`/gate` only: the URI header missing or sent twice, a bare `/gate` under `uri: path`, or a path that is not valid percent-encoding' },
  ambiguous_uri: { status: 400, when: '`/gate` only: a path that servers read as different routes (see [Paths](#gateways))' },
  unmatched_path: { status: 400, when: '`/gate` only: no route matches the path, under `unmatched: deny`' },
  invalid_time: {
    status: 400,
    when: '`/usage`: `from` or `until` is not epoch seconds, ISO 8601 or a relative time such as `-1h` or `now`; `/admin/refund`: `at` is in the future',
  },
  invalid_range: {
    status: 400,
    when: `\`/usage\`: \`from\` is not before \`until\`, \`step\`, \`maxDataPoints\` or \`limit\` is not a positive whole number, or the range needs more than ${DEFAULTS.usageMaxPoints.toLocaleString('en')} points`,
  },
  usage_query_too_large: {
    status: 400,
    when: '`/usage`, `/usage/top`: answering would read more rows of the usage history than one query may (the message says how many); ask for a shorter range',
  },
  usage_off: { status: 404, when: '`/usage`, `/usage/top` and `/usage/events` when usage history is off (`MEMGATE_USAGE_DB=off` and no `MEMGATE_GRAPHITE_WEB`)' },
  unauthorized: { status: 401, when: 'an admin route without the right bearer token' },
  too_many_failures: {
    status: 429,
    when: `an admin route, from an address that gave a wrong token ${DEFAULTS.adminFailureLimit} times within ${DEFAULTS.adminFailureWindowSeconds} s: every admin request from it, even with the right token, until those failures leave the window; with \`retry-after\``,
  },
  invalid_policies: { status: 400, when: '`/admin/reload` found the policy file or the Envoy configuration invalid; the policies in use stay' },
  not_found: { status: 404, when: 'no such route; `/gate` when the policy file has no `gateway` section' },
  payload_too_large: {
    status: 413,
    when: `the body is over ${KB(DEFAULTS.bodyLimitBytes)} (${KB(DEFAULTS.batchBodyLimitBytes)} for \`/check/batch\` and \`/lease/batch\`: 100 checks of 1024-byte features fit, as JSON.stringify writes them), or holds more than ${DEFAULTS.jsonMaxValues} JSON values`,
  },
  unsupported_media_type: { status: 415, when: 'the body is not `application/json`' },
  request_too_large: { status: 431, when: 'the URL or headers are too large' },
  request_timeout: { status: 408, when: `the client took over ${DEFAULTS.requestTimeoutMs / 1000} s to send its request` },
  bad_request: { status: 400, when: 'a request fastify refuses for another reason, with its own 4xx status' },
  overloaded: {
    status: 503,
    when: '`MEMCACHED_MAX_IN_FLIGHT` checks are already waiting on Memcached (a slow or hung server), or the event loop lags more than `MEMGATE_MAX_EVENT_LOOP_DELAY_MS`; `retry-after: 1`',
  },
  store_unavailable: {
    status: 503,
    when: "`/readyz`, and `/admin/reset`, which must reach Memcached: a server did not answer within `MEMCACHED_TIMEOUT_MS`; `retry-after: 1`. `/check`, `/peek` and `/gate` answer by the event's `onStoreError` rule instead, with `\"degraded\": true`",
  },
  usage_store_unavailable: { status: 502, when: '`/usage` with `MEMGATE_GRAPHITE_WEB`: graphite-web did not answer, or answered an error' },
  draining: {
    status: 503,
    when: '`/readyz` and `/admin/reload` only: the instance is shutting down (see [Shutdown](docs/operations.md#shutdown)); a reload then loads nothing; other routes still answer',
  },
  internal_error: { status: 500, when: 'a bug in memgate (logged)' },
} as const satisfies Readonly<Record<string, ErrorCodeSpec>>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes of the library's LimiterInputError: public API, so these strings never change. */
export const INPUT_ERROR_CODES = [
  'invalid_event',
  'unknown_event',
  'invalid_feature',
  'feature_too_long',
  'invalid_cost',
  'cost_exceeds_limit',
  'invalid_tier',
  'unknown_tier',
  'invalid_time',
  'lease_off',
  'unknown_lease',
  'lease_returned',
  'lease_expired',
  'reserve_off',
  'unknown_reservation',
  'release_off',
  'unknown_slot',
  'reservation_settled',
  'reservation_expired',
] as const satisfies readonly ErrorCode[];
export type InputErrorCode = (typeof INPUT_ERROR_CODES)[number];

/** Why /gate refuses a guarded request's path (gateway-policy.ts). */
export const PATH_ERROR_CODES = ['invalid_uri', 'ambiguous_uri', 'unmatched_path'] as const satisfies readonly ErrorCode[];
export type PathErrorCode = (typeof PATH_ERROR_CODES)[number];
