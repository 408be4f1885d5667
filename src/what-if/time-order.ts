// A log's requests put back in time order while it streams. Servers write a request's line
// when it ends (Apache with the time it began, nginx with the time it ended, several workers
// at once), so lines come slightly out of order; each is held until the log has moved
// `holdMs` past it, and released oldest first, equal times in the order of the log. What is
// held is bounded by `holdBytes` too: past it the oldest are released early. A line older than
// one already released cannot be put in its place, and is refused.
import TinyQueue from 'tinyqueue';

export interface TimeOrderOptions<T> {
  /** How far behind the newest line read a line may be and still be replayed in its place. */
  readonly holdMs: number;
  /** The most the held lines may weigh (what add() was told), whatever their times. */
  readonly holdBytes: number;
  /** Called with each line as it leaves, in time order. */
  readonly release: (item: T) => void;
}

interface Held<T> {
  readonly item: T;
  readonly bytes: number;
}

export class TimeOrder<T extends { readonly ms: number; readonly line: number }> {
  readonly #held = new TinyQueue<Held<T>>([], (a, b) => a.item.ms - b.item.ms || a.item.line - b.item.line);
  #heldBytes = 0;
  #newestMs = -Infinity;
  #releasedMs = -Infinity;

  constructor(private readonly options: TimeOrderOptions<T>) {}

  /** Holds `item`, weighing `bytes`, and releases what is now far enough behind; false when it comes too late. */
  add(item: T, bytes: number): boolean {
    if (item.ms < this.#releasedMs) return false;
    this.#held.push({ item, bytes });
    this.#heldBytes += bytes;
    this.#newestMs = Math.max(this.#newestMs, item.ms);
    for (let oldest = this.#held.peek(); oldest; oldest = this.#held.peek()) {
      if (oldest.item.ms > this.#newestMs - this.options.holdMs && this.#heldBytes <= this.options.holdBytes) break;
      this.#releaseOldest();
    }
    return true;
  }

  /** The log has ended: releases everything held. */
  flush(): void {
    while (this.#held.length > 0) this.#releaseOldest();
  }

  #releaseOldest(): void {
    const oldest = this.#held.pop();
    if (!oldest) return;
    this.#heldBytes -= oldest.bytes;
    this.#releasedMs = oldest.item.ms;
    this.options.release(oldest.item);
  }
}
