import { DEFAULTS } from '../config/defaults.js';
import {
  swapArgumentError,
  type CounterDecrement,
  type CounterIncrement,
  type CounterSet,
  type CounterStore,
  type IncrementAndReadResult,
  type StoreVersion,
  type VersionedValue,
} from './counter-store.js';

export interface EmbeddedStoreOptions {
  /** Milliseconds since the epoch; expiry follows it, so a driven clock frees memory too. */
  readonly now?: () => number;
  /** Most items held; past it the oldest-created are evicted, as Memcached evicts when full. */
  readonly maxItems?: number;
}

interface Item {
  value: number;
  expiresAtMs: number;
  /** Changed by every write, as Memcached's CAS unique is: what a swap must name. */
  version: number;
}

const MISSING: VersionedValue = { value: undefined, version: undefined };

/**
 * Counters in this process's memory, with Memcached's semantics: an increment creates a
 * missing key with its TTL and never extends it; a decrement never goes below zero nor
 * creates a key; expired keys read as 0; a swap stores only over the version it names.
 * Correct for one memgate instance only: instances that must share limits need the
 * Memcached store.
 */
export function createEmbeddedStore(options: EmbeddedStoreOptions = {}): CounterStore {
  const now = options.now ?? Date.now;
  const maxItems = options.maxItems ?? DEFAULTS.embeddedMaxItems;
  const items = new Map<string, Item>();
  // Keys by the second they expire in, so expired items are dropped without scanning all.
  const expiring = new Map<number, string[]>();
  let sweptThrough = Math.floor(now() / 1000);
  // One sequence for the whole store, never reused: a key deleted or expired and created
  // again has a new version, so a swap naming the old one fails (no ABA).
  let lastVersion = 0;

  function sweep(nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    if (second <= sweptThrough) return;
    const due =
      second - sweptThrough > expiring.size
        ? [...expiring.keys()].filter((s) => s <= second)
        : Array.from({ length: second - sweptThrough }, (_, i) => sweptThrough + 1 + i);
    for (const s of due) {
      for (const key of expiring.get(s) ?? []) {
        const item = items.get(key);
        if (item && item.expiresAtMs <= nowMs) items.delete(key);
      }
      expiring.delete(s);
    }
    sweptThrough = second;
  }

  function live(key: string, nowMs: number): Item | undefined {
    const item = items.get(key);
    if (item && item.expiresAtMs <= nowMs) {
      items.delete(key);
      return undefined;
    }
    return item;
  }

  function increment({ key, delta, ttlSeconds }: CounterIncrement, nowMs: number): number {
    const item = live(key, nowMs);
    if (!item) return create(key, delta, ttlSeconds, nowMs).value;
    item.version = ++lastVersion;
    return (item.value += delta);
  }

  /** A new item for a missing key, evicting the oldest when full. */
  function create(key: string, value: number, ttlSeconds: number, nowMs: number): Item {
    if (items.size >= maxItems) {
      const oldest = items.keys().next();
      if (!oldest.done) items.delete(oldest.value);
    }
    const expiresAtMs = nowMs + ttlSeconds * 1000;
    const item = { value, expiresAtMs, version: ++lastVersion };
    items.set(key, item);
    const second = Math.floor(expiresAtMs / 1000);
    const keys = expiring.get(second);
    if (keys) keys.push(key);
    else expiring.set(second, [key]);
    return item;
  }

  return {
    kind: 'embedded',
    shared: false,
    description: 'embedded (in this process; limits are not shared between instances)',

    incrementAndRead(
      increments: readonly CounterIncrement[],
      reads: readonly string[],
    ): Promise<IncrementAndReadResult> {
      const nowMs = now();
      sweep(nowMs);
      const incremented = increments.map((op) => increment(op, nowMs));
      const read = reads.map((key) => live(key, nowMs)?.value ?? 0);
      return Promise.resolve({ incremented, read });
    },

    decrement(decrements: readonly CounterDecrement[]): Promise<void> {
      const nowMs = now();
      for (const { key, delta } of decrements) {
        const item = live(key, nowMs);
        if (item) {
          item.value = Math.max(0, item.value - delta);
          item.version = ++lastVersion;
        }
      }
      return Promise.resolve();
    },

    reset(marker: CounterSet, deletes: readonly string[]): Promise<void> {
      const nowMs = now();
      items.delete(marker.key);
      increment({ key: marker.key, delta: marker.value, ttlSeconds: marker.ttlSeconds }, nowMs);
      for (const key of deletes) items.delete(key);
      return Promise.resolve();
    },

    readVersioned(key: string): Promise<VersionedValue> {
      const nowMs = now();
      sweep(nowMs);
      const item = live(key, nowMs);
      return Promise.resolve(item ? { value: item.value, version: BigInt(item.version) } : MISSING);
    },

    swap(key: string, value: number, ttlSeconds: number, expected: StoreVersion | undefined): Promise<boolean> {
      const invalid = swapArgumentError(value, ttlSeconds, expected);
      if (invalid) return Promise.reject(invalid);
      const nowMs = now();
      sweep(nowMs);
      const item = live(key, nowMs);
      // Memcached's ADD (expected undefined) or SET with a CAS: the key is as the caller
      // saw it, or nothing is written.
      const current = item === undefined ? undefined : BigInt(item.version);
      if (current !== expected) return Promise.resolve(false);
      // A SET makes a new item, with a new TTL, and the newest for eviction.
      items.delete(key);
      create(key, value, ttlSeconds, nowMs);
      return Promise.resolve(true);
    },

    remove(key: string, expected: StoreVersion): Promise<boolean> {
      const nowMs = now();
      sweep(nowMs);
      const item = live(key, nowMs);
      if (item === undefined || BigInt(item.version) !== expected) return Promise.resolve(false);
      items.delete(key);
      return Promise.resolve(true);
    },

    ping: () => Promise.resolve(),
    health: () => Promise.resolve([{ server: 'embedded', up: true }]),

    close(): Promise<void> {
      items.clear();
      expiring.clear();
      return Promise.resolve();
    },
  };
}
