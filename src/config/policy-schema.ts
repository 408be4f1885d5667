/** Names of events and limits: they appear in Memcached keys and in RateLimit headers. */
export const NAME_PATTERN = '^[A-Za-z0-9_.-]{1,64}$';

/** Largest limit a policy may set; sums of counters stay exact far beyond it. */
export const MAX_LIMIT = 1_000_000_000_000;

/** Most limits one event may carry: each adds reads to every check of the event. */
export const MAX_LIMITS_PER_EVENT = 16;

/** Most per-client rules (overrides, allow and deny entries) one event or the gateway may hold. */
export const MAX_CLIENT_RULES = 10_000;

/**
 * Most per-client rules a whole file may hold, its events' and the gateway's together: the
 * most a reload parses and plans in bounded time and memory (docs/operations.md).
 */
export const MAX_CLIENT_RULES_PER_FILE = 20_000;

/** Most tiers one event may name. */
export const MAX_TIERS_PER_EVENT = 32;

const duration = {
  description: 'Ns, Nm, Nh, Nd or a number of seconds',
  type: ['string', 'integer'],
} as const;

const limits = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_LIMITS_PER_EVENT,
  items: {
    type: 'object',
    additionalProperties: false,
    // Required keys depend on the event's algorithm: limit and window, rate, or limit alone (policies.ts).
    properties: {
      name: { type: 'string', pattern: NAME_PATTERN },
      limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
      window: { ...duration, description: 'Ns, Nm, Nh, Nd, a number of seconds, or for a fixed window 1w or 1mo' },
      granularity: duration,
      anchor: {
        type: ['integer', 'string'],
        description: 'where a calendar window starts: a 1mo window\'s day of the month (1-28), a 1w window\'s weekday',
      },
      timezone: { type: 'string', maxLength: 64, description: 'the IANA time zone of a calendar window (default UTC)' },
      rate: { type: 'string', description: 'a token bucket\'s tokens per period: 10/s, 600/1m' },
      burst: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, description: 'a token bucket\'s most tokens at once' },
      timeout: {
        ...duration,
        description: 'a concurrency limit\'s: how long a request may hold its slot before it frees itself (default 60s)',
      },
      mode: { enum: ['enforce', 'shadow'] },
    },
  },
} as const;

/** `{ feature: NAME }`, `{ prefix: TEXT }` or `{ cidr: NETWORK }`: its words are checked by config/feature-match.ts. */
const clientMatch = { type: 'object', description: '{ feature: NAME }, { prefix: TEXT } or { cidr: NETWORK }' } as const;

/** Clients an allow or deny list names. */
const clientList = { type: 'array', maxItems: MAX_CLIENT_RULES, items: clientMatch } as const;

/**
 * JSON schema of a policy file. It checks shape only (keys, types, ranges);
 * durations and their relations are checked in policies.ts.
 */
export const policyFileSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'memgate policy file',
  type: 'object',
  additionalProperties: false,
  required: ['events'],
  properties: {
    gateway: {
      type: 'object',
      additionalProperties: false,
      properties: {
        feature: { type: 'string', description: 'client-ip, or header:<name>' },
        ipv6Subnet: {
          description: 'the prefix an IPv6 client-ip is counted by, in bits (default 56); false counts each address alone',
          // true is refused by parseGateway, in words: one schema error rather than three of anyOf's.
          type: ['integer', 'boolean'],
          minimum: 1,
          maximum: 128,
        },
        trustedProxies: {
          description: 'a hop count, or the addresses and CIDR ranges of the proxies (loopback, linklocal, uniquelocal)',
          type: ['integer', 'array'],
          minimum: 0,
          maximum: 16,
          maxItems: 64,
          items: { type: 'string', maxLength: 64 },
        },
        uri: { type: 'string', description: 'path, or header:<name>' },
        event: { type: 'string', description: 'routes, or header:<name>' },
        pathCase: { enum: ['insensitive', 'sensitive'] },
        unmatched: { type: 'string', description: 'allow, deny, or an event' },
        denyStatus: { enum: [429, 403] },
        invalidStatus: { enum: [400, 401] },
        tier: { type: 'string', description: 'header:<name>: the header the gateway sets with the client\'s tier' },
        allow: clientList,
        deny: clientList,
        routes: {
          type: 'array',
          maxItems: 1000,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['prefix', 'event'],
            properties: { prefix: { type: 'string', pattern: '^/[^\\s?#]*$', maxLength: 1024 }, event: { type: 'string' } },
          },
        },
      },
    },
    events: {
      type: 'object',
      minProperties: 1,
      propertyNames: { pattern: NAME_PATTERN },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['limits'],
        properties: {
          algorithm: { enum: ['sliding', 'fixed', 'token-bucket', 'concurrency'] },
          edge: { enum: ['whole', 'drop', 'weighted'] },
          onStoreError: { enum: ['allow', 'deny'] },
          mode: { enum: ['enforce', 'shadow'] },
          lease: {
            type: 'object',
            additionalProperties: false,
            description: 'lets clients take quota leases for this event',
            properties: {
              maxUnits: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
              life: duration,
            },
          },
          reservations: {
            type: 'object',
            additionalProperties: false,
            description: 'lets checks reserve a cost (reserve: N) and settle it later with the actual cost',
            properties: { life: duration },
          },
          limits,
          tiers: {
            type: 'object',
            description: 'named limit sets (free, pro, ...) a client is put in by an override or by its caller',
            maxProperties: MAX_TIERS_PER_EVENT,
            propertyNames: { pattern: NAME_PATTERN },
            additionalProperties: {
              type: 'object',
              additionalProperties: false,
              required: ['limits'],
              properties: { limits },
            },
          },
          overrides: {
            type: 'array',
            description: 'limits of their own for the clients each matches; the most specific match wins',
            maxItems: MAX_CLIENT_RULES,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['match'],
              properties: {
                match: clientMatch,
                limits,
                tier: { type: 'string', pattern: NAME_PATTERN },
                until: { type: 'string', description: 'an ISO 8601 time with its zone, after which the override lapses' },
              },
            },
          },
          allow: clientList,
          deny: clientList,
        },
      },
    },
  },
} as const;
