/**
 * The examples of the OpenAPI document (/docs): answers of memgate serving
 * docs/api-policies.yaml, pasted as they came. test/openapi.test.ts asks memgate for each
 * one again and compares, so an example that no longer matches what memgate says fails.
 */

import { DEFAULTS } from '../config/defaults.js';

export interface Example {
  readonly summary: string;
  readonly value: unknown;
}

const error = (code: string, message: string) => ({ error: { code, message } });

/** The version of docs/api-policies.yaml the examples were decided under, as memgate names it in each decision. */
export const EXAMPLE_POLICY_VERSION = '5d41402abc4b';

export const decisionExamples = {
  allowed: {
    summary: 'Allowed: the first login from 203.0.113.7 this minute',
    value: {
      allowed: true,
      limits: [
        { name: 'login-1m', limit: 5, window: 60, remaining: 4, resetSeconds: 60 },
        { name: 'login-1d', limit: 100, window: 86400, remaining: 99, resetSeconds: 86400 },
      ],
      policyVersion: EXAMPLE_POLICY_VERSION,
    },
  },
  allowedCost: {
    summary: 'Allowed: cost 3 of url_shorten, 97 left this minute',
    value: {
      allowed: true,
      limits: [{ name: 'url_shorten-1m', limit: 100, window: 60, remaining: 97, resetSeconds: 60 }],
      policyVersion: EXAMPLE_POLICY_VERSION,
    },
  },
  degradedAllowed: {
    summary: 'Allowed without counting: Memcached did not answer and url_shorten has onStoreError: allow',
    value: { allowed: true, limits: [], degraded: true, policyVersion: EXAMPLE_POLICY_VERSION },
  },
  denied: {
    summary: 'Denied: the sixth login from 203.0.113.7 within a minute',
    value: {
      allowed: false,
      limits: [
        { name: 'login-1m', limit: 5, window: 60, remaining: 0, resetSeconds: 60 },
        { name: 'login-1d', limit: 100, window: 86400, remaining: 95, resetSeconds: 86400 },
      ],
      retryAfter: 60,
      policyVersion: EXAMPLE_POLICY_VERSION,
    },
  },
  degradedDenied: {
    summary: 'Denied without counting: Memcached did not answer and login has onStoreError: deny',
    value: { allowed: false, limits: [], retryAfter: 1, degraded: true, policyVersion: EXAMPLE_POLICY_VERSION },
  },
  peekUntouched: {
    summary: 'Would be allowed: a client that has not logged in today',
    value: {
      allowed: true,
      limits: [
        { name: 'login-1m', limit: 5, window: 60, remaining: 5, resetSeconds: 0 },
        { name: 'login-1d', limit: 100, window: 86400, remaining: 100, resetSeconds: 0 },
      ],
      policyVersion: EXAMPLE_POLICY_VERSION,
    },
  },
  peekDenied: {
    summary: 'Would be denied: a client that logged in five times this minute',
    value: {
      allowed: false,
      limits: [
        { name: 'login-1m', limit: 5, window: 60, remaining: 0, resetSeconds: 60 },
        { name: 'login-1d', limit: 100, window: 86400, remaining: 95, resetSeconds: 86400 },
      ],
      retryAfter: 60,
      policyVersion: EXAMPLE_POLICY_VERSION,
    },
  },
  unmatched: {
    summary: 'Allowed without counting: no route matches the path and gateway.unmatched is allow',
    value: { allowed: true, limits: [], policyVersion: EXAMPLE_POLICY_VERSION },
  },
} satisfies Record<string, Example>;

/** POST /check/batch: each check decided as /check would, in the order asked. */
export const batchExamples = {
  decided: {
    summary:
      'A login, 3 url_shorten and a check of an unknown event: two decisions and the error /check would have sent',
    value: [
      decisionExamples.allowed.value,
      decisionExamples.allowedCost.value,
      {
        error: { code: 'unknown_event', message: 'unknown event "signup"; known events: login, url_shorten, export' },
        status: 400,
      },
    ],
  },
} satisfies Record<string, Example>;

export const batchErrorExamples = {
  notAnArray: {
    summary: 'A body that is not a JSON array of checks',
    value: error('invalid_request', 'the JSON body must be a JSON array'),
  },
  empty: {
    summary: 'No check at all',
    value: error('invalid_request', 'the JSON body must hold 1 to 100 checks (it holds 0)'),
  },
  itemMissingFeature: {
    summary: 'A check without a feature: the whole batch is refused, nothing counted',
    value: error('invalid_feature', 'check 1 of the batch: feature is required in the check'),
  },
} satisfies Record<string, Example>;

