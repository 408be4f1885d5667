import type { CachedDenial } from './cached-denial.js';
import { FeatureWindow } from './feature-window.js';
import type { SettledCounts } from './settled-counts.js';
import { counterKeyBase } from '../../keys.js';
import { LruMap } from '../../lru.js';
import type { WindowsPlan } from '../../plan-types.js';

/** What one instance remembers about one event+feature between checks. */
export interface FeatureState {
  /** The start of every counter key of this event+feature. */
  readonly base: string;
  /**
   * The window of the last second checked, while it is among the cache's hot windows; settled
   * counts carry over from it. Let go, it leaves `settled`.
   */
  window?: FeatureWindow | undefined;
  /** What the last window let go of this feature knew of its settled counts: the next window starts from them. */
  settled?: SettledCounts | undefined;
  /** The last confirmed denial: repeated while its answer cannot change, and a hint until its release. */
  denial?: CachedDenial | undefined;
  /**
   * The least room any limit had after the last decision on counts, and the second of that
   * decision: a request asking more within that second reads before it counts.
   */
  room?: number | undefined;
  /** Also what tells the cache a feature was checked this second already (FeatureCache.windowAt). */
  roomSecond?: number | undefined;
  /**
   * Counts over a limit denials last found, as one list of numbers (see overfull.ts): since when
   * without a gap, when last, then each limit's total.
   */
  overfull?: readonly number[] | undefined;
}

/** How much of the budget the cache holds now. */
export interface CacheUsage {
  readonly features: number;
  /** Estimated bytes: each client and each of its events at their worst case (stateCacheBytes), and the hot windows (windowCacheBytes). */
  readonly bytes: number;
}

/**
 * One client's states, of every event it was checked for, by the event's place in this cache
 * (see eventIndex): one LRU entry, one lookup by its string.
 */
type Entry = readonly (FeatureState | undefined)[];

/** A whole window held while it is hot: an LRU entry of its own, keyed by the state holding it. */
interface HotWindow {
  readonly state: FeatureState;
  /** Undefined once let go, so that the list of hot windows holds on to none that left. */
  window: FeatureWindow | undefined;
  readonly bytes: number;
  /** Checked again since it was made or last passed over: it gets another turn before it goes. */
  used: boolean;
}

/**
 * The features this instance checked most recently, of every event together, each with
 * its key base, settled counts and last denial, within one memory budget: past
 * `maxBytes` the least recently checked client goes first, with its states of every
 * event, and a feature not held is simply read whole again. With `maxBytes` 0 nothing is
 * kept between checks.
 *
 * A client keeps its settled counts as numbers only (settled-counts.ts). The whole window
 * a check works on, a bucket object for each bucket of each limit, is kept only while it
 * is hot: made by a feature's second check within a second, or built from its window of the
 * second before; at most HOT_WINDOWS, within WINDOWS_SHARE of the budget, the oldest going
 * first unless checked again since its last turn (a clock), each an entry of the same LRU as
 * the clients. A hot feature's checks within a second share one window; the others build
 * theirs at each check, from their settled counts, and let it go after: a long tail's checks,
 * mostly a feature's only one in its second, make no entry and leave nothing to collect later.
 *
 * Entries are keyed by the feature alone, so a check looks up the string it was given
 * rather than one built per check (hashing a fresh string is most of a lookup's cost).
 */
export class FeatureCache {
  private readonly entries: LruMap<string | FeatureState, Entry | HotWindow> | undefined;
  /** The hot windows in turn, oldest first; some may have left the LRU since. */
  private hot: HotWindow[] = [];
  private hotCount = 0;
  private hotBytes = 0;
  /** The most the hot windows may take of the budget. */
  private readonly maxHotBytes: number;
  private readonly eventIndex = new Map<WindowsPlan, number>();
  /** The plans of eventIndex by their place. */
  private readonly plans: WindowsPlan[] = [];
  /** Each plan's worst cases, worked out once: a state between checks, a whole window. */
  private readonly bytesByPlan = new Map<WindowsPlan, { state: number; window: number }>();

