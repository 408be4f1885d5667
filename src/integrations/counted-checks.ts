/**
 * What a store remembers of its recent checks so that a library's `decrement(key)` can
 * take back the right one: memgate refunds a check by the time it was counted, and a
 * denied check counted nothing, so there is nothing to give back for it.
 *
 * Per key, the most recent checks, newest last; `decrement` takes the newest (a request's
 * decrement follows its own check, usually with no other check of that key between).
 * Bounded twice: a few entries per key, and a number of keys, the least recently checked
 * forgotten first.
 */
import { LRUCache } from 'lru-cache';

export interface CheckRecord {
  /** Epoch ms the check was sent: the time memgate counted it at, on this process's clock. */
  readonly at: number;
  readonly cost: number;
  /** Allowed, so counted: only then is there something to refund. */
  readonly counted: boolean;
}

export interface CountedChecksOptions {
  /** Keys remembered at once. */
  readonly maxKeys: number;
  /** Checks remembered per key. */
  readonly perKey: number;
}

export const COUNTED_CHECKS_DEFAULTS: CountedChecksOptions = { maxKeys: 10_000, perKey: 16 };

export class CountedChecks {
  readonly #byKey: LRUCache<string, CheckRecord[]>;
  readonly #perKey: number;

  constructor({ maxKeys, perKey }: CountedChecksOptions = COUNTED_CHECKS_DEFAULTS) {
    this.#byKey = new LRUCache({ max: maxKeys });
    this.#perKey = perKey;
  }

  record(key: string, check: CheckRecord): void {
    const checks = this.#byKey.get(key);
    if (!checks) {
      this.#byKey.set(key, [check]);
      return;
    }
    checks.push(check);
    if (checks.length > this.#perKey) checks.shift();
  }

  /** The newest check of `key` not yet taken, and forgets it; undefined when none is remembered. */
  takeNewest(key: string): CheckRecord | undefined {
    const checks = this.#byKey.get(key, { updateAgeOnGet: false });
    const newest = checks?.pop();
    if (checks?.length === 0) this.#byKey.delete(key);
    return newest;
  }

  forget(key: string): void {
    this.#byKey.delete(key);
  }

  get keys(): number {
    return this.#byKey.size;
  }
}