/** POST /lease: url_shorten allows leases of up to 10 units for 5 s (docs/api-policies.yaml). */
export const leaseExamples = {
  granted: {
    granted: {
      summary: 'Ten units for user-42, to spend within 5 s',
      value: {
        allowed: true,
        limits: [{ name: 'url_shorten-1m', limit: 100, window: 60, remaining: 90, resetSeconds: 60 }],
        lease: { id: '1795427730.q8Yc3hJd0mWn2LxTf5RkAw', units: 10, seconds: 5, expiresAt: 1795427735250 },
        policyVersion: EXAMPLE_POLICY_VERSION,
      },
    },
  },
  denied: {
    denied: {
      summary: 'Nothing remains this minute; asked again within the lease hold of 7 s, as a lease may come back',
      value: {
        allowed: false,
        limits: [{ name: 'url_shorten-1m', limit: 100, window: 60, remaining: 0, resetSeconds: 60 }],
        retryAfter: 7,
        policyVersion: EXAMPLE_POLICY_VERSION,
      },
    },
  },
  leaseOff: {
    summary: 'An event whose policy has no lease section',
    value: error('lease_off', 'event login takes no leases: its policy has no lease section'),
  },
} satisfies Record<string, Example | Record<string, Example>>;

export const leaseReturnExamples = {
  returned: {
    summary: 'Four of ten units unused: they are free again, and the six spent count from now',
    value: { returned: 4, spent: 6 },
  },
  unknownLease: {
    summary: 'An id no lease of this feature has',
    value: error('unknown_lease', 'no lease of this id for this event and feature'),
  },
  returnedTwice: {
    summary: 'The same lease returned a second time',
    value: error('lease_returned', 'the lease was returned already'),
  },
} satisfies Record<string, Example>;

/** POST /lease/batch: a return of user-42's lease with 4 units unused, and takes for two users. */
export const leaseBatchExamples = {
  mixed: {
    summary: 'One return, a take granted, and a take of an event without leases',
    value: {
      returned: [{ returned: 4, spent: 6 }],
      taken: [
        {
          allowed: true,
          limits: [{ name: 'url_shorten-1m', limit: 100, window: 60, remaining: 90, resetSeconds: 60 }],
          lease: { id: '1795427730.q8Yc3hJd0mWn2LxTf5RkAw', units: 10, seconds: 5, expiresAt: 1795427735250 },
          policyVersion: EXAMPLE_POLICY_VERSION,
        },
        {
          error: { code: 'lease_off', message: 'event login takes no leases: its policy has no lease section' },
          status: 400,
        },
      ],
    },
  },
} satisfies Record<string, Example>;

export const leaseBatchErrorExamples = {
  nothing: {
    summary: 'Neither a take nor a return',
    value: error('invalid_request', 'a lease batch holds 1 to 100 takes and returns together (it holds 0)'),
  },
  takeWithoutUnits: {
    summary: 'A take without units: the whole batch is refused',
    value: error('invalid_request', 'take 0 of the batch: units is required in the take'),
  },
} satisfies Record<string, Example>;

/** Refusals of what the client sent: the same from /check and /peek. */
export const inputErrorExamples = {
  unknownEvent: {
    summary: 'An event the policy file does not have',
    value: error('unknown_event', 'unknown event "signup"; known events: login, url_shorten, export'),
  },
  emptyEvent: { summary: 'An empty event', value: error('invalid_event', 'event must be a non-empty string') },
  emptyFeature: { summary: 'An empty feature', value: error('invalid_feature', 'feature must be a non-empty string') },
  featureTooLong: {
    summary: 'A feature over 1024 UTF-8 bytes',
    value: error('feature_too_long', 'feature is 1100 bytes; at most 1024 are allowed'),
  },
  invalidCost: {
    summary: 'A cost that is not a positive integer',
    value: error('invalid_cost', 'cost must be a positive integer'),
  },
  unknownTier: {
    summary: 'A tier the event does not have',
    value: error('unknown_tier', 'unknown tier "gold" for event url_shorten; its tiers are pro'),
  },
  costExceedsLimit: {
    summary: 'A cost no limit of the event could ever admit',
    value: error('cost_exceeds_limit', 'cost 6 exceeds the limit 5 of login-1m; such a request could never be allowed'),
  },
} satisfies Record<string, Example>;

