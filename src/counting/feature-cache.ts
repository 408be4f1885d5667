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
 * Per event, the features this instance checked most recently, each with its key base,
 * settled counts and last denial. Bounded: past `maxFeatures` per event the least recently
 * checked goes first, and a feature not held is simply read whole again. With `maxFeatures`
 * 0 nothing is kept between checks.
 */
export class FeatureCache {
  private readonly byEvent = new Map<EventPlan, LRUCache<string, FeatureState>>();

  constructor(
    private readonly keyPrefix: string,
    private readonly maxFeatures: number,
    /** Whole seconds a bucket stays live after it ends: other instances' clocks may lag this much. */
    private readonly skewSeconds: number,
  ) {}

  state(plan: EventPlan, feature: string): FeatureState {
    if (this.maxFeatures === 0) return { base: counterKeyBase(this.keyPrefix, plan.event, feature) };
    let features = this.byEvent.get(plan);
    if (!features) {
      features = new LRUCache({ max: this.maxFeatures });
      this.byEvent.set(plan, features);
    }
    let state = features.get(feature);
    if (!state) {
      state = { base: counterKeyBase(this.keyPrefix, plan.event, feature) };
      features.set(feature, state);
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
}
