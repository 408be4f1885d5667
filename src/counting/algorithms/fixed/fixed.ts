// Fixed windows (`algorithm: fixed`): counted in buckets of time as sliding windows are
// (windows/), each limit one bucket of its own length, or of a calendar period (plan.ts).
import type { WindowsPlan } from '../../plan-types.js';
import type { AlgorithmPart } from '../part.js';
import { bucketWindows } from '../windows/windows.js';
import type { FeatureState } from '../windows/feature-cache.js';
import { planFixedLimit } from './plan.js';
import { windowCounters, type WindowCounters } from '../windows/plan.js';

export const fixedWindows: AlgorithmPart<WindowsPlan, FeatureState, WindowCounters> = {
  ...bucketWindows,
  planLimit: planFixedLimit,
  counters: (limits, policy) => windowCounters(limits, policy, 'fixed'),
};
