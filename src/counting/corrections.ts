// What changes counts outside a check: a refund takes back what one check counted, a reset
// forgets everything a feature counted for an event. Neither decides; each moves counts through
// the client's algorithm (algorithms/) and tells this instance's memory to read them again.
import type { CheckRequest, RefundBody as RefundRequest } from '../shared/contract.js';
import { partOf } from './algorithms/parts.js';
import type { Context } from './context.js';
import { LimiterInputError } from './errors.js';
import { counterKeyBase, resetMarkerKey } from './keys.js';
import { apartPlanOf } from './plan.js';
import type { EventPlan } from './plan-types.js';
import { correctedPlan, eventPlan, validCost, validFeature, type WallClock } from './resolve.js';

export type { RefundRequest };

/**
 * Takes back `cost` a check counted at `at`: false when that second has left every window,
 * so there is nothing to take back, or when a reset since then forgot it.
 */
export async function refund(
  context: Context,
  plans: ReadonlyMap<string, EventPlan>,
  request: RefundRequest,
  wallNow: WallClock,
): Promise<boolean> {
  const base = eventPlan(plans, request.event);
  const feature = validFeature(request.feature);
  // What was counted is taken back: the client's limits (its tier's, an override's) may be wider than the event's own.
  const cost = validCost(request.cost, base, { beyondLimit: true });
  const key = counterKeyBase(context.keyPrefix, base.event, feature);
  const now = Math.floor(context.now(key) / 1000);
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
  // The longest window of any plan the client could be on: once the second has left it, nothing is left to take back.
  const longest = Math.max(...[...base.limits, ...(base.clients?.limits ?? [])].map((limit) => limit.policy.window));
  const plan = correctedPlan(base, feature, request.tier, wallNow);
  const part = partOf(plan);
  const refunded = await part.refund(context, plan, key, { cost, second, now, longestWindow: longest });
  part.forget(context, base, feature);
  return refunded;
}

/**
 * Forgets everything a feature has counted for an event, on every instance sharing the store:
 * a marker records the reset second, which every check reads, and what holds that second
 * (its buckets, a token bucket's value) is deleted, so only what comes after it counts.
 */
export async function reset(
  context: Context,
  plans: ReadonlyMap<string, EventPlan>,
  request: Omit<CheckRequest, 'cost'>,
): Promise<void> {
  const plan = eventPlan(plans, request.event);
  const feature = validFeature(request.feature);
  // Shadow limits beside enforced ones count apart (plan.ts): their counters are the feature's too.
  const apart = apartPlanOf(plan);
  for (const counted of apart ? [plan, apart] : [plan]) {
    const part = partOf(counted);
    const key = counterKeyBase(context.keyPrefix, counted.event, feature);
    const second = Math.floor(context.now(key) / 1000);
    const { deletes, ttlSeconds } = part.resetKeys(counted, key, second);
    await context.store.reset({ key: resetMarkerKey(key), value: second, ttlSeconds }, deletes);
    part.forget(context, counted, feature);
  }
}
