// What changes counts outside a check: a refund takes back what one check counted, a reset
// forgets everything a feature counted for an event. Neither decides; both tell this instance's
// memory of the feature to read its counts again.
import type { CheckContext } from './check-context.js';
import { eventPlan, validCost, validFeature, type CheckRequest } from './check-request.js';
import { incrementsAt } from './counter-call.js';
import { LimiterInputError } from './errors.js';
import { forgetCounts } from './feature-cache.js';
import { bucketKey, resetMarkerKey } from './keys.js';
import { bucketStart } from './buckets.js';
import type { EventPlan } from './plan.js';

export interface RefundRequest extends CheckRequest {
  /** When the check counted it, in milliseconds since the epoch. */
  readonly at: number;
}

/**
 * Takes back `cost` a check counted at `at`: false when that second has left every window,
 * so there is nothing to take back, or when a reset since then forgot it.
 */
export async function refund(
  context: CheckContext,
  plans: ReadonlyMap<string, EventPlan>,
  request: RefundRequest,
): Promise<boolean> {
  const plan = eventPlan(plans, request.event);
  const state = context.features.state(plan, validFeature(request.feature));
  const cost = validCost(request.cost, plan);
  const now = Math.floor(context.now(state.base) / 1000);
  if (
    typeof request.at !== 'number' ||
    !Number.isFinite(request.at) ||
    request.at > (now + 1) * 1000 + context.maxClockSkewMs
  )
    throw new LimiterInputError(
      'invalid_time',
      'at must be the milliseconds since the epoch the check was counted at, not in the future',
    );
  const second = Math.floor(request.at / 1000);
  const longest = Math.max(...plan.limits.map((limit) => limit.policy.window));
  if (second + longest <= now) return false;
  // A reset since then forgot the check, and its bucket may now hold only checks counted
  // after it. `at` is the caller's clock: a reset within the skew of it may be after it too.
  const { read } = await context.store.incrementAndRead([], [resetMarkerKey(state.base)]);
  if ((read[0] ?? 0) >= second - Math.ceil(context.maxClockSkewMs / 1000)) return false;
  await context.store.decrement(incrementsAt(plan, state.base, second, cost));
  forgetCounts(state);
  return true;
}

/**
 * Forgets everything a feature has counted for an event, on every instance sharing the store:
 * a marker records the reset second, which every check reads, and the buckets holding that
 * second are deleted, so they count only what comes after it.
 */
export async function reset(
  context: CheckContext,
  plans: ReadonlyMap<string, EventPlan>,
  request: Omit<CheckRequest, 'cost'>,
): Promise<void> {
  const plan = eventPlan(plans, request.event);
  const state = context.features.state(plan, validFeature(request.feature));
  const second = Math.floor(context.now(state.base) / 1000);
  const ttlSeconds = Math.max(...plan.levels.map((level) => level.ttlSeconds));
  const straddling = plan.levels.map(({ size }) => bucketKey(state.base, size, bucketStart(second, size)));
  await context.store.reset({ key: resetMarkerKey(state.base), value: second, ttlSeconds }, straddling);
  forgetCounts(state);
}
