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

/**
 * The features this instance checked most recently, each with its key base, settled counts
 * and last denial. Bounded: the least recently checked feature goes first, and a feature not
 * held is simply read whole again. With `maxFeatures` 0 nothing is kept between checks.
 */
export class FeatureCache {
  private readonly lru: LRUCache<string, FeatureState> | undefined;

  constructor(
    private readonly keyPrefix: string,
    maxFeatures: number,
    /** Whole seconds a bucket stays live after it ends: other instances' clocks may lag this much. */
    private readonly skewSeconds: number,
  ) {
    this.lru = maxFeatures > 0 ? new LRUCache({ max: maxFeatures }) : undefined;
  }

  state(plan: EventPlan, feature: string): FeatureState {
    // A NUL cannot appear in an event name, so event and feature cannot run into each other.
    const key = `${plan.event}\u0000${feature}`;
    let state = this.lru?.get(key);
    if (!state) {
      state = { base: counterKeyBase(this.keyPrefix, plan.event, feature) };
      this.lru?.set(key, state);
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

  get size(): number {
    return this.lru?.size ?? 0;
  }
}
