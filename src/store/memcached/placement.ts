import { DEFAULTS } from '../../config/defaults.js';
import { HashRing } from './ring.js';
import { hashTagOf } from './servers.js';

export interface PlacementOptions {
  /** The servers' labels, `host:port`, in MEMCACHED_SERVERS order. */
  readonly servers: readonly string[];
  /** Move a down server's clients to the next server on the ring. Has no effect on one server. Default false: a plain ring. */
  readonly failover?: boolean;
  /** Least time a server stays out of placement once it has left, however soon it answers again. */
  readonly holdDownMs?: number;
  /** How long a server must answer without a break before placement returns to it. */
  readonly settleMs?: number;
  /** A server that leaves again within this long of its return stays out twice as long as last time. */
  readonly flapWindowMs?: number;
  /** The most a doubled hold-down grows to. */
  readonly maxHoldDownMs?: number;
  /** Told of every change of a server's place: it left, it answers again (and when it returns), it stopped again, it returned. */
  readonly onChange?: (change: PlacementChange) => void;
  /**
   * When the server at an index last sent anything (clock ms). A down server leaves only
   * while another placed server has been heard from within `freshMs`: an instance that
   * lost its own network hears from none, and must not move clients the others keep.
   * Default: every server always fresh.
   */
  readonly heardAt?: (index: number) => number;
  readonly freshMs?: number;
  /**
   * A down server would leave, but no other placed server has been heard from lately: ask
   * these (a no-op each), then call recheck(). Without it, the server stays until a later change.
   */
  readonly onUnsure?: (servers: readonly number[]) => void;
  /** Milliseconds of a monotonic clock. Default performance.now. */
  readonly clock?: () => number;
}

/** What a server's clients see: their own server, or the ones they moved to. */
export type ServerPlace =
  /** It answers and holds its clients. */
  | { readonly state: 'up' }
  /** It does not answer and still holds its clients (failover is off, or no other server answers): they are decided by onStoreError. */
  | { readonly state: 'down' }
  /**
   * Its clients moved to `to` (the servers after it on the ring). `returnsInMs` once it
   * answers again: how long until they move back, if it keeps answering.
   */
  | { readonly state: 'failed-over'; readonly to: readonly string[]; readonly returnsInMs?: number };

export type PlacementChange =
  | {
      readonly kind: 'left';
      readonly server: string;
      readonly reason: string;
      readonly to: readonly string[];
      readonly holdDownMs: number;
    }
  | { readonly kind: 'answering'; readonly server: string; readonly returnsInMs: number }
  /** It stopped answering again before its clients moved back: its settle starts over when it answers. */
  | { readonly kind: 'unsettled'; readonly server: string; readonly reason: string }
  /**
   * Its clients are on it again. `whileDown`: every server stopped answering, so there is
   * nowhere to fail over to: it holds its clients again, down, and they are decided by onStoreError until it answers.
   */
  | { readonly kind: 'returned'; readonly server: string; readonly awayMs: number; readonly whileDown?: true };

interface Node {
  readonly label: string;
  answering: boolean;
  /** When it last started answering (clock ms). */
  answeringSince: number;
  /** Why it stopped answering. */
  reason: string;
  /** Out of placement: its keys go to the next placed server on the ring. */
  out: boolean;
  /** When it last left placement. */
  leftAt: number;
  /** When it last came back into placement (-Infinity: never left). */
  returnedAt: number;
  /** The hold-down of its current (or last) absence. */
  holdDownMs: number;
}

/** Since when every server has been down (a total outage), and when the first answered after it. */
interface Outage {
  /** Every server stopped answering: all are placed again, down, and the next one to answer ends it. */
  whole: boolean;
  /** When the first server answered after the last total outage (-Infinity: none yet). */
  endedAt: number;
}

