/**
 * The `k` clients with the largest counts, chosen one at a time: what SQLite's
 * `ORDER BY count DESC, feature LIMIT k` keeps, without holding or sorting every client.
 * A binary min-heap whose root is the worst one kept, so each offer is O(log k).
 */
import type { ClientCount } from './usage-store.js';

export class Heaviest {
  readonly #k: number;
  readonly #heap: ClientCount[] = [];

  constructor(k: number) {
    this.#k = k;
  }

  /** Keeps the client if it is among the `k` heaviest offered so far. */
  offer(feature: string, count: number): void {
    const heap = this.#heap;
    if (heap.length < this.#k) {
      heap.push({ feature, count });
      this.#up(heap.length - 1);
    } else if (this.#k > 0 && ranksAfter(heap[0] as ClientCount, feature, count)) {
      // An object only for a client kept: most offered to a full heap are not.
      heap[0] = { feature, count };
      this.#down(0);
    }
  }

  /** The clients kept, heaviest first (ties by name, as SQLite orders them). */
  list(): ClientCount[] {
    return [...this.#heap].sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
  }

  #up(place: number): void {
    const heap = this.#heap;
    const moving = heap[place] as ClientCount;
    while (place > 0) {
      const parent = (place - 1) >> 1;
      if (!worse(moving, heap[parent] as ClientCount)) break;
      heap[place] = heap[parent] as ClientCount;
      place = parent;
    }
    heap[place] = moving;
  }

  #down(place: number): void {
    const heap = this.#heap;
    const moving = heap[place] as ClientCount;
    for (;;) {
      const left = 2 * place + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && worse(heap[right] as ClientCount, heap[left] as ClientCount) ? right : left;
      if (!worse(heap[child] as ClientCount, moving)) break;
      heap[place] = heap[child] as ClientCount;
      place = child;
    }
    heap[place] = moving;
  }
}

/** Whether `a` ranks after `b`: a smaller count, or the same count and a later name. */
function worse(a: ClientCount, b: ClientCount): boolean {
  return ranksAfter(a, b.feature, b.count);
}

/** Whether `a` ranks after the client `feature` with `count`. */
function ranksAfter(a: ClientCount, feature: string, count: number): boolean {
  return a.count < count || (a.count === count && compareUtf8(a.feature, feature) > 0);
}

/**
 * Two strings in the order of their UTF-8 bytes, SQLite's BINARY collation: JavaScript's
 * `<` compares UTF-16 units, which puts U+10000 and above (surrogates, 0xD800-0xDFFF)
 * before U+E000-U+FFFF, where UTF-8 puts them after.
 */
export function compareUtf8(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return utf8Weight(x) - utf8Weight(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit moved so that surrogates sort after U+E000-U+FFFF. */
function utf8Weight(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}
