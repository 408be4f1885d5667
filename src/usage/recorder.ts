import { randomUUID } from 'node:crypto';
import { DEFAULTS } from '../config/defaults.js';
import { SpaceSaving } from './space-saving.js';
import type { ClientCount, Counts, MinuteTop, SecondCounts, UsageBatch, UsageStore } from './usage-store.js';

/** What the recorder is told of each decision. */
export interface RecordedDecision {
  readonly allowed: boolean;
  readonly degraded?: boolean | undefined;
  /** The shadow limits that would have refused it (Decision.shadowDenied). */
  readonly shadowDenied?: readonly string[] | undefined;
}

export interface RecorderOptions {
  /**
   * Where flushes go, by name (`sqlite`, `graphite`). Each store keeps its own batches to
   * write again, so one that fails holds up no other.
   */
  readonly stores: Readonly<Record<string, Pick<UsageStore, 'write'>>>;
  /**
   * The store queries read: what it has not taken yet is what unflushed() gives. Undefined
   * when queries read a store this instance does not write (graphite-web fed by others).
   */
  readonly readFrom: string | undefined;
  /** How often to flush, once started. */
  readonly flushSeconds: number;
  /** Clients kept per event, minute and outcome. */
  readonly top: number;
  /** Clients the summary follows per event, minute and outcome. Default top × DEFAULTS.usageSummaryPerTop. */
  readonly summaryCapacity?: number;
  /** Rows (seconds and minutes of one event) kept per failing store before the oldest go. */
  readonly maxPendingRows?: number;
  /** Names this process in what it writes. Default a new UUID. */
  readonly instance?: string;
  /** Milliseconds since the epoch. Default Date.now. */
  readonly now?: () => number;
  /** Told when a store refuses a flush; the batch stays and is written again at the next flush. */
  readonly onFlushError?: (error: unknown, failure: { store: string; pendingRows: number }) => void;
  /** Told of rows dropped because a store kept failing. */
  readonly onDropped?: (rows: number, store: string) => void;
}

/** What is counted but not in the store yet: what a query adds to what the store answers. */
export interface Unflushed {
  readonly seconds: readonly SecondCounts[];
  readonly minutes: readonly MinuteTop[];
}

interface OpenMinute {
  readonly allowed: SpaceSaving;
  readonly denied: SpaceSaving;
}

/**
 * Counts decisions and settled reservations in memory per event and second, and each
 * minute's heaviest clients per event, and writes them to each store every `flushSeconds`:
 * no write per request. A second is written once it has ended, a minute once it has ended,
 * each in one batch only; a batch a store refuses stays in that store's queue, in order, and
 * is written to it again at the next flush (stores count a batch written twice once), until
 * `maxPendingRows` make the oldest go. Stores do not wait for each other.
 */
