/**
 * Space-Saving (Metwally, Agrawal, El Abbadi, 2005): the heaviest items of a stream in a
 * fixed number of counters. An item seen takes a free counter, or the smallest one, whose
 * count it inherits as its possible error. So every count is at least the item's true
 * count and at most `error` more, every item seen more than total/capacity times is
 * followed, and while no more items than counters were seen all counts are exact.
 *
 * The counters sit in a binary min-heap with each item's place in a map: a count goes up
 * by sifting its counter down, O(log capacity), and the smallest is always at the root.
 */
export interface HeavyHitter {
  readonly item: string;
  /** At least the item's true count, at most `error` more. */
  readonly count: number;
  /** How much of `count` may have been inherited from items it replaced. */
  readonly error: number;
}

interface Counter {
  item: string;
  count: number;
  error: number;
}

export class SpaceSaving {
  readonly #capacity: number;
  readonly #heap: Counter[] = [];
  readonly #places = new Map<string, number>();

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be a positive whole number (got ${capacity})`);
    this.#capacity = capacity;
  }

  /** Counts `weight` (a positive number) more of `item`. */
  add(item: string, weight = 1): void {
    const place = this.#places.get(item);
    if (place !== undefined) {
      this.#counter(place).count += weight;
      this.#siftDown(place);
      return;
    }
    if (this.#heap.length < this.#capacity) {
      this.#heap.push({ item, count: weight, error: 0 });
      this.#places.set(item, this.#heap.length - 1);
      this.#siftUp(this.#heap.length - 1);
      return;
    }
    // Replace the smallest counter: the newcomer may have been counted there already.
    const smallest = this.#counter(0);
    this.#places.delete(smallest.item);
    smallest.error = smallest.count;
    smallest.count += weight;
    smallest.item = item;
    this.#places.set(item, 0);
    this.#siftDown(0);
  }

  /** The `limit` items with the highest counts, highest first. */
  top(limit: number): HeavyHitter[] {
    return this.#heap
      .map(({ item, count, error }) => ({ item, count, error }))
      .sort((a, b) => b.count - a.count || (a.item < b.item ? -1 : 1))
      .slice(0, limit);
  }

  /** Items followed now. */
  get size(): number {
    return this.#heap.length;
  }

  #siftUp(start: number): void {
    let place = start;
    while (place > 0) {
      const parent = (place - 1) >> 1;
      if (this.#countAt(parent) <= this.#countAt(place)) break;
      this.#swap(place, parent);
      place = parent;
    }
  }

  #siftDown(start: number): void {
    let place = start;
    for (;;) {
      const left = 2 * place + 1;
      let smallest = place;
      if (this.#countAt(left) < this.#countAt(smallest)) smallest = left;
      if (this.#countAt(left + 1) < this.#countAt(smallest)) smallest = left + 1;
      if (smallest === place) return;
      this.#swap(place, smallest);
      place = smallest;
    }
  }

  /** The count at a place of the heap; past its end, more than any count, so sifting stops there. */
  #countAt(place: number): number {
    return this.#heap[place]?.count ?? Infinity;
  }

  #counter(place: number): Counter {
    const counter = this.#heap[place];
    if (!counter) throw new Error(`SpaceSaving: no counter at ${place}`);
    return counter;
  }

  #swap(a: number, b: number): void {
    const first = this.#counter(a);
    const second = this.#counter(b);
    this.#heap[a] = second;
    this.#heap[b] = first;
    this.#places.set(second.item, a);
    this.#places.set(first.item, b);
  }
}
