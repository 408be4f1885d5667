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

/** One turn of the server's second, as seen from this process. */
export interface Turn {
  /** The second the server's clock turned to. */
  readonly second: number;
  /** performance.now() when it turned, the middle of what is possible. */
  readonly at: number;
  /** The most `at` can be off, in milliseconds. */
  readonly uncertaintyMs: number;
}

/**
 * Where instances sharing a server write down what time they agree each of its turns was.
 * Every instance sees the same turns (they are the server's), so a time named for one turn
 * gives every instance the same clock, whenever each started and however the server's
 * turns drift.
 */
export interface ClockAnchor {
  /**
   * The agreed Unix time (ms) of the turn to `second`: `proposed` when nobody had named one
   * (it is stored), else the one named first. With `proposed` undefined, only looks:
   * undefined when nobody named one. Rejects when the server cannot answer.
   */
  agree(second: number, proposed: number | undefined): Promise<number | undefined>;
  /** Whether a time was named for any of the few turns before `second`: other instances are counting. */
  namedBefore(second: number): Promise<boolean>;
}

export interface ServerClockOptions {
  /** Reads the server's clock once; rejects when the server cannot answer. */
  readonly read: () => Promise<ClockReading>;
  /** Where instances agree on the time of each turn; without one, the server's turns are the clock. */
  readonly anchor?: ClockAnchor;
  /** This host's wall clock, Unix milliseconds: used until the server has been read, and for reporting. */
  readonly wall?: () => number;
  /** Stop reading once the estimate is this close. Default 5 ms. */
  readonly targetUncertaintyMs?: number;
}

/** Time between readings: what the estimate ends up within, plus a round trip. */
const READING_GAP_MS = 2;
/** Readings stop after this long even short of the target: the server's second has turned by then. */
const LONGEST_SYNCHRONIZATION_MS = 1500;
/** Readings of a tracked turn start this long before it is due (its drift over a second is about 1 ms). */
const TRACK_LEAD_MS = 6;
/** A turn seen less precisely than this (a busy event loop, a frozen server) agrees nothing. */
const LEAST_PRECISE_TURN_MS = 25;
/** Turns a newcomer remembers seeing, to match one the others named. */
const SEEN_TURNS = 5;
/** How long after a turn a newcomer looks for the time others named for it: they write within milliseconds. */
const LOOK_DELAY_MS = 40;

/** A backward correction larger than this is a new clock (a restarted server), taken at once. */
const LARGEST_HELD_CORRECTION_MS = 5000;

/**
 * A Memcached server's clock, as every memgate instance sharing the server reads it, so that
 * they agree on bucket time whatever their own clocks say.
 *
 * Memcached reports its Unix time in whole seconds (`time` in `stats`), and its second turns
 * when a one-second timer fires: about a millisecond later each second, a whole second
 * earlier every quarter of an hour or so (when the lag wraps), later again after a freeze.
 * So the turns are shared evidence, but not a steady clock. memgate keeps both properties:
 * it watches every turn (readings a few milliseconds apart across it, `track()`), and the
 * time it gives runs with this process's monotonic clock, anchored to the time instances
 * agreed for a recent turn (ClockAnchor): the first instance names a turn's time from its
 * own clock, the others take that time for the same turn. Clocks that agree within the
 * turns' precision are left alone, so one instance's measuring error moves nobody.
 *
 * The time never goes backwards: a correction back holds it still until it has caught up.
 * Until the server has been read once, the local wall clock stands in.
 */
export class ServerClock {
  private readonly read: () => Promise<ClockReading>;
  private readonly anchor: ClockAnchor | undefined;
  private readonly wall: () => number;
  private readonly targetUncertaintyMs: number;
  /** Agreed Unix milliseconds − performance.now(): the clock this instance gives. */
  private offset: number | undefined;
  /** Where the server's turns stand: server seconds·1000 − performance.now() at the last turn seen. */
  private turnOffset: number | undefined;
  private uncertainty = Infinity;
  private last = -Infinity;
  /** Whether this instance's clock is the agreed one (taken from others, or named when alone). */
  private agreed = false;
  /** This instance's readings of the last few turns (second → performance.now() it turned at). */
  private readonly seen = new Map<number, number>();

