// The least-recently-used map the library keeps its caches in (the feature cache's clients,
// runtime plans), in place of lru-cache: 3.6 MB installed for the few lines the library needs,
// and the library ships as a small package. Its semantics are lru-cache's for what the library
// calls (lru.test.ts runs random sequences against lru-cache), with one difference: setting
// the value a key already holds takes the new size (lru-cache keeps the old one).
//
// A Map from key to entry, the entries on a list from least to most recently used: a use is
// one lookup and a few links. (Moving a used key to the end of the Map itself, by delete and
// set, measured 6 to 14 times slower than lru-cache on Node 20, a hot key and Zipf keys: V8's
// delete and set of a Map entry cost far more than its lookup.)

/** The bounds of an LruMap: at least one. */
export interface LruOptions<K = unknown, V = unknown> {
  /** The most entries held (a positive integer); none when absent. */
  readonly max?: number;
  /** The most the entries' sizes may add up to (a positive integer); none when absent. */
  readonly maxSize?: number;
  /**
   * Told of every value the map lets go, as lru-cache's `dispose` is: `evict` to keep within the
   * bounds, `set` replaced by another value under its key (or refused as too large), `delete`
   * deleted or cleared. It runs as the value leaves, and may not use the map.
   */
  readonly dispose?: ((value: V, key: K, reason: LruRemoval) => void) | undefined;
}

/** Why an LruMap let a value go (see LruOptions.dispose). */
export type LruRemoval = 'evict' | 'set' | 'delete';

interface Entry<K, V> {
  readonly key: K;
  value: V;
  /** 0 without maxSize. */
  size: number;
  /** The entry used just before this one; undefined for the least recently used. */
  older: Entry<K, V> | undefined;
  newer: Entry<K, V> | undefined;
}

export class LruMap<K, V extends object> {
  readonly #max: number;
  readonly #maxSize: number;
  readonly #entries = new Map<K, Entry<K, V>>();
  #oldest: Entry<K, V> | undefined;
  #newest: Entry<K, V> | undefined;
  #calculatedSize = 0;
  readonly #dispose: ((value: V, key: K, reason: LruRemoval) => void) | undefined;

  constructor({ max, maxSize, dispose }: LruOptions<K, V>) {
    if (max === undefined && maxSize === undefined) throw new TypeError('an LruMap needs max or maxSize');
    if (max !== undefined && !isSize(max)) throw new TypeError(`max must be a positive integer (got ${max})`);
    if (maxSize !== undefined && !isSize(maxSize))
      throw new TypeError(`maxSize must be a positive integer (got ${maxSize})`);
    this.#max = max ?? Infinity;
    this.#maxSize = maxSize ?? 0;
    this.#dispose = dispose;
  }

  /** Entries held. */
  get size(): number {
    return this.#entries.size;
  }

  /** The sum of the entries' sizes (0 without maxSize). */
  get calculatedSize(): number {
    return this.#calculatedSize;
  }

  /** The value of `key`, which becomes the most recently used. */
  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry !== this.#newest) {
      this.#unlink(entry);
      this.#append(entry);
    }
    return entry.value;
  }

  /** The value of `key`, without using it. */
  peek(key: K): V | undefined {
    return this.#entries.get(key)?.value;
  }

  /**
   * Holds `value` as the most recently used, in place of what `key` held, and drops the least
   * recently used entries past the bounds. `size`: a positive integer, required with maxSize and
   * refused without; a value larger than maxSize is not held, and `key` is then held no more.
   */
  set(key: K, value: V, size?: number): this {
    const maxSize = this.#maxSize;
    if (maxSize === 0) {
      if (size !== undefined) throw new TypeError('a size needs maxSize');
      size = 0;
    } else {
      if (size === undefined || !isSize(size)) throw new TypeError(`a size must be a positive integer (got ${size})`);
      if (size > maxSize) {
        const held = this.#entries.get(key);
        if (held) this.#remove(held, 'set');
        return this;
      }
    }
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      if (this.#entries.size >= this.#max) this.#remove(this.#oldest as Entry<K, V>, 'evict');
      entry = { key, value, size: 0, older: undefined, newer: undefined };
      this.#entries.set(key, entry);
      this.#append(entry);
    } else {
      this.#calculatedSize -= entry.size;
      const old = entry.value;
      entry.value = value;
      entry.size = 0;
      if (entry !== this.#newest) {
        this.#unlink(entry);
        this.#append(entry);
      }
      if (old !== value) this.#dispose?.(old, key, 'set');
    }
    // The entry set is the newest: the oldest go first, and it is reached only when alone.
    if (maxSize !== 0) while (this.#calculatedSize + size > maxSize) this.#remove(this.#oldest as Entry<K, V>, 'evict');
    entry.size = size;
    this.#calculatedSize += size;
    return this;
  }

  /** Whether `key` was held. */
  delete(key: K): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    this.#remove(entry, 'delete');
    return true;
  }

  clear(): void {
    const dispose = this.#dispose;
    if (dispose) for (let entry = this.#oldest; entry; entry = entry.newer) dispose(entry.value, entry.key, 'delete');
    this.#entries.clear();
    this.#oldest = this.#newest = undefined;
    this.#calculatedSize = 0;
  }

  /** Least recently used first (lru-cache's `values()` goes the other way), without using them. */
  *values(): Generator<V, void, undefined> {
    for (let entry = this.#oldest; entry; entry = entry.newer) yield entry.value;
  }

  /** Least recently used first, without using them. */
  *entries(): Generator<[K, V], void, undefined> {
    for (let entry = this.#oldest; entry; entry = entry.newer) yield [entry.key, entry.value];
  }

  #remove(entry: Entry<K, V>, reason: LruRemoval): void {
    this.#entries.delete(entry.key);
    this.#unlink(entry);
    this.#calculatedSize -= entry.size;
    this.#dispose?.(entry.value, entry.key, reason);
  }

  #unlink(entry: Entry<K, V>): void {
    const { older, newer } = entry;
    if (older) older.newer = newer;
    else this.#oldest = newer;
    if (newer) newer.older = older;
    else this.#newest = older;
    entry.older = entry.newer = undefined;
  }

  #append(entry: Entry<K, V>): void {
    const newest = this.#newest;
    entry.older = newest;
    if (newest) newest.newer = entry;
    else this.#oldest = entry;
    this.#newest = entry;
  }
}

function isSize(n: number): boolean {
  return Number.isSafeInteger(n) && n > 0;
}