  constructor(
    private readonly keyPrefix: string,
    maxBytes: number,
    /** Whole seconds a bucket stays live after it ends: other instances' clocks may lag this much. */
    private readonly skewSeconds: number,
  ) {
    // A budget too small for a share to hold a window (MEMGATE_CACHE_MB is 1 MiB at least) lets windows take their turn in the LRU.
    this.maxHotBytes = maxBytes >= MIN_SHARED_BUDGET ? Math.floor(maxBytes * WINDOWS_SHARE) : maxBytes;
    this.entries =
      maxBytes > 0
        ? new LruMap<string | FeatureState, Entry | HotWindow>({
            maxSize: maxBytes,
            dispose: (held, _key, reason) => {
              if ('window' in held) this.letGo(held, reason === 'set');
            },
          })
        : undefined;
  }

  /** The start of every key of a feature's counters for an event, without keeping anything. */
  baseOf(event: string, feature: string): string {
    return counterKeyBase(this.keyPrefix, event, feature);
  }

  state(plan: WindowsPlan, feature: string): FeatureState {
    if (!this.entries || plan.uncached) return newState(counterKeyBase(this.keyPrefix, plan.event, feature));
    let index = this.eventIndex.get(plan);
    if (index === undefined) {
      this.eventIndex.set(plan, (index = this.plans.length));
      this.plans.push(plan);
    }
    const entry = this.entries.get(feature) as Entry | undefined;
    const cached = entry?.[index];
    if (cached) return cached;
    const state = newState(counterKeyBase(this.keyPrefix, plan.event, feature));
    // A new list, as long as it needs to be: an empty one grows by 16 places at once.
    const states = new Array<FeatureState | undefined>(Math.max(index + 1, entry?.length ?? 0));
    entry?.forEach((held, i) => (states[i] = held));
    states[index] = state;
    this.entries.set(feature, states, this.entryBytes(feature, states));
    return state;
  }

  /**
   * A state of `feature` came to keep counts over its limits (overfull.ts): its client is
   * counted again, with that record. Rare (a limit lowered below a client's counts, take-backs
   * late under contention), so a client is not counted at it before.
   */
  keptOverfull(feature: string): void {
    const entry = this.entries?.peek(feature) as Entry | undefined;
    if (entry) this.entries?.set(feature, entry, this.entryBytes(feature, entry));
  }

  /** A client's own bytes once (its name as UTF-16 at most), and each event's worst case. */
  private entryBytes(feature: string, states: Entry): number {
    let bytes = CLIENT_CACHE_BYTES + 2 * feature.length;
    for (let i = 0; i < states.length; i++) {
      const held = states[i];
      if (!held) continue;
      const plan = this.plans[i] as WindowsPlan;
      bytes += this.bytesOf(plan).state;
      if (held.overfull !== undefined) bytes += overfullCacheBytes(plan);
    }
    return bytes;
  }

  /** The feature's window at `second`, built from what the previous one left when the second moved on. */
  windowAt(state: FeatureState, plan: WindowsPlan, second: number): FeatureWindow {
    let window = state.window;
    if (window?.second === second) {
      const held = this.entries?.get(state) as HotWindow | undefined;
      if (held) held.used = true;
      return window;
    }
    const wasHot = window !== undefined;
    window = new FeatureWindow(plan, state.base, second, this.skewSeconds, window ?? state.settled);
    state.window = window;
    const bytes = this.bytesOf(plan).window;
    // A state not cached is gone after its check, window and all.
    if (!this.entries || plan.uncached || bytes > this.maxHotBytes) return window;
    // A feature's first check this second, not hot the second before (most of a long tail's are
    // its only one), lets its window go when filled: it never enters the LRU, and dies young.
    if (!wasHot && state.roomSecond !== second) return window;
    state.settled = undefined; // the window holds them now
    const hot: HotWindow = { state, window, bytes, used: false };
    // The window of the second before, if still held, leaves nothing: this one was built from it.
    this.entries.set(state, hot, bytes);
    this.hot.push(hot);
    this.hotCount++;
    this.hotBytes += bytes;
    this.coolDown();
    return window;
  }

