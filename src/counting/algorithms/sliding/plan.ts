// How a sliding window counts: the last `window` seconds, summed from buckets of its
// granularity and, where they divide, of minutes and hours (cover.ts).
import type { Edge, LimitPolicy } from '../../../config/policies.js';
import { bucketStart } from '../windows/buckets.js';
import { measureKeysPerCheck } from '../windows/plan.js';
import type { WindowLimitPlan } from '../../plan-types.js';
import { edgeWeight, slidingCover, slidingLevels } from './cover.js';

export function planSlidingLimit(policy: LimitPolicy, edge: Edge): WindowLimitPlan {
  return { policy, ...geometryOf(policy.window, policy.granularity, edge) };
}

type Geometry = Omit<WindowLimitPlan, 'policy'>;

/**
 * What a sliding limit's plan takes from its window's shape alone, made once per shape: its
 * keys per check are measured over every second of its largest bucket (3,600 for a day), and
 * a file of 10,000 overrides names a handful of shapes. Kept across loads, up to a bound.
 */
const geometries = new Map<string, Geometry>();
const MAX_GEOMETRIES = 1024;

function geometryOf(window: number, granularity: number, edge: Edge): Geometry {
  const key = `${window}/${granularity}/${edge}`;
  let geometry = geometries.get(key);
  if (!geometry) {
    if (geometries.size >= MAX_GEOMETRIES) geometries.clear();
    geometry = windowGeometry(window, granularity, edge);
    geometries.set(key, geometry);
  }
  return geometry;
}

function windowGeometry(window: number, granularity: number, edge: Edge): Geometry {
  const levels = slidingLevels(window, granularity);
  const cover = (now: number) => slidingCover(now, window, levels, edge);
  // The granularity bucket holding a bucket's newest possible second (never after now)
  // stops counting when it first lies partly outside the window (drop), or when it lies
  // wholly outside (whole, and weighted, which has faded to nothing by then).
  const lastCountedOffset = edge === 'drop' ? 0 : granularity - 1;
  return {
    levels,
    cover,
    oldestWeight: edge === 'weighted' ? (now) => edgeWeight(now, window, granularity) : () => 1,
    releaseAt: (start, size, now) =>
      bucketStart(Math.min(start + size - 1, now), granularity) + lastCountedOffset + window,
    retention: (size) => window + size,
    keysPerCheck: measureKeysPerCheck(cover, levels[0] ?? window),
  };
}
