/**
 * Coalesces concurrent calls into batches: every item queued within the current tick (or
 * within `windowMs` of the first) goes out together, at most `maxSize` to a batch. One
 * batch is one request to memgate; a full batch leaves at once.
 */

export interface BatcherOptions<Item, Result> {
  /** 0: items queued in the current tick (flushed in a microtask); else milliseconds after the first. */
  readonly windowMs: number;
  readonly maxSize: number;
  /** Sends one batch; resolves to one result per item, in order, or rejects for them all. */
  readonly send: (items: readonly Item[]) => Promise<readonly Result[]>;
}

export interface Batcher<Item, Result> {
  add(item: Item): Promise<Result>;
  /** Batches sent and not yet answered. */
  readonly inFlight: number;
}

interface Queued<Item, Result> {
  readonly item: Item;
  readonly resolve: (result: Result) => void;
  readonly reject: (error: unknown) => void;
}

export function createBatcher<Item, Result>(options: BatcherOptions<Item, Result>): Batcher<Item, Result> {
  let queue: Queued<Item, Result>[] = [];
  // A scheduled flush is for the queue it was scheduled for: a full batch sent meanwhile starts a new one.
  let scheduled: number | undefined;
  let generation = 0;
  let inFlight = 0;

  const flush = () => {
    scheduled = undefined;
    generation++;
    const batch = queue;
    queue = [];
    if (batch.length > 0) void send(batch);
  };

  const send = async (batch: readonly Queued<Item, Result>[]) => {
    inFlight++;
    try {
      const results = await options.send(batch.map(({ item }) => item));
      if (results.length !== batch.length) {
        throw new Error(`a batch of ${batch.length} was answered with ${results.length} results`);
      }
      batch.forEach(({ resolve }, i) => {
        resolve(results[i] as Result);
      });
    } catch (error) {
      for (const { reject } of batch) reject(error);
    } finally {
      inFlight--;
    }
  };

  return {
    add(item) {
      return new Promise<Result>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (queue.length >= options.maxSize) {
          flush();
        } else if (scheduled === undefined) {
          const mine = (scheduled = generation);
          const flushMine = () => {
            if (scheduled === mine) flush();
          };
          if (options.windowMs === 0) queueMicrotask(flushMine);
          else setTimeout(flushMine, options.windowMs);
        }
      });
    },
    get inFlight() {
      return inFlight;
    },
  };
}