  /**
   * After a check filled `window`: a window not held as hot is let go at once, leaving its
   * settled counts, so a client holds no more than its state between checks.
   */
  filled(state: FeatureState, window: FeatureWindow): void {
    if (state.window !== window || !this.entries) return;
    if ((this.entries.peek(state) as HotWindow | undefined)?.window === window) return;
    state.window = undefined;
    // Built from the state's settled counts and reading none, it knows nothing they do not.
    const { settled } = state;
    if (window.carriedAllSettled && settled?.resetAt === window.resetAt) return;
    state.settled = window.settledCounts();
  }

  /**
   * Forgets what this instance remembers of a feature's counts for an event, under each of the
   * event's plans (its own, tiers', overrides'): counts changed behind it (a refund, a returned
   * lease, a reset).
   */
  forget(plan: WindowsPlan, feature: string): void {
    const entry = this.entries?.get(feature) as Entry | undefined;
    if (!entry) return;
    for (const [held, index] of this.eventIndex) {
      const state = held.event === plan.event ? entry[index] : undefined;
      if (state) forgetCounts(state);
    }
  }

  /** `features` counts each client once per event it holds states of; `bytes` counts the hot windows too. */
  get usage(): CacheUsage {
    let features = 0;
    for (const held of this.entries?.values() ?? []) {
      if (Array.isArray(held)) for (const state of held as Entry) if (state) features++;
    }
    return { features, bytes: this.entries?.calculatedSize ?? 0 };
  }

  /** Lets the oldest hot windows not checked again since their last turn go, while there are too many. */
  private coolDown(): void {
    while (this.hotCount > HOT_WINDOWS || this.hotBytes > this.maxHotBytes) {
      const oldest = this.hot.shift();
      if (!oldest) break;
      if (this.entries?.peek(oldest.state) !== oldest) continue; // left already
      if (oldest.used) {
        oldest.used = false;
        this.hot.push(oldest);
      } else {
        this.entries.delete(oldest.state);
      }
    }
    // Windows replaced each second leave their places behind: dropped once they outnumber the held ones.
    if (this.hot.length > 2 * HOT_WINDOWS)
      this.hot = this.hot.filter((held) => this.entries?.peek(held.state) === held);
  }

  /** A hot window leaves the LRU: unless replaced by the next second's (built from it), its settled counts stay with its state. */
  private letGo(held: HotWindow, replaced: boolean): void {
    this.hotCount--;
    this.hotBytes -= held.bytes;
    const { state, window } = held;
    held.window = undefined;
    if (replaced || !window || state.window !== window) return;
    state.settled = window.settledCounts();
    state.window = undefined;
  }

  /** The most a state of `plan` and a window of it can hold, worked out once per plan. */
  private bytesOf(plan: WindowsPlan): { state: number; window: number } {
    let bytes = this.bytesByPlan.get(plan);
    if (bytes === undefined) {
      bytes = { state: stateCacheBytes(plan), window: windowCacheBytes(plan, this.skewSeconds) };
      this.bytesByPlan.set(plan, bytes);
    }
    return bytes;
  }
}

/** A state with every field in place, so it takes no room for fields added later. */
function newState(base: string): FeatureState {
  return {
    base,
    window: undefined,
    settled: undefined,
    denial: undefined,
    room: undefined,
    roomSecond: undefined,
    overfull: undefined,
  };
}

/** Counts changed behind this instance's memory of a feature (a refund, a returned lease, a reset): read them again. */
export function forgetCounts(state: FeatureState): void {
  state.window = undefined;
  state.settled = undefined;
  state.denial = undefined;
  state.room = undefined;
  state.overfull = undefined;
}