/**
 * Which Memcached server holds a key. Keys route by consistent (ketama) hashing of their
 * hash tag, so every bucket of one event+feature is on one server, and a change of servers
 * moves only the features of the server that changed.
 *
 * With failover, a server that stops answering leaves placement while another answers:
 * its keys go to the next placed server clockwise on the ring (its share spreads over the
 * others; nobody else's key moves), where their counts start from zero. It comes back once
 * it has answered for `settleMs` without a break, and no sooner than `holdDownMs` after it
 * left; leaving again within `flapWindowMs` of a return doubles the hold-down, up to
 * `maxHoldDownMs`, so a flapping server stays out instead of moving its clients every few
 * seconds. When no placed server answers, a server that answers again comes back at once:
 * settling protects counts, and there are none to protect while every check is degraded.
 *
 * Each instance judges the servers for itself, from its own calls and probes, so placement
 * is made a function of what every instance sees alike, never of the order it saw it in:
 *
 * - **A total outage leaves no history.** When no server answers, there is nothing to fail
 *   over to: every server is placed again (down), its hold-down and flap history dropped.
 *   Instances that saw the servers die in different orders (the last one seen dying stayed
 *   placed, the others had left) all end the outage in the same placement: every server home.
 * - **The servers that come back together are placed together.** After a total outage, a
 *   server that answers within `settleMs` of the first one to answer is placed as soon as it
 *   answers, like the first; one that has not answered by then is out, and comes back as any
 *   other (settle and hold-down, counted from when the outage ended). Otherwise which of two
 *   servers that restarted together was seen first would decide, per instance, which one is
 *   held out for the hold-down.
 *
 * So instances that saw the same failures and returns place alike, apart from the time it
 * takes each to see a server answer (a probe every 100 ms) and a server that comes back just
 * as the window closes (within that time of `settleMs` after the first).
 */
export class Placement {
  private readonly options: PlacementOptions;
  /** The options' failover and times, defaults filled in. */
  private readonly timing: {
    readonly failover: boolean;
    readonly holdDownMs: number;
    readonly settleMs: number;
    readonly flapWindowMs: number;
    readonly maxHoldDownMs: number;
  };
  private readonly clock: () => number;
  private readonly nodes: Node[];
  private readonly indexOf: Map<string, number>;
  /** Every server's points, placed or not: a key's place is the first placed server clockwise from it. */
  private readonly home: HashRing | undefined;
  /** How many servers are out of placement. */
  private outCount = 0;
  /** Made once: serverOf runs for every check. */
  private readonly isOut = (index: number): boolean => this.nodes[index]?.out === true;
  /** The servers that were out before the last change, and when it was. */
  private previous: { readonly out: ReadonlySet<number>; readonly at: number } | undefined;
  private returnTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly outage: Outage = { whole: false, endedAt: -Infinity };

  constructor(options: PlacementOptions) {
    this.options = options;
    this.timing = {
      failover: options.failover ?? false,
      holdDownMs: options.holdDownMs ?? DEFAULTS.memcachedFailoverHoldDownMs,
      settleMs: options.settleMs ?? DEFAULTS.memcachedFailoverSettleMs,
      flapWindowMs: options.flapWindowMs ?? DEFAULTS.memcachedFailoverFlapWindowMs,
      maxHoldDownMs: options.maxHoldDownMs ?? DEFAULTS.memcachedFailoverMaxHoldDownMs,
    };
    this.clock = options.clock ?? (() => performance.now());
    this.nodes = options.servers.map((label) => ({
      label,
      answering: true,
      answeringSince: -Infinity,
      reason: '',
      out: false,
      leftAt: -Infinity,
      returnedAt: -Infinity,
      holdDownMs: this.timing.holdDownMs,
    }));
    this.indexOf = new Map(options.servers.map((label, index) => [label, index]));
    this.home = options.servers.length > 1 ? new HashRing([...options.servers]) : undefined;
  }

  /** True while some server's clients are placed on another server. */
  get anyAway(): boolean {
    return this.outCount > 0;
  }

  /**
   * The index of the server that holds `key` now. While a server is out, the walk goes on
   * along the same ring to the first placed server (a ring rebuilt from the placed servers
   * alone would not do: the ring gives each server a number of points that depends on how
   * many there are, and rounds it differently for some counts, moving clients of servers
   * that never failed).
   */
  serverOf(key: string): number {
    return this.placedAmong(hashTagOf(key), this.outCount, this.isOut);
  }

