import { LRUCache } from 'lru-cache';
import type { CachedDenial } from './cached-denial.js';
import { FeatureWindow } from './feature-window.js';
import { counterKeyBase } from './keys.js';
import type { EventPlan } from './plan.js';

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
}

/** How much of the budget the cache holds now. */
export interface CacheUsage {
  readonly features: number;
  /** Estimated bytes: each feature's worst case (see bytesPerFeature). */
  readonly bytes: number;
}

/**
 * What a cached feature costs at most, measured with `node --expose-gc` on 20,000
 * features at the second of the largest cover (`npm run bench -- --suite memory`): about
 * 1.5 KB of its own (state, window, maps, key base) and 85 to 115 bytes per bucket of its
 * windows. Estimated above both, so that the budget is one the heap keeps.
 */
const FIXED_BYTES = 1600;
const BYTES_PER_BUCKET = 120;

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
  private readonly entries: LRUCache<string, Entry> | undefined;
  private readonly eventIndex = new Map<EventPlan, number>();
  /** Each plan's worst case per feature, worked out once. */
  private readonly bytesByPlan = new Map<EventPlan, number>();

  constructor(
    private readonly keyPrefix: string,
    maxBytes: number,
    /** Whole seconds a bucket stays live after it ends: other instances' clocks may lag this much. */
    private readonly skewSeconds: number,
  ) {
    this.entries = maxBytes > 0 ? new LRUCache<string, Entry>({ maxSize: maxBytes }) : undefined;
  }

  state(plan: EventPlan, feature: string): FeatureState {
    if (!this.entries) return { base: counterKeyBase(this.keyPrefix, plan.event, feature) };
    let index = this.eventIndex.get(plan);
    if (index === undefined) this.eventIndex.set(plan, (index = this.eventIndex.size));
    let entry = this.entries.get(feature);
    let state = entry?.states[index];
    if (state) return state;
    // The feature's own bytes (UTF-16) once, and each event's worst case.
    entry ??= { states: [], bytes: 2 * feature.length };
    state = { base: counterKeyBase(this.keyPrefix, plan.event, feature) };
    entry.states[index] = state;
    entry.bytes += this.bytesPerFeature(plan);
    this.entries.set(feature, entry, { size: entry.bytes });
    return state;
  }

  /** The feature's window at `second`, built from the previous one when the second moved on. */
  windowAt(state: FeatureState, plan: EventPlan, second: number): FeatureWindow {
    let window = state.window;
    if (window?.second !== second) {
      window = new FeatureWindow(plan, state.base, second, this.skewSeconds, window);
      state.window = window;
    }
    return window;
  }

  /** `features` counts each client once per event it holds states of. */
  get usage(): CacheUsage {
    let features = 0;
    for (const entry of this.entries?.values() ?? []) for (const state of entry.states) if (state) features++;
    return { features, bytes: this.entries?.calculatedSize ?? 0 };
  }

  /** The most one feature of `plan` can hold: every bucket of every window, plus those ahead. */
  private bytesPerFeature(plan: EventPlan): number {
    let bytes = this.bytesByPlan.get(plan);
    if (bytes === undefined) {
      const ahead = 2 + this.skewSeconds + (plan.lease?.holdSeconds ?? 0);
      const buckets = plan.limits.reduce((sum, limit) => sum + limit.keysPerCheck.max + ahead, 0);
      bytes = FIXED_BYTES + BYTES_PER_BUCKET * buckets;
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
}