/**
 * What the feature cache counts a client at against MEMGATE_CACHE_MB: the most its objects
 * can hold of the heap, measured with `--expose-gc` (the heap 4,000 more cached clients
 * took, at the second each plan's windows hold the most buckets, each client denied so that
 * it keeps its last denial too; `npm run bench -- --suite memory`,
 * scripts/bench/memory-worker.ts). Per client: its LRU slot, entry and name
 * (CLIENT_CACHE_BYTES, plus 2 bytes a UTF-16 unit of its name). Per event it was checked
 * for (stateCacheBytes): its state, key base and denial (STATE_BYTES), the denial's two
 * numbers per limit (LIMIT_BYTES), and when its windows settle buckets, the list of settled
 * counts (SETTLED_BYTES), four numbers a run of buckets it holds (RUN_BYTES: at most two
 * per level of each limit, a sliding window's oldest and newest ends) and 8 bytes a settled
 * bucket its windows can hold. Once its denials find counts over a limit, an event's state
 * also keeps them (overfullCacheBytes), and its client is counted again then
 * (FeatureCache.keptOverfull). What every client of a plan shares at a second (which buckets,
 * their keys: window-layout.ts) and a denial's names (cached-denial.ts) are not a client's.
 */
export const CLIENT_CACHE_BYTES = 200;
const STATE_BYTES = 280;
const LIMIT_BYTES = 16;
const OVERFULL_BYTES = 80;
const SETTLED_BYTES = 100;
const RUN_BYTES = 32;
const COUNT_BYTES = 8;

/** The most one client's state of `plan` can hold between checks: a settled count for every bucket of every window. */
export function stateCacheBytes(plan: WindowsPlan): number {
  // A limit's current bucket is never settled: a limit of one bucket (a fixed window) keeps none.
  const settling = plan.limits.filter((limit) => limit.keysPerCheck.max > 1);
  const own = STATE_BYTES + LIMIT_BYTES * plan.limits.length;
  if (settling.length === 0) return own;
  const runs = settling.reduce((sum, limit) => sum + 2 * limit.levels.length, 0);
  const buckets = settling.reduce((sum, limit) => sum + limit.keysPerCheck.max - 1, 0);
  return own + SETTLED_BYTES + RUN_BYTES * runs + COUNT_BYTES * buckets;
}

/**
 * What a state's record of counts over `plan`'s limits takes (overfull.ts: a list of 2 numbers
 * and a total per limit): 71 to 81 bytes measured for one limit, 104 for five
 * (test/memory-estimate.test.ts).
 */
export function overfullCacheBytes(plan: WindowsPlan): number {
  return OVERFULL_BYTES + COUNT_BYTES * plan.limits.length;
}

/**
 * The hot windows: at most this many, within WINDOWS_SHARE of the budget. A hot feature's
 * checks in a second share its window; a feature whose window was let go builds one at its
 * next check from its settled counts, as every feature does when the second moves on.
 */
const HOT_WINDOWS = 1024;
const WINDOWS_SHARE = 1 / 8;
const MIN_SHARED_BUDGET = 2 ** 20;

/**
 * The most one whole window of `plan` can hold (feature-window.ts), measured as above before
 * windows were let go: 1,700 bytes, 300 a limit (its bucket list, settled sums) and 120 a
 * bucket its windows can hold, those ahead of now too (the bucket, its place in the window's
 * maps, a live bucket's key).
 */
export function windowCacheBytes(plan: WindowsPlan, skewSeconds: number): number {
  const ahead = 2 + skewSeconds + (plan.holdSeconds ?? 0);
  const buckets = plan.limits.reduce((sum, limit) => sum + limit.keysPerCheck.max + ahead, 0);
  return 1700 + 300 * plan.limits.length + 120 * buckets;
}
