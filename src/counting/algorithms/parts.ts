// The one place that picks an algorithm's part: by the algorithm a policy names, or by the
// plan made of it. Adding an algorithm is adding its folder and a line here.
import type { Algorithm } from '../../config/policies.js';
import type { EventPlan } from '../plan-types.js';
import { concurrencyLimits } from './concurrency/concurrency.js';
import { fixedWindows } from './fixed/fixed.js';
import type { AlgorithmPart } from './part.js';
import { slidingWindows } from './sliding/sliding.js';
import { tokenBuckets } from './token-bucket/token-bucket.js';

// Each part is typed by its own plan; here, where plans of every algorithm meet, they are
// parts of any plan: partOf(plan) hands each plan only to the part of its own algorithm.
const PARTS = {
  sliding: slidingWindows,
  fixed: fixedWindows,
  'token-bucket': tokenBuckets,
  concurrency: concurrencyLimits,
} as unknown as Readonly<Record<Algorithm, AlgorithmPart>>;

/** The part that counts `plan`. */
export function partOf(plan: EventPlan): AlgorithmPart {
  return PARTS[plan.algorithm];
}

/** The part of an algorithm a policy names. */
export function partFor(algorithm: Algorithm): AlgorithmPart {
  return PARTS[algorithm];
}