  /**
   * Whether `key`'s server changed within the last `ms`: a take-back of an increment made
   * before the change would reach a server that never counted it.
   */
  movedWithin(key: string, ms: number): boolean {
    const { previous } = this;
    if (!previous || this.clock() - previous.at >= ms) return false;
    const tag = hashTagOf(key);
    const now = this.placedAmong(tag, this.outCount, this.isOut);
    return now !== this.placedAmong(tag, previous.out.size, (index) => previous.out.has(index));
  }

  /** The first server clockwise from `tag` that is not out, of `outCount` out. */
  private placedAmong(tag: string, outCount: number, isOut: (index: number) => boolean): number {
    const { home } = this;
    if (!home) return 0;
    if (outCount === 0) return this.indexOf.get(home.get(tag)) ?? 0;
    // The first placed server is among the first outCount + 1 distinct servers clockwise.
    for (const label of home.range(tag, outCount + 1)) {
      const index = this.indexOf.get(label) ?? 0;
      if (!isOut(index)) return index;
    }
    return this.indexOf.get(home.get(tag)) ?? 0;
  }

  /** The index of the server that holds `key` while every server is placed. */
  homeOf(key: string): number {
    return this.home ? (this.indexOf.get(this.home.get(hashTagOf(key))) ?? 0) : 0;
  }

  /** Whether the server at `index` holds its own clients now. */
  isPlaced(index: number): boolean {
    return this.nodes[index]?.out !== true;
  }

  /** Where the server at `index` stands, for /readyz. */
  placeOf(index: number): ServerPlace {
    const node = this.nodes[index];
    if (!node) throw new RangeError(`no server at ${index}`);
    if (!node.out) return { state: node.answering ? 'up' : 'down' };
    const to = this.targetsOf(node.label);
    return node.answering
      ? { state: 'failed-over', to, returnsInMs: this.returnsInMs(node) }
      : { state: 'failed-over', to };
  }

  /** The server at `index` stopped answering (a refused connection, a call past its deadline). */
  down(index: number, reason: string): void {
    const node = this.nodes[index];
    if (!node?.answering) return;
    node.answering = false;
    node.reason = reason;
    if (node.out && this.failingOver) this.options.onChange?.({ kind: 'unsettled', server: node.label, reason });
    this.reconsider();
  }

  /** The server at `index` answers again. */
  up(index: number): void {
    const node = this.nodes[index];
    if (!node || node.answering) return;
    node.answering = true;
    node.answeringSince = this.clock();
    if (this.outage.whole) {
      this.outage.whole = false;
      this.outage.endedAt = node.answeringSince;
    }
    this.reconsider();
    // Said only when it settles first: a server that came back at once was told of as returned.
    if (node.out && this.failingOver)
      this.options.onChange?.({ kind: 'answering', server: node.label, returnsInMs: this.returnsInMs(node) });
  }

