import type { CachedDenial } from './cached-denial.js';
import { FeatureWindow } from './feature-window.js';
import { counterKeyBase } from '../../keys.js';
import { LruMap } from '../../lru.js';
import type { WindowsPlan } from '../../plan-types.js';

/** What one instance remembers about one event+feature between checks. */
export interface FeatureState {
  /** The start of every counter key of this event+feature. */
  readonly base: string;
  /** The window of the last second checked; settled counts carry over from it. */
  window?: FeatureWindow | undefined;
  /** The last confirmed denial: repeated while its answer cannot change, and a hint until its release. */
  denial?: CachedDenial | undefined;
  /**
   * The least room any limit had after the last decision on counts, and the second of that
   * decision: a request asking more within that second reads before it counts.
   */
  room?: number | undefined;
  roomSecond?: number | undefined;
  /** Counts over a limit denials last found, since when without a gap, and when last (see overfull.ts). */
  overfull?: { readonly totals: readonly number[]; readonly sinceMs: number; readonly lastMs: number } | undefined;
}

/** How much of the budget the cache holds now. */
export interface CacheUsage {
  readonly features: number;
  /** Estimated bytes: each client and each of its events at their worst case (see sizing.ts, stateCacheBytes). */
  readonly bytes: number;
}

/** One client's states, of every event it was checked for: one LRU entry, one lookup by its string. */
interface Entry {
  /** By the event's place in this cache (see eventIndex). */
  readonly states: (FeatureState | undefined)[];
  bytes: number;
}

/**
 * The features this instance checked most recently, of every event together, each with
 * its key base, settled counts and last denial, within one memory budget: past
 * `maxBytes` the least recently checked client goes first, with its states of every
 * event, and a feature not held is simply read whole again. With `maxBytes` 0 nothing is
 * kept between checks.
 *
 * Entries are keyed by the feature alone, so a check looks up the string it was given
 * rather than one built per check (hashing a fresh string is most of a lookup's cost).
 */
export class FeatureCache {
  private readonly entries: LruMap<string, Entry> | undefined;
  private readonly eventIndex = new Map<WindowsPlan, number>();
  /** Each plan's worst case per feature, worked out once. */
  private readonly bytesByPlan = new Map<WindowsPlan, number>();

  constructor(
    private readonly keyPrefix: string,
    maxBytes: number,
    /** Whole seconds a bucket stays live after it ends: other instances' clocks may lag this much. */
    private readonly skewSeconds: number,
  ) {
    this.entries = maxBytes > 0 ? new LruMap<string, Entry>({ maxSize: maxBytes }) : undefined;
  }

  /** The start of every key of a feature's counters for an event, without keeping anything. */
  baseOf(event: string, feature: string): string {
    return counterKeyBase(this.keyPrefix, event, feature);
  }

  state(plan: WindowsPlan, feature: string): FeatureState {
    if (!this.entries || plan.uncached) return { base: counterKeyBase(this.keyPrefix, plan.event, feature) };
    let index = this.eventIndex.get(plan);
    if (index === undefined) this.eventIndex.set(plan, (index = this.eventIndex.size));
    const entry = this.entries.get(feature);
    const cached = entry?.states[index];
    if (cached) return cached;
    const state: FeatureState = { base: counterKeyBase(this.keyPrefix, plan.event, feature) };
    // The client's own bytes once (its name as UTF-16 at most), and each event's worst case:
    // the LRU counts a client at the size its last set gave.
    const states = entry?.states ?? [];
    states[index] = state;
    const bytes = (entry?.bytes ?? CLIENT_CACHE_BYTES + 2 * feature.length) + this.bytesPerState(plan);
    this.entries.set(feature, { states, bytes }, bytes);
    return state;
  }

  /** The feature's window at `second`, built from the previous one when the second moved on. */
  windowAt(state: FeatureState, plan: WindowsPlan, second: number): FeatureWindow {
    let window = state.window;
    if (window?.second !== second) {
      window = new FeatureWindow(plan, state.base, second, this.skewSeconds, window);
      state.window = window;
    }
    return window;
  }

  /**
   * Forgets what this instance remembers of a feature's counts for an event, under each of the
   * event's plans (its own, tiers', overrides'): counts changed behind it (a refund, a returned
   * lease, a reset).
   */
  forget(plan: WindowsPlan, feature: string): void {
    const entry = this.entries?.get(feature);
    if (!entry) return;
    for (const [held, index] of this.eventIndex) {
      const state = held.event === plan.event ? entry.states[index] : undefined;
      if (state) forgetCounts(state);
    }
  }

  /** `features` counts each client once per event it holds states of. */
  get usage(): CacheUsage {
    let features = 0;
    for (const entry of this.entries?.values() ?? []) for (const state of entry.states) if (state) features++;
    return { features, bytes: this.entries?.calculatedSize ?? 0 };
  }

  /** The most one client's state of `plan` can hold (sizing.ts), worked out once per plan. */
  private bytesPerState(plan: WindowsPlan): number {
    let bytes = this.bytesByPlan.get(plan);
    if (bytes === undefined) {
      bytes = stateCacheBytes(plan, this.skewSeconds);
      this.bytesByPlan.set(plan, bytes);
    }
    return bytes;
  }
}

/** Counts changed behind this instance's memory of a feature (a refund, a returned lease, a reset): read them again. */
export function forgetCounts(state: FeatureState): void {
  state.window = undefined;
  state.denial = undefined;
  state.room = undefined;
  state.overfull = undefined;
}

/**
 * What the feature cache (feature-cache.ts) counts a client at against MEMGATE_CACHE_MB: the
 * most its objects can hold of the heap, measured with heap snapshots and `--expose-gc`
 * (the heap 5,000 more cached clients took, at the second each plan's windows hold the
 * most buckets, each client denied so that it keeps its last denial too; `npm run bench --
 * --suite memory`, scripts/bench/memory-worker.ts). Per client: its LRU slot, entry and
 * name (CLIENT_CACHE_BYTES, plus 2 bytes a UTF-16 unit of its name). Per event it was
 * checked for (stateCacheBytes): its state, key base, window and denial, 300 bytes a
 * limit (its bucket list, settled sums, its part of the denial), and 120 bytes a bucket
 * its windows can hold (the bucket, its place in the window's maps, a live bucket's key).
 * Measured, the heap is 71% to 93% of the estimate at that second over 12 policy shapes
 * (1 s to 1 day windows, fixed and sliding, 1 to 5 limits, leases), and about half of it
 * at an average second; limits sharing their buckets (59 s, 58 s and 57 s windows) cost less.
 */
export const CLIENT_CACHE_BYTES = 300;
const STATE_BYTES = 1700;
const LIMIT_BYTES = 300;
const BUCKET_BYTES = 120;

/** The most one client's state of `plan` can hold: every bucket of every window, plus those ahead of now. */
export function stateCacheBytes(plan: WindowsPlan, skewSeconds: number): number {
  const ahead = 2 + skewSeconds + (plan.holdSeconds ?? 0);
  const buckets = plan.limits.reduce((sum, limit) => sum + limit.keysPerCheck.max + ahead, 0);
  return STATE_BYTES + LIMIT_BYTES * plan.limits.length + BUCKET_BYTES * buckets;
}
