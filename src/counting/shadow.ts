// Limits in `mode: shadow`: decided and counted as if enforced, never refusing. A limit set all in
// shadow (an event's, a tier's) is one check that does not enforce, on the event's own counters;
// shadow limits beside enforced ones count apart (plan.ts, shadowEvent) and are decided with them
// as one request, so that they count only what enforcing them would have admitted. The answer is one decision: the enforced limits decide,
// the shadow limits say what they would have done (`shadowLimits`, `shadowDenied`).
import type { CheckContext, HowDecided } from './check-context.js';
import type { CheckItem } from './check-request.js';
import { decideItems } from './check-step.js';
import { overLimits, type Decision, type LimitStatus } from './decision.js';

/** Decides a check of a plan with shadow limits (plan.shadow, or plan.shadowOnly), telling onDecision once. */
export async function decideWithShadow(context: CheckContext, item: CheckItem): Promise<Decision> {
  const { plan } = item;
  const shadowPlan = plan.shadowOnly ? plan : (plan.shadow as NonNullable<typeof plan.shadow>);
  let how: HowDecided | undefined;
  // Each item's decision is told here, not to onDecision: the request is one decision.
  const told = (_decision: Decision, itemHow: HowDecided) => {
    how ??= itemHow;
  };
  const impossible = item.cost > shadowPlan.maxCost;
  const shadowItem: CheckItem = {
    plan: shadowPlan,
    feature: item.feature,
    cost: item.cost,
    counting: item.counting && !impossible,
    enforced: false,
    impossible,
    told,
  };
  const items = plan.shadowOnly ? [shadowItem] : [{ ...item, told }, shadowItem];
  const { decisions } = await decideItems(context, items);
  const shadow = decisions[items.length - 1] as Decision;
  const main = plan.shadowOnly ? undefined : (decisions[0] as Decision);
  const shadowDenied = overLimits(shadow, item.cost, impossible);
  const shadowLimits: readonly LimitStatus[] = shadow.limits;
  const decision: Decision = {
    ...(main ?? { allowed: true, limits: [], ...(shadow.degraded ? { degraded: true as const } : {}) }),
    shadowLimits,
    ...(shadowDenied.length > 0 ? { shadowDenied } : {}),
  };
  context.onDecision?.({
    event: plan.event,
    feature: item.feature,
    kind: item.counting ? 'check' : 'peek',
    decision,
    fromDeniedCache: how?.fromDeniedCache ?? false,
    keysRead: how?.keysRead ?? 0,
    settledMiss: how?.settledMiss ?? false,
  });
  return decision;
}
