/** Add `delta` to `key`, creating it with `delta` and a `ttlSeconds` lifetime when missing. */
export interface CounterIncrement {
  readonly key: string;
  readonly delta: number;
  readonly ttlSeconds: number;
}

/** Set `key` to `value`, living `ttlSeconds`. */
export interface CounterSet {
  readonly key: string;
  readonly value: number;
  readonly ttlSeconds: number;
}

/** Subtract `delta` from `key` if it still exists (never below zero, never creating it). */
export interface CounterDecrement {
  readonly key: string;
  readonly delta: number;
}

export interface IncrementOptions {
  /**
   * Whether the caller admits its request when this call fails or is too late (an event
   * whose `onStoreError` is `allow`). When false, increments the store still applies after
   * the failure, a frozen server waking up, are taken back: a request that was not
   * admitted must not count. Default true: they stay counted.
   */
  readonly admittedIfUnanswered?: boolean;
}

export interface IncrementAndReadResult {
  /** Each increment's new value, in order. */
  readonly incremented: readonly number[];
  /** Each read key's value, in order; 0 when missing or expired. */
  readonly read: readonly number[];
}

/**
 * Where counters live. The one seam between counting and storage: the limiter decides,
 * the store only adds, subtracts and reads integers with a lifetime.
 *
 * Keys carry a hash tag (see counting/keys.ts); keys with the same tag must be served by
 * one server, so that one call on them is one round trip.
 */
export interface CounterStore {
  /** `memcached` or `embedded`, for logs and /readyz. */
  readonly kind: string;
  /** Whether other memgate instances count in the same counters (so their clocks matter). */
  readonly shared: boolean;
  /** Human-readable location, for the start-up log. */
  readonly description: string;
  /**
   * The clock every instance sharing the store agrees on, when the store has one: bucket
   * time must not depend on each instance's own clock. Absent for the embedded store,
   * whose single instance uses its own clock.
   */
  readonly clock?: StoreClock;
  /**
   * Applies the increments, then reads the keys: a read sees every increment this call
   * made and every one that reached the store before it.
   */
  incrementAndRead(
    increments: readonly CounterIncrement[],
    reads: readonly string[],
    options?: IncrementOptions,
  ): Promise<IncrementAndReadResult>;
  /** Takes back increments; sent even to a server that does not answer now, to be applied when it does. */
  decrement(decrements: readonly CounterDecrement[]): Promise<void>;
  /**
   * Sets `marker.key` to `marker.value` for `marker.ttlSeconds`, then deletes `deletes`:
   * what forgetting a feature's counts takes (see Limiter.reset). Rare; not batched.
   */
  reset(marker: CounterSet, deletes: readonly string[]): Promise<void>;
  /** Resolves when every server answers; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  /** Each server and whether it answers now, for /readyz. */
  health(): Promise<readonly ServerHealth[]>;
  close(): Promise<void>;
}

export interface StoreClock {
  /** Unix time in milliseconds by the clock of the server that holds `key`; never decreases. */
  now(key: string): number;
  /** Resolves once every server's clock has been read once, or could not be. */
  ready(): Promise<void>;
}

export interface ServerHealth {
  /** `host:port`, or `embedded`. */
  readonly server: string;
  readonly up: boolean;
  /** Why it is down. */
  readonly error?: string;
  /** Items the server evicted to make room since it started: counts silently lowered. */
  readonly evictions?: number;
  /** The server's clock minus this host's, in milliseconds, once measured. */
  readonly clockOffsetMs?: number;
}

/** The store did not answer in time or at all; the limiter cannot decide. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * The store already has as much work in flight as it may: this call was refused at once
 * instead of queueing without limit. The request should be shed (HTTP 503, retry soon).
 */
export class StoreOverloadedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreOverloadedError';
  }
}
