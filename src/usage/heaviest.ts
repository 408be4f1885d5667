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
    const client = { feature, count };
    if (this.#heap.length < this.#k) {
      this.#heap.push(client);
      this.#up(this.#heap.length - 1);
    } else if (this.#k > 0 && worse(this.#heap[0] as ClientCount, client)) {
      this.#heap[0] = client;
      this.#down(0);
    }
  }

  /** The clients kept, heaviest first (ties by name, as SQLite orders them). */
  list(): ClientCount[] {
    return [...this.#heap].sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
  }

  #up(place: number): void {
    const heap = this.#heap;
    while (place > 0) {
      const parent = (place - 1) >> 1;
      if (!worse(heap[place] as ClientCount, heap[parent] as ClientCount)) return;
      [heap[place], heap[parent]] = [heap[parent] as ClientCount, heap[place] as ClientCount];
      place = parent;
    }
  }

  #down(place: number): void {
    const heap = this.#heap;
    for (;;) {
      let worst = place;
      for (const child of [2 * place + 1, 2 * place + 2]) {
        if (child < heap.length && worse(heap[child] as ClientCount, heap[worst] as ClientCount)) worst = child;
      }
      if (worst === place) return;
      [heap[place], heap[worst]] = [heap[worst] as ClientCount, heap[place] as ClientCount];
      place = worst;
    }
  }
}

/** Whether `a` ranks after `b`: a smaller count, or the same count and a later name. */
function worse(a: ClientCount, b: ClientCount): boolean {
  return a.count < b.count || (a.count === b.count && compareUtf8(a.feature, b.feature) > 0);
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