export class UsageRecorder {
  readonly instance: string;
  readonly #options: RecorderOptions;
  readonly #now: () => number;
  readonly #capacity: number;
  readonly #maxPendingRows: number;
  /** The second being counted, and its counts per event. */
  #second = -1;
  #open = new Map<string, Required<Counts>>();
  /** Ended seconds not yet in a batch. */
  #ended: SecondCounts[] = [];
  /** The minute whose clients are being summarised, and its summaries per event. */
  #minute = -1;
  #openMinute = new Map<string, OpenMinute>();
  #endedMinutes: MinuteTop[] = [];
  /** Per store, the batches made and not yet written to it, oldest first. */
  readonly #queues: readonly StoreQueue[];
  /** The queue of the store queries read, if this instance writes it. */
  readonly #readQueue: StoreQueue | undefined;
  #sequence = 0;
  #closed = false;
  #flushing: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: RecorderOptions) {
    this.#options = options;
    this.instance = options.instance ?? randomUUID();
    this.#now = options.now ?? Date.now;
    this.#capacity = options.summaryCapacity ?? options.top * DEFAULTS.usageSummaryPerTop;
    this.#maxPendingRows = options.maxPendingRows ?? DEFAULTS.usageMaxPendingRows;
    this.#queues = Object.entries(options.stores).map(([name, store]) => ({ name, store, pending: [] }));
    this.#readQueue = this.#queues.find(({ name }) => name === options.readFrom);
  }

  /** Counts one decision: runs for every decision, so it only adds to maps. */
  record(event: string, feature: string, decision: RecordedDecision): void {
    const counts = this.#countsNow(event);
    if (!counts) return;
    if (decision.degraded) {
      // Decided by onStoreError, not by what the client did: it ranks no client.
      counts.degraded++;
      return;
    }
    if (decision.allowed) {
      counts.allowed++;
      // Served, so counted in allowed too: allowed + denied + degraded stays every decision,
      // and shadow_denied is the part of allowed that enforcing the shadow limits would refuse.
      if (decision.shadowDenied !== undefined && decision.shadowDenied.length > 0) counts.shadow_denied++;
    } else counts.denied++;
    let summary = this.#openMinute.get(event);
    if (!summary) {
      summary = { allowed: new SpaceSaving(this.#capacity), denied: new SpaceSaving(this.#capacity) };
      this.#openMinute.set(event, summary);
    }
    // A shadow-denied client ranks as allowed, which it was: the heaviest clients are per
    // allowed and denied only.
    (decision.allowed ? summary.allowed : summary.denied).add(feature);
  }

  /**
   * Counts one settled reservation at this second, the second its actual cost is counted at
   * (LimiterOptions.onSettle: POST /settle and Envoy's settles): one more `settled`, and its
   * `cost` added to `settled_cost`. Per event only: no client is ranked by what it settled.
   */
  recordSettled(event: string, cost: number): void {
    const counts = this.#countsNow(event);
    if (!counts) return;
    counts.settled++;
    counts.settled_cost += cost;
  }

  /** The open second's counts of `event`, the second moved on to now; undefined once closed. */
  #countsNow(event: string): Required<Counts> | undefined {
    if (this.#closed) return undefined;
    const second = Math.floor(this.#now() / 1000);
    // A clock stepped back counts into the open second: an ended second may be written already.
    if (second > this.#second) this.#endSecond(second);
    let counts = this.#open.get(event);
    if (!counts) {
      counts = { allowed: 0, denied: 0, degraded: 0, shadow_denied: 0, settled: 0, settled_cost: 0 };
      this.#open.set(event, counts);
    }
    return counts;
  }

  /** Flushes every `flushSeconds` until close(); the timer keeps no process alive. */
  start(): void {
    this.#timer ??= setInterval(() => void this.flush(), this.#options.flushSeconds * 1000);
    this.#timer.unref();
  }

  /**
   * Writes every ended second and minute, and what earlier flushes could not write.
   * Resolves when done, or when the store refused (the batches stay for the next flush).
   */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(() => this.#flushNow(false));
    return this.#flushing;
  }

  /** Stops the timer and writes everything, the open second and minute too, once. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#closed = true;
    this.#flushing = this.#flushing.then(() => this.#flushNow(true));
    await this.#flushing;
  }

  /** Rows counted and not yet in every store: those of the store furthest behind. */
  get pendingRows(): number {
    const queued = Math.max(0, ...this.#queues.map(({ pending }) => rowsOf(pending)));
    return queued + this.#ended.length + this.#endedMinutes.length + this.#open.size;
  }

  /**
   * Everything counted and not yet in the store queries read, for one event: they add it
   * to that store's answer. The open minute's clients are its summary so far. Nothing when
   * queries read a store this instance does not write.
   */
  unflushed(event: string): Unflushed {
    if (!this.#readQueue) return { seconds: [], minutes: [] };
    this.#endSecond(Math.floor(this.#now() / 1000));
    const seconds: SecondCounts[] = [];
    const minutes: MinuteTop[] = [];
    for (const batch of this.#readQueue.pending) {
      for (const row of batch.seconds) if (row.event === event) seconds.push(row);
      for (const row of batch.minutes) if (row.event === event) minutes.push(row);
    }
    for (const row of this.#ended) if (row.event === event) seconds.push(row);
    for (const row of this.#endedMinutes) if (row.event === event) minutes.push(row);
    const open = this.#open.get(event);
    if (open) seconds.push({ event, t: this.#second, ...open });
    const summary = this.#openMinute.get(event);
    if (summary) minutes.push(this.#minuteTop(event, this.#minute, summary));
    return { seconds, minutes };
  }

  /** Events counted and not yet in the store queries read. */
  unflushedEvents(): Set<string> {
    if (!this.#readQueue) return new Set();
    const events = new Set<string>([...this.#open.keys(), ...this.#openMinute.keys()]);
    for (const row of this.#ended) events.add(row.event);
    for (const batch of this.#readQueue.pending) for (const row of batch.seconds) events.add(row.event);
    return events;
  }

  async #flushNow(everything: boolean): Promise<void> {
    this.#endSecond(Math.floor(this.#now() / 1000));
    if (everything) this.#endSecond(Number.MAX_SAFE_INTEGER);
    if (this.#ended.length > 0 || this.#endedMinutes.length > 0) {
      const batch = {
        instance: this.instance,
        sequence: this.#sequence++,
        seconds: this.#ended,
        minutes: this.#endedMinutes,
      };
      for (const queue of this.#queues) queue.pending.push(batch);
      this.#ended = [];
      this.#endedMinutes = [];
    }
    await Promise.all(this.#queues.map((queue) => this.#writeQueue(queue)));
  }

  /** Writes a store's batches in order, until it refuses one. */
  async #writeQueue(queue: StoreQueue): Promise<void> {
    this.#dropOverflow(queue);
    for (let batch = queue.pending[0]; batch; batch = queue.pending[0]) {
      try {
        await queue.store.write(batch);
      } catch (error) {
        this.#options.onFlushError?.(error, { store: queue.name, pendingRows: rowsOf(queue.pending) });
        return;
      }
      // Removed in the same turn as the write resolves: a query reads the store and this
      // memory in one turn, so it sees a batch in one of the two, never both or neither.
      queue.pending.shift();
    }
  }

  /** Moves the open second (and minute, if `second` is in a later one) to the ended lists. */
  #endSecond(second: number): void {
    if (second <= this.#second) return;
    if (this.#second >= 0) {
      for (const [event, counts] of this.#open) this.#ended.push({ event, t: this.#second, ...counts });
    }
    this.#open = new Map();
    this.#second = second;
    const minute = second === Number.MAX_SAFE_INTEGER ? second : second - (second % 60);
    if (minute > this.#minute) {
      if (this.#minute >= 0) {
        for (const [event, summary] of this.#openMinute)
          this.#endedMinutes.push(this.#minuteTop(event, this.#minute, summary));
      }
      this.#openMinute = new Map();
      this.#minute = minute;
    }
  }

  #minuteTop(event: string, minute: number, summary: OpenMinute): MinuteTop {
    return { event, t: minute, allowed: this.#clients(summary.allowed), denied: this.#clients(summary.denied) };
  }

  /** The heaviest clients, each with the count it surely had: never more than it got. */
  #clients(summary: SpaceSaving): ClientCount[] {
    return summary
      .top(this.#options.top)
      .map(({ item, count, error }) => ({ feature: item, count: count - error }))
      .filter(({ count }) => count > 0);
  }

  /** Drops a store's oldest pending rows past maxPendingRows. */
  #dropOverflow(queue: StoreQueue): void {
    let excess = rowsOf(queue.pending) - this.#maxPendingRows;
    let dropped = 0;
    while (excess > 0 && queue.pending.length > 1) {
      const oldest = queue.pending.shift();
      if (!oldest) break;
      excess -= rows(oldest);
      dropped += rows(oldest);
    }
    if (dropped > 0) this.#options.onDropped?.(dropped, queue.name);
  }
}

/** A store and the batches it has not taken yet. */
interface StoreQueue {
  readonly name: string;
  readonly store: Pick<UsageStore, 'write'>;
  readonly pending: UsageBatch[];
}

function rows(batch: UsageBatch): number {
  return batch.seconds.length + batch.minutes.length;
}

function rowsOf(batches: readonly UsageBatch[]): number {
  return batches.reduce((sum, batch) => sum + rows(batch), 0);
}