export const queryErrorExamples = {
  missingFeature: { summary: 'No feature', value: error('invalid_feature', 'feature is required in the query string') },
  unknownField: {
    summary: 'A field memgate does not know',
    value: error('invalid_request', 'unknown field "user" in the query string; expected event, feature, cost and tier'),
  },
} satisfies Record<string, Example>;

/** GET /check takes `reserve` too, so it names one more field than /peek. */
export const checkQueryErrorExamples = {
  unknownField: {
    summary: 'A field memgate does not know',
    value: error(
      'invalid_request',
      'unknown field "user" in the query string; expected event, feature, cost, tier and reserve',
    ),
  },
} satisfies Record<string, Example>;

/** POST /check with `reserve`, and POST /settle: url_shorten takes reservations of 5 s. */
export const settleExamples = {
  reserved: {
    summary: 'Reserved: 20 of url_shorten counted until the actual cost is known, to settle within 5 s',
    value: {
      allowed: true,
      limits: [{ name: 'url_shorten-1m', limit: 100, window: 60, remaining: 80, resetSeconds: 60 }],
      reservation: { id: '1795427730.q8Yc3hJd0mWn2LxTf5RkAw', units: 20, seconds: 5, expiresAt: 1795427735250 },
      policyVersion: EXAMPLE_POLICY_VERSION,
    },
  },
  settled: {
    summary: 'Reserved 20, cost 17: 3 given back',
    value: { reserved: 20, cost: 17, counted: -3 },
  },
  reserveOff: {
    summary: 'An event whose policy has no reservations section',
    value: error('reserve_off', 'event login takes no reservations: its policy has no reservations section'),
  },
  unknownReservation: {
    summary: 'An id no reservation of this feature has',
    value: error('unknown_reservation', 'no reservation of this id for this event and feature'),
  },
  settledTwice: {
    summary: 'The same reservation settled a second time',
    value: error('reservation_settled', 'the reservation was settled already'),
  },
} satisfies Record<string, Example>;

/** POST /release, and the /check of a concurrency limit whose slot it releases. */
export const releaseExamples = {
  holding: {
    summary: 'Allowed: an export of user-42 in flight, holding one of its 2 slots until released, 30 s at most',
    value: {
      allowed: true,
      limits: [{ name: 'export-inflight', limit: 2, window: 30, remaining: 1, resetSeconds: 30 }],
      slot: { id: '1.1vdd71vim1', expiresAt: 1795427760250 },
      policyVersion: EXAMPLE_POLICY_VERSION,
    },
  },
  released: { summary: 'The export is done: its slot is free again', value: { released: true } },
  freeAlready: {
    summary: 'Released twice, or after its timeout freed it: nothing changes',
    value: { released: false },
  },
  releaseOff: {
    summary: 'An event that holds no requests in flight',
    value: error(
      'release_off',
      'event login holds no requests in flight to release: its checks are over once decided (only algorithm: concurrency holds slots)',
    ),
  },
  unknownSlot: {
    summary: 'An id memgate never gave',
    value: error('unknown_slot', 'the slot id is not one memgate gave'),
  },
} satisfies Record<string, Example>;

export const bodyErrorExamples = {
  invalidJson: {
    summary: 'A body that is not JSON',
    value: error('invalid_json', "Body is not valid JSON but content-type is set to 'application/json'"),
  },
  notAnObject: {
    summary: 'A JSON body that is not an object',
    value: error('invalid_request', 'the JSON body must be a JSON object'),
  },
  featureNotString: {
    summary: 'A feature that is not a string',
    value: error('invalid_feature', 'feature must be a string'),
  },
  missingFeature: { summary: 'No feature', value: error('invalid_feature', 'feature is required in the JSON body') },
} satisfies Record<string, Example>;

export const payloadTooLargeExample = {
  payloadTooLarge: {
    summary: `A body over ${DEFAULTS.bodyLimitBytes / 1024} KB`,
    value: error('payload_too_large', 'Request body is too large'),
  },
} satisfies Record<string, Example>;

export const unsupportedMediaTypeExample = {
  unsupportedMediaType: {
    summary: 'A body that is not application/json',
    value: error('unsupported_media_type', 'Unsupported Media Type'),
  },
} satisfies Record<string, Example>;

