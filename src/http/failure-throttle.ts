import { createLimiter } from '../counting/limiter.js';
import { createEmbeddedStore } from '../store/embedded-store.js';

/**
 * Counts failures (such as wrong admin tokens) per client address with memgate's own
 * limiter, on an embedded store of its own: per instance, and working while Memcached
 * does not, so that admins can still act during a store outage.
 */
export interface FailureThrottle {
  readonly limit: number;
  readonly windowSeconds: number;
  /** Seconds until the address may try again, or undefined if it may try now. */
  retryAfter(address: string): Promise<number | undefined>;
  /** Counts one failure of the address, unless it is already at the limit. */
  fail(address: string): Promise<Failure>;
  close(): Promise<void>;
}

export type Failure =
  /** Counted: the address has made `failures` in the window; at `limit` it must wait. */
  | { readonly counted: true; readonly failures: number }
  /** Not counted: the address was at the limit already (a concurrent failure got there first). */
  | { readonly counted: false; readonly retryAfter: number };

export interface FailureThrottleOptions {
  /** Failures an address may make per window. */
  readonly limit: number;
  readonly windowSeconds: number;
  /** Milliseconds since the epoch; tests drive the clock through it. */
  readonly now?: () => number;
}

const EVENT = 'failure';

export function createFailureThrottle({ limit, windowSeconds, now }: FailureThrottleOptions): FailureThrottle {
  const clock = now ? { now } : {};
  const store = createEmbeddedStore(clock);
  const limiter = createLimiter({
    policies: { events: { [EVENT]: { limits: [{ limit, window: windowSeconds }] } } },
    store,
    ...clock,
    // The store is in this process: a cache of its counts would only add memory.
    cacheBytes: 0,
  });
  return {
    limit,
    windowSeconds,
    async retryAfter(address) {
      const decision = await limiter.peek({ event: EVENT, feature: address });
      return decision.allowed ? undefined : decision.retryAfter;
    },
    async fail(address) {
      const decision = await limiter.check({ event: EVENT, feature: address });
      if (!decision.allowed) return { counted: false, retryAfter: decision.retryAfter ?? windowSeconds };
      return { counted: true, failures: limit - (decision.limits[0]?.remaining ?? 0) };
    },
    close: () => store.close(),
  };
}
