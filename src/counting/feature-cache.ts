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
  /** The last denial whose answer cannot change yet. */
  denial?: CachedDenial | undefined;
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

/**
 * The features this instance checked most recently, of every event together, each with
 * its key base, settled counts and last denial, within one memory budget: past
 * `maxBytes` the least recently checked goes first, and a feature not held is simply read
 * whole again. With `maxBytes` 0 nothing is kept between checks.
 */
export class FeatureCache {
  private readonly states: LRUCache<string, FeatureState> | undefined;
  /** Each plan's worst case per feature, worked out once. */
  private readonly bytesByPlan = new WeakMap<EventPlan, number>();

  constructor(
    private readonly keyPrefix: string,
    maxBytes: number,
    /** Whole seconds a bucket stays live after it ends: other instances' clocks may lag this much. */
    private readonly skewSeconds: number,
  ) {
    this.states = maxBytes > 0 ? new LRUCache<string, FeatureState>({ maxSize: maxBytes }) : undefined;
  }

  state(plan: EventPlan, feature: string): FeatureState {
    if (!this.states) return { base: counterKeyBase(this.keyPrefix, plan.event, feature) };
    // Event names hold no NUL, so event and feature cannot run into each other.
    const key = `${plan.event}\u0000${feature}`;
    let state = this.states.get(key);
    if (!state) {
      state = { base: counterKeyBase(this.keyPrefix, plan.event, feature) };
      // The key's own bytes (UTF-16) on top of the plan's worst case.
      this.states.set(key, state, { size: this.bytesPerFeature(plan) + 2 * key.length });
    }
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

  get usage(): CacheUsage {
    return { features: this.states?.size ?? 0, bytes: this.states?.calculatedSize ?? 0 };
  }

  /** The most one feature of `plan` can hold: every bucket of every window, plus those ahead. */
  private bytesPerFeature(plan: EventPlan): number {
    let bytes = this.bytesByPlan.get(plan);
    if (bytes === undefined) {
      const buckets = plan.limits.reduce((sum, limit) => sum + limit.keysPerCheck.max + 2 + this.skewSeconds, 0);
      bytes = FIXED_BYTES + BYTES_PER_BUCKET * buckets;
      this.bytesByPlan.set(plan, bytes);
    }
    return bytes;
  }
}
