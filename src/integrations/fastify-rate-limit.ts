/**
 * memgate/fastify-rate-limit: the store @fastify/rate-limit 11 instantiates, with memgate's
 * sliding windows as its counts, shared by every instance of the application.
 *
 *     await app.register(rateLimit, { max: 5, timeWindow: 60_000,
 *       store: memgateStore({ client, event: 'api' }) });
 *     app.post('/login', { config: { rateLimit: { max: 5, memgateEvent: 'login' } } }, handler);
 *
 * Each route with its own `config.rateLimit` gets a child store (the plugin calls
 * `child()` with the route's merged options), which checks the route's `memgateEvent`
 * or else the factory's `event`. memgate decides; the plugin is told `current` over its
 * `max` exactly when memgate denied (see library-counts.ts and docs/frameworks.md).
 */
import type { FastifyRateLimitOptions, FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Decision } from '../shared/decision.js';
import { featureName } from '../shared/feature-name.js';
import { closestToExhaustion, consoleWarn, libraryCounts, mismatchWarning, onceEach } from './library-counts.js';
import { checkRefusedQuietly, openClient, type ClientSource } from './memgate-client.js';

const WHO = 'memgate/fastify-rate-limit';

declare module '@fastify/rate-limit' {
  // The plugin merges a route's config.rateLimit into the options its child store gets.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace fastifyRateLimit {
    interface CreateRateLimitOptions {
      /** The memgate event this route (or limiter) checks, instead of the store's `event`. */
      memgateEvent?: string;
    }
  }
}

export interface MemgateFastifyStoreOptions extends ClientSource {
  /** The memgate event of every route that names none in `config.rateLimit.memgateEvent`. */
  readonly event: string;
  /** Where the one-time warnings about mismatched settings go (console.warn by default). */
  readonly warn?: ((message: string) => void) | undefined;
}

type Callback = Parameters<FastifyRateLimitStore['incr']>[1];

/** The store class @fastify/rate-limit wants, plus `close()` for a client it made from `url`. */
export interface MemgateFastifyStore extends FastifyRateLimitStoreCtor {
  /** Closes the client made from `url` (call it in the app's onClose); nothing for a client passed in. */
  close(): Promise<void>;
}

export function memgateStore(options: MemgateFastifyStoreOptions): MemgateFastifyStore {
  const { event: defaultEvent, warn = consoleWarn } = options;
  checkEvent(defaultEvent, 'event');
  const { client, owned } = openClient(options, WHO);
  const warnOnce = onceEach(warn);
  const compared = new Set<string>();

  const compare = (event: string, decision: Decision, max: number, timeWindow: number) => {
    if (decision.limits.length === 0 || compared.has(event)) return;
    compared.add(event);
    warnOnce(
      mismatchWarning(event, decision, {
        library: '@fastify/rate-limit',
        limitName: 'max',
        windowName: 'timeWindow',
        limit: max,
        windowMs: timeWindow,
      }),
    );
  };

  class MemgateRateLimitStore implements FastifyRateLimitStore {
    readonly event: string;

    constructor(params: FastifyRateLimitOptions & { memgateEvent?: unknown }) {
      const { memgateEvent } = params;
      if (memgateEvent !== undefined) checkEvent(memgateEvent, 'memgateEvent');
      this.event = memgateEvent ?? defaultEvent;
    }

    static close(): Promise<void> {
      return owned ? client.close() : Promise.resolve();
    }

    /** A check: memgate counts it when allowed; `current` is over `max` exactly when it denied. */
    incr(key: string, callback: Callback, timeWindow: number, max: number): void {
      client.check(this.event, featureName(key)).then(
        (decision) => {
          compare(this.event, decision, max, timeWindow);
          const now = Date.now();
          const { hits, resetAtMs } = libraryCounts(decision, max, now);
          callback(null, { current: hits, ttl: Math.max(0, resetAtMs - now) });
        },
        (error: unknown) => {
          callback(checkRefusedQuietly(WHO, this.event, error));
        },
      );
    }

    /** createRateLimit's `{ increment: false }`: a peek, counting nothing. */
    read(key: string, callback: Callback, timeWindow: number, max: number): void {
      client.peek(this.event, featureName(key)).then(
        (decision) => {
          compare(this.event, decision, max, timeWindow);
          const closest = closestToExhaustion(decision.limits);
          const current = closest ? Math.min(max, Math.max(0, max - closest.remaining)) : 0;
          callback(null, { current, ttl: (closest?.resetSeconds ?? 0) * 1000 });
        },
        (error: unknown) => {
          callback(checkRefusedQuietly(WHO, this.event, error));
        },
      );
    }

    child(routeOptions: FastifyRateLimitOptions): FastifyRateLimitStore {
      return new MemgateRateLimitStore(routeOptions);
    }
  }
  return MemgateRateLimitStore;
}

function checkEvent(event: unknown, name: string): asserts event is string {
  if (typeof event !== 'string' || event === '') throw new TypeError(`${WHO}: ${name} must be a memgate event name`);
}

export default memgateStore;

/**
 * For @fastify/rate-limit's `keyGenerator`, whose default key is `request.ip`: an IPv6 client
 * by its /56 (or `ipv6Subnet` bits), as memgate's own entries count it.
 */
export { clientAddressFeature } from '../shared/client-address.js';
