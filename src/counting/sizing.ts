// What each policy costs Memcached, to size a cluster: keys one check reads, and items one
// active feature keeps alive, as each event's algorithm counts them (its part's sizing).
import type { EventPolicy, PolicySet } from '../config/policies.js';
import { partOf } from './algorithms/parts.js';
import { apartPlanOf } from './plan.js';
import type { AnyLimitPlan, EventPlan, ReloadCarry } from './plan-types.js';

/** Served at /policies and printed by `memgate policies`. */
export function policySizing(policies: PolicySet, plans: ReadonlyMap<string, EventPlan>, now = Date.now()) {
  return {
    source: policies.source,
    events: [...plans.values()].map((plan) => eventSizing(plan, policies.events.get(plan.event), now)),
  };
}

function eventSizing(plan: EventPlan, policy: EventPolicy | undefined, now: number) {
  const part = partOf(plan);
  const { edge, ...cost } = part.sizing(plan);
  const limitSizing = (limit: AnyLimitPlan) => ({ ...limit.policy, ...part.limitSizing(limit) });
  return {
    event: plan.event,
    algorithm: plan.algorithm,
    ...(edge ? { edge } : {}),
    onStoreError: plan.onStoreError,
    ...('lease' in plan && plan.lease
      ? { lease: { maxUnits: plan.lease.maxUnits, life: plan.lease.lifeSeconds } }
      : {}),
    ...(plan.reservations ? { reservations: { life: plan.reservations.lifeSeconds } } : {}),
    ...cost,
    limits: plan.limits.map(limitSizing),
    ...(plan.clients && plan.clients.tiers.size > 0
      ? {
          tiers: Object.fromEntries(
            [...plan.clients.tiers].map(([tier, tierPlan]) => [tier, tierPlan.limits.map(limitSizing)]),
          ),
        }
      : {}),
    ...(policy?.overrides
      ? {
          overrides: {
            count: policy.overrides.length,
            lapsed: policy.overrides.filter((override) => override.until !== undefined && override.until <= now).length,
          },
        }
      : {}),
    ...(plan.carry && plan.carry.exactAt * 1000 > now ? { reload: reloadReport(plan.carry, now) } : {}),
    ...(policy?.allow ? { allow: policy.allow.length } : {}),
    ...(policy?.deny ? { deny: policy.deny.length } : {}),
  };
}

export { itemsPerFeature } from './algorithms/windows/plan.js';

function reloadReport({ how, since, exactAt, reasons }: ReloadCarry, now: number) {
  return {
    how,
    since,
    exactAt,
    secondsUntilExact: Math.max(0, exactAt - Math.floor(now / 1000)),
    reasons: [...reasons],
  };
}

/**
 * The events a reload's plans do not judge exactly on what was counted yet, at `now` (ms): for
 * the reload's log line and its answer (docs/operations.md, Changing policies).
 */
export function reloadCarries(plans: ReadonlyMap<string, EventPlan>, now = Date.now()) {
  // An event's shadow limits counted apart are carried on their own, under `<event>~shadow`.
  return [...plans.values()]
    .flatMap((plan) => [plan, apartPlanOf(plan)])
    .flatMap((plan) =>
      plan?.carry && plan.carry.exactAt * 1000 > now ? [{ event: plan.event, ...reloadReport(plan.carry, now) }] : [],
    );
}
