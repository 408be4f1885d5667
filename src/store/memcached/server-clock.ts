import { setTimeout as sleep } from 'node:timers/promises';

/** One reading of a server's clock: its `time` stat, in whole seconds, taken between two local instants. */
export interface ClockReading {
  /** performance.now() when the request left and when its answer came, in milliseconds. */
  readonly sentAt: number;
  readonly receivedAt: number;
  /** The server's Unix time in whole seconds, read somewhere between the two. */
  readonly serverSecond: number;
}

/**
 * Where a server's clock stands against this process's monotonic clock: the offset
 * (server Unix milliseconds − performance.now()) is known to lie in [low, high).
 *
 * A reading of second S taken between `sentAt` and `receivedAt` says the server's clock
 * showed S at some instant t in between: S·1000 ≤ t + offset < (S+1)·1000, so the offset
 * lies in [S·1000 − receivedAt, (S+1)·1000 − sentAt). One reading pins it to a second
 * plus the round trip; readings a few milliseconds apart, across the moment the server's
 * second turns, pin it to those few milliseconds plus a round trip.
 */
export class OffsetEstimate {
  low = -Infinity;
  high = Infinity;

  /** Narrows the estimate; a reading that contradicts it (a clock that jumped) starts it again. */
  add({ sentAt, receivedAt, serverSecond }: ClockReading): void {
    const low = serverSecond * 1000 - receivedAt;
    const high = (serverSecond + 1) * 1000 - sentAt;
    if (Math.max(low, this.low) >= Math.min(high, this.high)) {
      this.low = low;
      this.high = high;
      return;
    }
    this.low = Math.max(low, this.low);
    this.high = Math.min(high, this.high);
  }

  get known(): boolean {
    return Number.isFinite(this.low) && Number.isFinite(this.high);
  }

  get offsetMs(): number {
    return (this.low + this.high) / 2;
  }

  /** Half the width of what is still possible: the most the estimate can be off. */
  get uncertaintyMs(): number {
    return (this.high - this.low) / 2;
  }
}

export interface ServerClockOptions {
  /** Reads the server's clock once; rejects when the server cannot answer. */
  readonly read: () => Promise<ClockReading>;
  /** This host's wall clock, Unix milliseconds: used until the server has been read, and for reporting. */
  readonly wall?: () => number;
  /** Stop reading once the estimate is this close. Default 5 ms. */
  readonly targetUncertaintyMs?: number;
}

/** Time between readings: what the estimate ends up within, plus a round trip. */
const READING_GAP_MS = 4;
/** Readings stop after this long even short of the target: the server's second has turned by then. */
const LONGEST_SYNCHRONIZATION_MS = 1500;

/** A backward correction larger than this is a new clock (a restarted server), taken at once. */
const LARGEST_HELD_CORRECTION_MS = 5000;

/**
 * A Memcached server's clock, as every memgate instance sharing the server can read it,
 * so that they agree on bucket time whatever their own clocks say. Memcached reports its
 * Unix time in whole seconds (`time` in `stats`); `synchronize()` pins the offset from
 * this process's monotonic clock (see OffsetEstimate), so the time it gives moves on with
 * the monotonic clock, unaffected by steps of the local wall clock (NTP, an operator,
 * libfaketime), and never goes backwards: a smaller offset found later holds the time
 * still until it has caught up.
 *
 * Until the server has been read once, the local wall clock stands in.
 */
export class ServerClock {
  private readonly read: () => Promise<ClockReading>;
  private readonly wall: () => number;
  private readonly targetUncertaintyMs: number;
  private offset: number | undefined;
  private uncertainty = Infinity;
  private last = -Infinity;

  constructor(options: ServerClockOptions) {
    this.read = options.read;
    this.wall = options.wall ?? Date.now;
    this.targetUncertaintyMs = options.targetUncertaintyMs ?? 5;
  }

  /** The server's Unix time in milliseconds, never less than it returned before. */
  now(): number {
    const now = this.offset === undefined ? this.wall() : performance.now() + this.offset;
    if (now > this.last) this.last = now;
    return this.last;
  }

  /** The server's clock minus this host's wall clock, in milliseconds; undefined until read. */
  get offsetFromWallMs(): number | undefined {
    return this.offset === undefined ? undefined : performance.now() + this.offset - this.wall();
  }

  /** The most the server's time as given can be off from the server's clock, in milliseconds. */
  get uncertaintyMs(): number {
    return this.uncertainty;
  }

  /**
   * Reads the server's clock every few milliseconds until its second turns, which pins the
   * offset within those milliseconds (at most 1.5 s of readings, a few hundred small
   * requests). With `once`, one reading: within half a second, at once. Rejects, changing
   * nothing, when a reading fails.
   */
  async synchronize({ once = false }: { once?: boolean } = {}): Promise<void> {
    const estimate = new OffsetEstimate();
    const started = performance.now();
    estimate.add(await this.read());
    while (
      !once &&
      estimate.uncertaintyMs > this.targetUncertaintyMs &&
      performance.now() - started < LONGEST_SYNCHRONIZATION_MS
    ) {
      await sleep(READING_GAP_MS, undefined, { ref: false });
      estimate.add(await this.read());
    }
    this.adopt(estimate);
  }

  private adopt(estimate: OffsetEstimate): void {
    const offset = estimate.offsetMs;
    // Leaving the wall clock for the server's is one deliberate step, whichever way it goes.
    if (this.offset === undefined || offset < this.offset - LARGEST_HELD_CORRECTION_MS) this.last = -Infinity;
    this.offset = offset;
    this.uncertainty = estimate.uncertaintyMs;
  }
}