  constructor(options: ServerClockOptions) {
    this.read = options.read;
    this.anchor = options.anchor;
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

  /** The most the server's time as given can be off from the agreed clock, in milliseconds. */
  get uncertaintyMs(): number {
    return this.uncertainty;
  }

  /** Whether the time given is the one instances agreed on (false until then, or with no anchor). */
  get isAgreed(): boolean {
    return this.agreed;
  }

  /**
   * Reads the server's clock every few milliseconds until its second turns (at most 1.5 s of
   * readings, a few hundred small requests), then agrees the turn's time with the other
   * instances. With `once`, one reading: within half a second, at once, agreeing nothing.
   * Rejects, changing nothing, when a reading fails.
   */
  async synchronize({ once = false }: { once?: boolean } = {}): Promise<void> {
    const estimate = new OffsetEstimate();
    const turn = await this.readAcross(estimate, once);
    if (once || turn === undefined) {
      if (this.offset === undefined) this.adopt(estimate.offsetMs, estimate.uncertaintyMs);
      return;
    }
    await this.agree(turn);
  }

  /**
   * Watches the server's next turn: readings from a few milliseconds before it is due until
   * it is seen, then agreement as in synchronize(). Before a first synchronize(), it is one.
   */
  async track(): Promise<void> {
    if (this.turnOffset === undefined) return this.synchronize();
    const dueAt = Math.ceil((performance.now() + this.turnOffset + TRACK_LEAD_MS) / 1000) * 1000 - this.turnOffset;
    const wait = dueAt - TRACK_LEAD_MS - performance.now();
    if (wait > 0) await sleep(wait, undefined, { ref: false });
    const turn = await this.readAcross(new OffsetEstimate(), false);
    if (turn !== undefined) await this.agree(turn);
  }

  /** Readings until the estimate pins a turn, or the time runs out: the turn, when seen precisely enough. */
  private async readAcross(estimate: OffsetEstimate, once: boolean): Promise<Turn | undefined> {
    const started = performance.now();
    let second = (await this.readInto(estimate)).serverSecond;
    while (
      !once &&
      estimate.uncertaintyMs > this.targetUncertaintyMs &&
      performance.now() - started < LONGEST_SYNCHRONIZATION_MS
    ) {
      await sleep(READING_GAP_MS, undefined, { ref: false });
      second = (await this.readInto(estimate)).serverSecond;
    }
    if (!estimate.known || estimate.uncertaintyMs > LEAST_PRECISE_TURN_MS) return undefined;
    this.turnOffset = estimate.offsetMs;
    const at = second * 1000 - estimate.offsetMs;
    this.seen.set(second, at);
    for (const old of this.seen.keys()) if (old < second - SEEN_TURNS) this.seen.delete(old);
    return { second, at, uncertaintyMs: estimate.uncertaintyMs };
  }

  private async readInto(estimate: OffsetEstimate): Promise<ClockReading> {
    const reading = await this.read();
    estimate.add(reading);
    return reading;
  }

  /** Takes the agreed time of `turn`, or names it: the step that makes instances' clocks one. */
  private async agree(turn: Turn): Promise<void> {
    const ownTurnTime = turn.second * 1000;
    if (!this.anchor) {
      this.adopt(ownTurnTime - turn.at, turn.uncertaintyMs);
      return;
    }
    if (this.agreed && this.offset !== undefined) {
      const proposed = Math.round(turn.at + this.offset);
      const agreed = await this.anchor.agree(turn.second, proposed).catch(() => undefined);
      // Both ends measured the turn within their uncertainty: closer than that is the same clock.
      const tolerance = 2 * Math.max(turn.uncertaintyMs, this.targetUncertaintyMs) + 2;
      if (agreed !== undefined && Math.abs(agreed - proposed) > tolerance)
        this.adopt(agreed - turn.at, turn.uncertaintyMs);
      else this.uncertainty = turn.uncertaintyMs;
      return;
    }
    // A newcomer takes the time others named for this turn, once they have had time to name it.
    const lookAt = turn.at + LOOK_DELAY_MS - performance.now();
    if (lookAt > 0) await sleep(lookAt, undefined, { ref: false });
    const agreed = await this.anchor.agree(turn.second, undefined).catch(() => undefined);
    if (agreed !== undefined) {
      this.agreed = true;
      this.adopt(agreed - turn.at, turn.uncertaintyMs);
      return;
    }
    // Others missed this turn (a busy host): a turn before it that both they and this instance saw will do.
    for (const [second, at] of [...this.seen].reverse()) {
      if (second >= turn.second) continue;
      const named = await this.anchor.agree(second, undefined).catch(() => undefined);
      if (named === undefined) continue;
      this.agreed = true;
      this.adopt(named - at, turn.uncertaintyMs);
      return;
    }
    this.adopt(ownTurnTime - turn.at, turn.uncertaintyMs);
    // Others named times for the turns before but not this one (they missed it): the next will do.
    const othersCount = await this.anchor.namedBefore(turn.second).catch(() => true);
    if (othersCount) return;
    // Nobody else counts on this server: this instance's clock is the one.
    this.agreed = true;
    await this.anchor.agree(turn.second, ownTurnTime).catch(() => undefined);
  }

  private adopt(offset: number, uncertaintyMs: number): void {
    // Leaving the wall clock for the server's is one deliberate step, whichever way it goes.
    if (this.offset === undefined || offset < this.offset - LARGEST_HELD_CORRECTION_MS) this.last = -Infinity;
    this.offset = offset;
    this.uncertainty = uncertaintyMs;
  }
}