export const overloadedExample = {
  overloaded: {
    summary: 'MEMCACHED_MAX_IN_FLIGHT (here 100) checks already wait on a hung Memcached',
    value: error('overloaded', '100 Memcached calls are already in flight'),
  },
} satisfies Record<string, Example>;

export const gatewayErrorExamples = {
  missingUri: {
    summary: 'The gateway sent no URI header',
    value: error('invalid_uri', 'the gateway sent no x-original-uri header'),
  },
  uriTwice: {
    summary: 'The URI header sent twice',
    value: error('invalid_uri', 'the x-original-uri header was sent more than once'),
  },
  badEncoding: {
    summary: 'A path that is not valid percent-encoding',
    value: error('invalid_uri', 'the path is not valid percent-encoding'),
  },
  ambiguous: {
    summary: 'A path upstream servers read as different routes (/api/..;/login)',
    value: error(
      'ambiguous_uri',
      'servers read this path as different routes (an encoded slash or backslash, a ;parameter, or // before ..); refused rather than guessed',
    ),
  },
  clientNotAnIp: {
    summary: 'X-Forwarded-For names no IP address',
    value: error('invalid_feature', 'the client address in X-Forwarded-For is not an IP address'),
  },
  unmatchedPath: {
    summary: 'No route matches the path and gateway.unmatched is deny',
    value: error('unmatched_path', 'no route matches this path, and gateway.unmatched is deny'),
  },
} satisfies Record<string, Example>;

export const gatewayOffExample = {
  gatewayOff: {
    summary: 'The policy file has no gateway section',
    value: error('not_found', 'the policy file has no gateway section, so /gate is off'),
  },
} satisfies Record<string, Example>;

export const healthExamples = {
  ok: { summary: 'The process answers', value: { status: 'ok' } },
} satisfies Record<string, Example>;

export const readinessExamples = {
  readyMemcached: {
    summary: 'Every Memcached server answers',
    value: {
      status: 'ready',
      store: 'memcached',
      clockOffsetMs: -115,
      servers: [{ server: '127.0.0.1:21311', up: true, evictions: 0, clockOffsetMs: -115, state: 'up' }],
    },
  },
  readyEmbedded: {
    summary: 'The embedded store (no MEMCACHED_SERVERS)',
    value: { status: 'ready', store: 'embedded', clockOffsetMs: 0, servers: [{ server: 'embedded', up: true }] },
  },
  failedOver: {
    summary: 'One of two Memcached servers is down: its clients are counted on the other (MEMCACHED_FAILOVER)',
    value: {
      status: 'ready',
      store: 'memcached',
      clockOffsetMs: -115,
      servers: [
        { server: '127.0.0.1:21311', up: true, evictions: 0, clockOffsetMs: -115, state: 'up' },
        {
          server: '127.0.0.1:21312',
          up: false,
          error: 'memcached 127.0.0.1:21312 is down (connect ECONNREFUSED 127.0.0.1:21312)',
          state: 'failed-over',
          failedOverTo: ['127.0.0.1:21311'],
        },
      ],
    },
  },
  unavailable: {
    summary: 'A Memcached server does not answer',
    value: {
      status: 'unavailable',
      store: 'memcached',
      servers: [
        {
          server: '127.0.0.1:21311',
          up: false,
          error: 'memcached 127.0.0.1:21311 is down (connect ECONNREFUSED 127.0.0.1:21311)',
          state: 'down',
        },
      ],
      ...error(
        'store_unavailable',
        '127.0.0.1:21311: memcached 127.0.0.1:21311 is down (connect ECONNREFUSED 127.0.0.1:21311)',
      ),
    },
  },
  draining: {
    summary: 'The instance is shutting down',
    value: {
      status: 'draining',
      store: 'memcached',
      ...error('draining', 'memgate is shutting down: send requests to another instance'),
    },
  },
} satisfies Record<string, Example>;

