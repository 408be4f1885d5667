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

/** A value as compare-and-swap saw it: `version` is what a swap must name to replace it. */
export interface VersionedValue {
  /** The integer held, or undefined when the key is missing or expired. */
  readonly value: number | undefined;
  /** Opaque version (Memcached's CAS unique); undefined when the key is missing. */
  readonly version: StoreVersion | undefined;
}

/** Opaque to callers. */
export type StoreVersion = bigint;

/**
 * Where counters live. The one seam between counting and storage: the limiter decides,
 * the store only adds, subtracts, reads, compare-and-swaps and compare-and-deletes integers
 * with a lifetime.
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
  /** Reads one key with its version, for a later swap. */
  readVersioned(key: string): Promise<VersionedValue>;
  /**
   * Sets `key` to `value` (a whole number 0..2^53) living `ttlSeconds`, only if it still holds
   * `expected` (a version from readVersioned), or, when `expected` is undefined, only if the key
   * is missing. Resolves true when stored, false when another writer got there first (the caller
   * reads again and retries). Rejects with StoreUnavailableError when the server does not answer
   * in time: the write may or may not have landed. Increments and decrements of the key change
   * its version too. `ttlSeconds` is a whole number from 1 (Memcached reads 0 as "never");
   * arguments out of range reject with a RangeError, before anything is sent.
   */
  swap(key: string, value: number, ttlSeconds: number, expected: StoreVersion | undefined): Promise<boolean>;
  /**
   * Deletes `key` only if it still holds `expected` (a version from readVersioned): true when
   * deleted, false when another writer changed or deleted it first (or it expired). Rejects
   * with StoreUnavailableError when the server does not answer in time: the delete may or may
   * not have landed.
   */
  remove(key: string, expected: StoreVersion): Promise<boolean>;
  /** Resolves when every server answers; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  /** Each server and whether it answers now, for /readyz. */
  health(): Promise<readonly ServerHealth[]>;
  close(): Promise<void>;
}

/** Longest TTL a swap takes: an absolute expiration (over 30 days) must fit Memcached's 32 bits. */
const MAX_SWAP_TTL_SECONDS = 2 ** 31 - 1;

/**
 * Why swap's arguments cannot be stored as asked, or undefined when they can: one rule for
 * every store. A fraction or a number past 2^53 would be written as text INCREMENT cannot
 * read, a TTL of 0 would never expire in Memcached, and a version of 0 would make
 * Memcached's SET unconditional.
 */
export function swapArgumentError(
  value: number,
  ttlSeconds: number,
  expected: StoreVersion | undefined,
): RangeError | undefined {
  if (!Number.isInteger(value) || value < 0 || value > 2 ** 53)
    return new RangeError(`swap: the value must be a whole number from 0 to 2^53, not ${value}`);
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_SWAP_TTL_SECONDS)
    return new RangeError(`swap: the TTL must be a whole number of seconds from 1 to 2^31-1, not ${ttlSeconds}`);
  if (expected !== undefined && (expected <= 0n || expected >= 2n ** 64n))
    return new RangeError(`swap: ${expected} is not a version readVersioned answers`);
  return undefined;
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
  /**
   * Where its clients are counted: `up` on it, `down` nowhere (decided by onStoreError),
   * `failed-over` on the servers in failedOverTo. The embedded store leaves it out.
   */
  readonly state?: 'up' | 'down' | 'failed-over';
  /** The servers its clients moved to, while failed over. */
  readonly failedOverTo?: readonly string[];
  /** Failed over and answering again: how long until its clients move back, if it keeps answering. */
  readonly returnsInMs?: number;
}

/**
 * A server whose clients are counted nowhere: down, and not failed over to another. Readiness
 * (/readyz, gRPC health) holds while there is none: a failed-over server's clients are limited.
 */
export function leavesClientsUncounted(server: ServerHealth): boolean {
  return !server.up && server.state !== 'failed-over';
}

/** The store did not answer in time or at all; the limiter cannot decide. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * A call failed because its server stopped answering, and the keys' clients now count on
 * another server: nothing of the call counts there. The caller may build the call again
 * (its bucket times by the new server's clock, store.clock.now) and send it.
 */
export class StoreMovedError extends StoreUnavailableError {
  constructor(message: string) {
    super(message);
    this.name = 'StoreMovedError';
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