  /** Looks again at the servers, after another one was heard from (see onUnsure). */
  recheck(): void {
    this.reconsider();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.returnTimer);
  }

  private get failingOver(): boolean {
    return this.timing.failover && this.nodes.length > 1;
  }

  /** Moves servers out of placement and back until nothing more changes, then waits for the next return. */
  private reconsider(): void {
    if (!this.failingOver || this.stopped) return;
    this.recallAll();
    for (let round = 0; round <= this.nodes.length; round++) if (!this.leaveDown() && !this.returnDue()) break;
    this.scheduleReturn();
  }

  /** One placed server that does not answer leaves, if another placed server answers, as heard lately. */
  private leaveDown(): boolean {
    const leaving = this.nodes.find((node) => !node.out && !node.answering);
    if (!leaving) return false;
    const now = this.clock();
    const answering = this.nodes.flatMap((node, index) => (!node.out && node.answering ? [index] : []));
    if (answering.length === 0) return false;
    const { heardAt, freshMs = 0 } = this.options;
    if (heardAt && !answering.some((index) => heardAt(index) >= now - freshMs)) {
      this.options.onUnsure?.(answering);
      return false;
    }
    const flapped = now - leaving.returnedAt < this.timing.flapWindowMs;
    leaving.holdDownMs = flapped
      ? Math.min(Math.max(leaving.holdDownMs * 2, this.timing.holdDownMs), this.timing.maxHoldDownMs)
      : this.timing.holdDownMs;
    this.remember();
    leaving.out = true;
    leaving.leftAt = now;
    this.rebuild();
    this.options.onChange?.({
      kind: 'left',
      server: leaving.label,
      reason: leaving.reason,
      to: this.targetsOf(leaving.label),
      holdDownMs: leaving.holdDownMs,
    });
    return true;
  }

  /**
   * No server answers: every one is placed again, down, with no hold-down (see the class).
   * A server out of placement holds its clients again; each answers again as itself.
   */
  private recallAll(): void {
    if (this.nodes.some((node) => node.answering)) return;
    this.outage.whole = true;
    if (this.outCount === 0) return;
    const now = this.clock();
    this.remember();
    const recalled = this.nodes.filter((node) => node.out);
    for (const node of this.nodes) {
      node.out = false;
      node.holdDownMs = this.timing.holdDownMs;
      node.returnedAt = -Infinity;
    }
    this.rebuild();
    for (const node of recalled)
      this.options.onChange?.({
        kind: 'returned',
        server: node.label,
        awayMs: Math.round(now - node.leftAt),
        whileDown: true,
      });
  }

  /** One server out of placement comes back: it has settled, or no placed server answers. */
  private returnDue(): boolean {
    const noneAnswers = !this.nodes.some((node) => !node.out && node.answering);
    const returning = this.nodes.find(
      (node) => node.out && node.answering && (noneAnswers || this.returnsInMs(node) === 0),
    );
    if (!returning) return false;
    const now = this.clock();
    this.remember();
    returning.out = false;
    returning.returnedAt = now;
    this.rebuild();
    this.options.onChange?.({ kind: 'returned', server: returning.label, awayMs: Math.round(now - returning.leftAt) });
    return true;
  }

  /** How long until an answering server out of placement comes back. */
  private returnsInMs(node: Node): number {
    if (this.cameBackTogether(node)) return 0;
    const at = Math.max(node.answeringSince + this.timing.settleMs, node.leftAt + node.holdDownMs);
    return Math.max(0, Math.ceil(at - this.clock()));
  }

  /**
   * Whether `node` left as the cluster came back from a total outage (it was still down when
   * the first server answered) and answered within `settleMs` of that first one, not having
   * come back since: it is placed as it answers, as the first was.
   */
  private cameBackTogether(node: Node): boolean {
    const { endedAt } = this.outage;
    return node.leftAt >= endedAt && node.returnedAt < endedAt && node.answeringSince < endedAt + this.timing.settleMs;
  }

  private scheduleReturn(): void {
    clearTimeout(this.returnTimer);
    this.returnTimer = undefined;
    const waits = this.nodes.filter((node) => node.out && node.answering).map((node) => this.returnsInMs(node));
    if (waits.length === 0) return;
    this.returnTimer = setTimeout(
      () => {
        this.reconsider();
      },
      Math.min(...waits),
    ).unref();
  }

  /** Keeps where keys were before a change (see movedWithin); called just before it. */
  private remember(): void {
    this.previous = { out: new Set(this.nodes.flatMap((node, index) => (node.out ? [index] : []))), at: this.clock() };
  }

  private rebuild(): void {
    this.outCount = this.nodes.filter((node) => node.out).length;
  }

  /**
   * The placed servers that hold a server's keys now: for each of its points on the ring,
   * the next point of a placed server. Empty while it holds them itself.
   */
  private targetsOf(label: string): string[] {
    if (!this.home || this.outCount === 0) return [];
    const placed = new Set(this.nodes.filter((node) => !node.out).map((node) => node.label));
    if (placed.has(label)) return [];
    const ring = this.home.owners;
    const targets = new Set<string>();
    ring.forEach((server, i) => {
      if (server !== label) return;
      for (let step = 1; step < ring.length; step++) {
        const next = ring[(i + step) % ring.length] as string;
        if (placed.has(next)) {
          targets.add(next);
          return;
        }
      }
    });
    return this.nodes.map((node) => node.label).filter((server) => targets.has(server));
  }
}