export const policiesExamples = {
  loaded: {
    summary: 'docs/api-policies.yaml',
    value: {
      source: 'docs/api-policies.yaml',
      events: [
        {
          event: 'login',
          algorithm: 'sliding',
          edge: 'whole',
          onStoreError: 'deny',
          incrementsPerCheck: 3,
          keysPerCheck: { max: 202 },
          itemsPerFeature: 87874,
          limits: [
            {
              name: 'login-1m',
              limit: 5,
              window: 60,
              granularity: 1,
              bucketSizes: [60, 1],
              keysPerCheck: { max: 60, mean: 30.5 },
              itemsPerFeature: 68,
            },
            {
              name: 'login-1d',
              limit: 100,
              window: 86400,
              granularity: 1,
              bucketSizes: [3600, 60, 1],
              keysPerCheck: { max: 142, mean: 83 },
              itemsPerFeature: 87874,
            },
          ],
        },
        {
          event: 'url_shorten',
          algorithm: 'sliding',
          edge: 'whole',
          onStoreError: 'allow',
          lease: { maxUnits: 10, life: 5 },
          reservations: { life: 5 },
          incrementsPerCheck: 2,
          keysPerCheck: { max: 60 },
          itemsPerFeature: 68,
          limits: [
            {
              name: 'url_shorten-1m',
              limit: 100,
              window: 60,
              granularity: 1,
              bucketSizes: [60, 1],
              keysPerCheck: { max: 60, mean: 30.5 },
              itemsPerFeature: 68,
            },
          ],
          tiers: {
            pro: [
              {
                name: 'url_shorten-1m',
                limit: 1000,
                window: 60,
                granularity: 1,
                bucketSizes: [60, 1],
                keysPerCheck: { max: 60, mean: 30.5 },
                itemsPerFeature: 68,
              },
            ],
          },
        },
        {
          event: 'export',
          algorithm: 'concurrency',
          onStoreError: 'allow',
          incrementsPerCheck: 1,
          keysPerCheck: { max: 2 },
          itemsPerFeature: 2,
          limits: [
            {
              name: 'export-inflight',
              limit: 2,
              window: 30,
              granularity: 30,
              inFlight: true,
              bucketSizes: [],
              keysPerCheck: { max: 2, mean: 2 },
              itemsPerFeature: 2,
            },
          ],
        },
      ],
    },
  },
} satisfies Record<string, Example>;

/** A few lines of a scrape: memgate's own families, then the process's. */
export const metricsExample = [
  '# HELP memgate_decisions_total Decisions by event, route kind (check or peek) and outcome (allowed, denied, shadow_denied: allowed, but a limit in shadow would have refused, degraded_allowed, degraded_denied)',
  '# TYPE memgate_decisions_total counter',
  'memgate_decisions_total{event="login",kind="check",outcome="allowed"} 5',
  'memgate_decisions_total{event="login",kind="check",outcome="denied"} 1',
  '',
].join('\n');

export const adminExamples = {
  reset: { summary: 'The counts of 203.0.113.7 for login are forgotten', value: { reset: true, event: 'login' } },
  reloaded: {
    summary: 'The policy file was read again',
    value: { reloaded: true, source: 'docs/api-policies.yaml', events: ['login', 'url_shorten', 'export'] },
  },
  reloadWhileDraining: {
    summary: 'The instance is shutting down',
    value: error('draining', 'memgate is shutting down: reloads are refused; reload the instances that keep serving'),
  },
  invalidPolicies: {
    summary: 'The policy file on disk is invalid: the policies in use stay',
    value: error(
      'invalid_policies',
      'invalid policies in docs/api-policies.yaml:\n  - event "login", field limits[0].window: must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds (got "1y"); the policies in use are unchanged',
    ),
  },
  unauthorized: {
    summary: 'No token, or the wrong one',
    value: error('unauthorized', 'an admin request needs Authorization: Bearer <MEMGATE_ADMIN_TOKEN>'),
  },
  tooManyFailures: {
    summary: 'This address gave a wrong token 10 times within 60 s',
    value: error('too_many_failures', 'too many failed admin authentications from this address; retry in 56 s'),
  },
  refunded: {
    summary: 'The login counted at 1795427730250 is taken back',
    value: { refunded: true, event: 'login' },
  },
  futureAt: {
    summary: 'A check that has not happened yet',
    value: error(
      'invalid_time',
      'at must be the milliseconds since the epoch the check was counted at, not in the future',
    ),
  },
  storeUnavailable: {
    summary: 'Memcached did not answer in time',
    value: error('store_unavailable', 'memcached 127.0.0.1:21311 did not answer within 250 ms'),
  },
} satisfies Record<string, Example>;

/** Usage at 2026-11-23T10:00:30Z, after 7 logins from 203.0.113.7 (5 allowed) and 2 from 198.51.100.23. */
const USAGE_POINTS = [1795427700, 1795427760, 1795427820, 1795427880, 1795427940].map((t) => ({
  t,
  allowed: 0,
  denied: 0,
  degraded: 0,
  shadow_denied: 0,
  settled: 0,
  settled_cost: 0,
}));

