// What changes counts outside a check: a refund takes back what one check counted, a reset
// forgets everything a feature counted for an event. Neither decides; both tell this instance's
// memory of the feature to read its counts again.
import type { CheckContext } from './check-context.js';
import { clientPlan, eventPlan, validCost, validFeature, type CheckRequest } from './check-request.js';
import { incrementsAt } from './counter-call.js';
import { LimiterInputError } from './errors.js';
import { bucketKey, resetMarkerKey } from './keys.js';
import { levelName, levelStart } from './buckets.js';
import { TTL_MARGIN_SECONDS, type EventPlan } from './plan.js';
import { decideTokenBucket, tokenBucketKey } from './token-bucket.js';

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
  // What was counted is taken back: the client's limits (its tier's, an override's) may be wider than the event's own.
  const cost = validCost(request.cost, plan, { beyondLimit: true });
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
  if (plan.algorithm === 'token-bucket') {
    // Its tokens go back into the client's bucket now, up to a full one.
    const feature = validFeature(request.feature);
    const chosen = clientPlan(plan, feature, request.tier, context.wallNow, { lists: false });
    const bucketPlan = typeof chosen === 'string' ? plan : chosen;
    const item = { plan: bucketPlan, feature, cost, counting: true, enforced: true, impossible: false };
    const emissionUs = bucketPlan.limits[0]?.tokenBucket?.emissionUs ?? 0;
    return (await decideTokenBucket(context, item, -cost * emissionUs)).allowed;
  }
  const second = Math.floor(request.at / 1000);
  const longest = Math.max(
    ...[plan, ...(plan.clients?.plans ?? [])].flatMap((each) => each.limits.map((limit) => limit.policy.window)),
  );
  if (second + longest <= now) return false;
  const skewSeconds = Math.ceil(context.maxClockSkewMs / 1000);
  // `at` is the caller's clock, taken before its check left: memgate may have counted it in a
  // neighbouring second (a check sent at 12.999 s, counted at 13.001 s). The seconds within the
  // skew are read, nearest first, and the cost taken back from the first that holds it.
  const finest = plan.levels.reduce((a, b) => (b.size < a.size ? b : a));
  const candidates = nearestFirst(second, skewSeconds);
  const keys = candidates.map((s) => bucketKey(state.base, levelName(finest), levelStart(finest, s)));
  const { read } = await context.store.incrementAndRead([], [resetMarkerKey(state.base), ...keys]);
  // A reset since then forgot the check, and its bucket may now hold only checks counted
  // after it. A reset within the skew of `at` may be after it too.
  if ((read[0] ?? 0) >= second - skewSeconds) return false;
  const holding = candidates.findIndex((_, i) => (read[i + 1] ?? 0) >= cost);
  await context.store.decrement(incrementsAt(plan, state.base, candidates[Math.max(0, holding)] ?? second, cost));
  context.features.forget(plan, request.feature);
  return true;
}

/** `second`, then the seconds around it up to `skew` away, nearest first, later before earlier. */
function nearestFirst(second: number, skew: number): number[] {
  const seconds = [second];
  for (let away = 1; away <= skew; away++) seconds.push(second + away, second - away);
  return seconds;
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
  const feature = validFeature(request.feature);
  // Shadow limits beside enforced ones count apart (plan.ts): their counters are the feature's too.
  const apart = [plan, ...(plan.clients?.plans ?? [])].map((each) => each.shadow).find((each) => each !== undefined);
  for (const counted of apart ? [plan, apart] : [plan]) {
    const state = context.features.state(counted, feature);
    const second = Math.floor(context.now(state.base) / 1000);
    const ttlSeconds = Math.max(TTL_MARGIN_SECONDS, ...counted.levels.map((level) => level.ttlSeconds));
    const straddling = counted.levels.map((level) =>
      bucketKey(state.base, levelName(level), levelStart(level, second)),
    );
    // A token bucket keeps one value, forgotten whole: its client starts again with a full bucket.
    if (counted.algorithm === 'token-bucket') straddling.push(tokenBucketKey(state.base));
    await context.store.reset({ key: resetMarkerKey(state.base), value: second, ttlSeconds }, straddling);
    context.features.forget(counted, feature);
  }
}
