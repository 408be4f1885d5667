/**
 * JSON schemas of every route. Request schemas check shape and types; what the values
 * mean (known event, feature length, cost within the limits) is the limiter's to judge,
 * so the library and HTTP refuse the same requests with the same error codes.
 */

const event = { type: 'string', description: 'An event of the policy file, e.g. login' } as const;
const feature = { type: 'string', description: 'Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes' } as const;

export const checkQuerystring = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'feature'],
  properties: {
    event,
    feature,
    cost: { type: 'string', pattern: '^[0-9]{1,16}$', description: 'A positive integer, 1 by default' },
  },
} as const;

export const checkBody = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'feature'],
  properties: { event, feature, cost: { type: 'integer', description: 'A positive integer, 1 by default' } },
} as const;

export interface CheckQuerystring {
  event: string;
  feature: string;
  cost?: string;
}

export interface CheckBody {
  event: string;
  feature: string;
  cost?: number;
}

export const errorResponse = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
  },
} as const;

export const decisionResponse = {
  type: 'object',
  required: ['allowed', 'limits'],
  properties: {
    allowed: { type: 'boolean' },
    limits: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'limit', 'window', 'remaining', 'resetSeconds'],
        properties: {
          name: { type: 'string' },
          limit: { type: 'integer' },
          window: { type: 'integer', description: 'seconds' },
          remaining: { type: 'integer' },
          resetSeconds: { type: 'integer' },
        },
      },
    },
    retryAfter: { type: 'integer', description: 'seconds; only on a deny' },
    degraded: { type: 'boolean', description: "true when the store could not answer and the event's onStoreError rule decided" },
  },
} as const;

/** Every answer a route can give besides its success: 4xx for the client's faults, 503 for the store's. */
export const errorResponses = {
  '4xx': errorResponse,
  503: errorResponse,
} as const;

export const statusResponse = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string' }, store: { type: 'string' } },
} as const;

/** /readyz: every counter server with whether it answers; `error` when some do not, or while draining (no servers then). */
export const readinessResponse = {
  type: 'object',
  required: ['status', 'store'],
  properties: {
    status: { type: 'string', description: 'ready, unavailable, or draining (shutting down)' },
    store: { type: 'string' },
    clockOffsetMs: {
      type: 'integer',
      description: "the store's clock, which memgate counts by, minus this host's, in milliseconds (the servers' median; 0 for the embedded store)",
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
          evictions: { type: 'integer', description: 'items evicted since the server started: raise its memory if this grows' },
          clockOffsetMs: { type: 'integer', description: "this server's clock minus this host's, in milliseconds, as last measured" },
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

export const policiesResponse = {
  type: 'object',
  properties: {
    source: { type: 'string' },
    events: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          event: { type: 'string' },
          algorithm: { type: 'string' },
          edge: { type: 'string' },
          onStoreError: { type: 'string' },
          incrementsPerCheck: { type: 'integer' },
          keysPerCheck,
          itemsPerFeature: { type: 'integer' },
          limits: {
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
          },
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
  properties: { reloaded: { type: 'boolean' }, source: { type: 'string' }, events: { type: 'array', items: { type: 'string' } } },
} as const;