export const usageExamples = {
  series: {
    lastMinutes: {
      summary: 'The last 5 minutes of login, a point a minute (GET /usage?event=login&from=-5min&step=60)',
      value: {
        event: 'login',
        feature: null,
        from: 1795427731,
        until: 1795428031,
        step: 60,
        points: [
          ...USAGE_POINTS,
          { t: 1795428000, allowed: 7, denied: 2, degraded: 0, shadow_denied: 0, settled: 0, settled_cost: 0 },
        ],
      },
    },
    settled: {
      summary:
        'An event with reservations: one of 20 reserved and settled at a cost of 17 (GET /usage?event=url_shorten&from=-5min&step=60)',
      value: {
        event: 'url_shorten',
        feature: null,
        from: 1795427731,
        until: 1795428031,
        step: 60,
        points: [
          ...USAGE_POINTS,
          { t: 1795428000, allowed: 1, denied: 0, degraded: 0, shadow_denied: 0, settled: 1, settled_cost: 17 },
        ],
      },
    },
    client: {
      summary: 'One client of login (GET /usage?event=login&feature=203.0.113.7&from=-5min)',
      value: {
        event: 'login',
        feature: '203.0.113.7',
        from: 1795427731,
        until: 1795428031,
        step: 60,
        // Every count known: no minute had more clients than the heaviest kept.
        points: [
          ...USAGE_POINTS.map((point) => ({
            ...point,
            tracked: { allowed: true, denied: true },
          })),
          {
            t: 1795428000,
            allowed: 5,
            denied: 2,
            degraded: 0,
            shadow_denied: 0,
            settled: 0,
            settled_cost: 0,
            tracked: { allowed: true, denied: true },
          },
        ],
      },
    },
  },
  seriesErrors: {
    fromAfterUntil: {
      summary: 'from after until',
      value: error('invalid_range', 'from (1795428031) must be before until (1795424431)'),
    },
    unknownEvent: {
      summary: 'An event with no policy and no usage',
      value: error('unknown_event', 'no policy and no usage recorded for event "signup"'),
    },
    badTime: {
      summary: 'A time memgate cannot read',
      value: error(
        'invalid_time',
        'from must be epoch seconds, ISO 8601 (2026-11-23T10:00:00Z), or relative such as -1h, -30d or now (got "yesterday")',
      ),
    },
    tooManyPoints: {
      summary: '30 days a minute apart',
      value: error(
        'invalid_range',
        '43201 points of 60 s from 1792836031 to 1795428031: at most 10000 in one answer; ask for a larger step or a shorter range',
      ),
    },
    badStep: {
      summary: 'A step that is not positive',
      value: error('invalid_range', 'step must be a positive whole number (got "0")'),
    },
  },
  top: {
    lastHour: {
      summary: 'The heaviest clients of login in the last hour',
      value: {
        event: 'login',
        from: 1795424400,
        until: 1795428031,
        allowed: [
          { feature: '203.0.113.7', count: 5 },
          { feature: '198.51.100.23', count: 2 },
        ],
        denied: [{ feature: '203.0.113.7', count: 2 }],
      },
    },
  },
  topErrors: {
    unknownEvent: {
      summary: 'An event with no policy and no usage',
      value: error('unknown_event', 'no policy and no usage recorded for event "signup"'),
    },
    badLimit: {
      summary: 'A limit that is not positive',
      value: error('invalid_range', 'limit must be a positive whole number (got "0")'),
    },
  },
  events: {
    recorded: {
      summary: 'login has usage; the default retention',
      value: {
        events: [{ event: 'login', from: 1795428030, until: 1795428031 }],
        retention: [
          { resolution: 1, keepSeconds: 21600 },
          { resolution: 60, keepSeconds: 2592000 },
          { resolution: 3600, keepSeconds: 63072000 },
        ],
      },
    },
  },
  unavailable: {
    down: {
      summary: 'graphite-web does not answer',
      value: error(
        'usage_store_unavailable',
        'graphite-web at http://127.0.0.1:8081: connect ECONNREFUSED 127.0.0.1:8081',
      ),
    },
  },
  off: {
    off: {
      summary: 'MEMGATE_USAGE_DB=off',
      value: error(
        'usage_off',
        'usage history is off: MEMGATE_USAGE_DB=off and no MEMGATE_GRAPHITE_WEB to read it from',
      ),
    },
  },
};
