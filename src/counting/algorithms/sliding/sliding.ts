// Sliding windows (`algorithm: sliding`, the default): counted in buckets of time as fixed
// windows are (windows/), their limits covering the last `window` seconds (plan.ts).
import type { WindowsPlan } from '../../plan-types.js';
import type { AlgorithmPart } from '../part.js';
import { bucketWindows } from '../windows/windows.js';
import type { FeatureState } from '../windows/feature-cache.js';
import { planSlidingLimit } from './plan.js';
import { windowCounters, type WindowCounters } from '../windows/plan.js';

export const slidingWindows: AlgorithmPart<WindowsPlan, FeatureState, WindowCounters> = {
  ...bucketWindows,
  planLimit: planSlidingLimit,
  counters: (limits, policy) => windowCounters(limits, policy, 'sliding'),
  // Only a sliding window has a partial oldest bucket to treat.
  sizing: (plan) => ({ edge: plan.edge, ...bucketWindows.sizing(plan) }),
};
