// Plans every event of a policy set once, at load: each limit by its algorithm's part, the
// event's tiers and overrides as plans of their own (an override's own when a client first
// matches it), shadow limits beside enforced ones as a plan of their own, and how a client's
// plan is chosen (client-plans.ts).
import { DEFAULTS } from '../config/defaults.js';
import { formatDuration } from '../config/duration.js';
import { PolicyError, type LimitPolicy, type PolicySet } from '../config/policies.js';
import { partFor } from './algorithms/parts.js';
import { MAX_KEYS_PER_CHECK } from './algorithms/windows/plan.js';
import { ClientPlans, OverridePlan } from './client-plans.js';
import { allAtOnce, inSlices } from '../config/in-slices.js';
import type { ReloadMoment } from './algorithms/windows/carry-over.js';
import type { AnyLimitPlan, EventPlan, PlanCommon, ReservationPlan } from './plan-types.js';

export type {
  CounterLevel,
  EventPlan,
  LeasePlan,
  ReloadCarry,
  LimitPlan,
  ReservationPlan,
  TokenBucketPlan,
  WindowsPlan,
} from './plan-types.js';
export { TTL_MARGIN_SECONDS } from './keys.js';
export { MAX_KEYS_PER_CHECK };

/**
 * Plans every event of a policy set; refuses limits that would read too many keys. An event's
 * tiers and overrides are plans of their own that count in the same counters: every plan of an
 * event counts in every bucket size any of them reads, so a client moved from one to another
 * (an override added, a tier named) finds what it has counted already, mid-window.
 */
export function planEvents(policies: PolicySet, reload?: ReloadFrom): Map<string, EventPlan> {
  return allAtOnce(planEventSteps(policies, reload));
}

/**
 * planEvents with the event loop let through every `sliceMs` at most: a reload of 20,000
 * overrides plans for about 200 ms, which on the serving thread would hold every check.
 */
export function planEventsInSlices(
  policies: PolicySet,
  sliceMs: number = DEFAULTS.planSliceMs,
  reload?: ReloadFrom,
): Promise<Map<string, EventPlan>> {
  return inSlices(planEventSteps(policies, reload), sliceMs);
}

/** Overrides planned between two looks at the clock. */
const OVERRIDES_PER_STEP = 8;

/**
 * A reload: the plans in force before it, and when it happens. Each event's counters keep what
 * the old plans counted (the part's carryOver), or the plan says they do not (`carry`).
 */
export interface ReloadFrom {
  readonly previous: ReadonlyMap<string, EventPlan>;
  readonly moment: ReloadMoment;
}

/** planEvents, a step at a time: it yields between events and every few overrides. */
function* planEventSteps(policies: PolicySet, reload?: ReloadFrom): Generator<void, Map<string, EventPlan>> {
  const plans = new Map<string, EventPlan>();
  const problems: string[] = [];
  for (const policy of policies.events.values()) {
    const { event, onStoreError } = policy;
    const part = partFor(policy.algorithm);
    const planSet = (limits: readonly LimitPolicy[], field: string): AnyLimitPlan[] => {
      const limitPlans = limits.map((limit) => part.planLimit(limit, policy.edge));
      limitPlans.forEach((plan, index) => {
        const { max } = part.limitSizing(plan).keysPerCheck;
        if (max > MAX_KEYS_PER_CHECK) {
          const { window, granularity } = plan.policy;
          problems.push(
            `event "${event}", field ${field}[${index}]: a ${formatDuration(window)} window in ${formatDuration(granularity)} buckets reads up to ${max} keys per check (at most ${MAX_KEYS_PER_CHECK}); use a granularity that divides 60, or a coarser one`,
          );
        }
      });
      return limitPlans;
    };
    const own = planSet(policy.limits, 'limits');
    const tierSets = [...(policy.tiers ?? [])].map(
      ([tier, limits]) => [tier, planSet(limits, `tiers.${tier}.limits`)] as const,
    );
    const overrideSets: (AnyLimitPlan[] | undefined)[] = [];
    for (const [index, override] of (policy.overrides ?? []).entries()) {
      overrideSets.push(override.limits ? planSet(override.limits, `overrides[${index}].limits`) : undefined);
      if (index % OVERRIDES_PER_STEP === OVERRIDES_PER_STEP - 1) yield;
    }
    const allLimits = [
      own,
      ...tierSets.map(([, set]) => set),
      ...overrideSets.flatMap((set) => (set ? [set] : [])),
    ].flat();
    // Every limit set counts in every bucket size any limit of the event reads, shadow ones
    // included: a client moved between sets, or a limit switched from shadow to enforce, is
    // judged on what its requests counted there. Shadow limits beside enforced ones also count
    // apart (<event>~shadow), only what enforcing them would have admitted; a set with no
    // enforced limit counts under the event's own key, as if its limits were enforced, so that
    // enforcing them later keeps those counts.
    // Each a step of its own: with 10,000 overrides, each looks through 20,000 limits.
    yield;
    const main = { event, counters: part.counters(allLimits, policy) };
    yield;
    const previous = reload?.previous.get(event);
    if (previous && reload && part.carryOver) {
      main.counters = part.carryOver(main.counters, allLimits, previous, reload.moment);
      yield;
    }
    const shadowLimits = allLimits.filter((limit) => limit.policy.shadow === true);
    const apart = { event: shadowEvent(event), counters: part.counters(shadowLimits, policy) };
    // What shadow limits counted apart is carried as the event's own counts are. Where nothing
    // was counted apart before (no shadow limit beside an enforced one), they start from zero:
    // their old counts, under the event's own key, are not the requests they would have admitted.
    const previousApart = previous && apartPlanOf(previous);
    if (previousApart && reload && part.carryOver) {
      apart.counters = part.carryOver(apart.counters, shadowLimits, previousApart, reload.moment);
      yield;
    }
    const reservations: ReservationPlan | undefined = policy.reservations
      ? {
          lifeSeconds: policy.reservations.life,
          holdSeconds: policy.reservations.life + DEFAULTS.leaseReturnGraceSeconds,
        }
      : undefined;
    const planOver = (
      limits: readonly AnyLimitPlan[],
      on: { event: string; counters: unknown },
      extra: Partial<Pick<PlanCommon<EventPlan>, 'clients' | 'shadow' | 'shadowOnly'>> = {},
    ): EventPlan =>
      part.eventPlan(
        {
          event: on.event,
          onStoreError,
          limits,
          maxCost: Math.min(...limits.map((limit) => limit.policy.limit)),
          ...(reservations ? { reservations } : {}),
          ...extra,
        },
        on.counters,
      );
    const planOf = (limits: readonly AnyLimitPlan[], clients?: ClientPlans): EventPlan => {
      const enforced = limits.filter((limit) => limit.policy.shadow !== true);
      const shadows = limits.filter((limit) => limit.policy.shadow === true);
      const extra = clients ? { clients } : {};
      if (enforced.length === 0) return planOver(limits, main, { ...extra, shadowOnly: true });
      if (shadows.length === 0) return planOver(enforced, main, extra);
      return planOver(enforced, main, { ...extra, shadow: planOver(shadows, apart, { shadowOnly: true }) });
    };
    if (tierSets.length === 0 && overrideSets.length === 0 && !policy.allow && !policy.deny) {
      plans.set(event, planOf(own));
      yield;
      continue;
    }
    const tiers = new Map(tierSets.map(([tier, set]) => [tier, planOf(set)]));
    const overrides: OverridePlan[] = [];
    for (const [index, override] of (policy.overrides ?? []).entries()) {
      const set = overrideSets[index];
      const { match, until } = override;
      // An override's own limits are planned when a client first matches it (client-plans.ts).
      if (set) overrides.push(new OverridePlan({ match, until, plan: () => planOf(set) }));
      else {
        const plan = tiers.get(override.tier ?? '');
        if (plan) overrides.push(new OverridePlan({ match, until, plan }));
      }
      if (index % OVERRIDES_PER_STEP === OVERRIDES_PER_STEP - 1) yield;
    }
    const lists = { allow: policy.allow ?? [], deny: policy.deny ?? [] };
    // Shadow limits beside enforced ones in a tier or an override: one plan of them, for what
    // reads their counters whatever the client (a reload's carry, its report).
    const mixed = [...tierSets.map(([, set]) => set), ...overrideSets].find(
      (set) => set?.some((limit) => limit.policy.shadow === true) && set.some((limit) => limit.policy.shadow !== true),
    );
    const apartPlan =
      mixed &&
      planOver(
        mixed.filter((limit) => limit.policy.shadow === true),
        apart,
        { shadowOnly: true },
      );
    yield;
    const clientLimits = allLimits.slice(own.length);
    plans.set(event, planOf(own, new ClientPlans({ tiers, overrides, lists, limits: clientLimits, apart: apartPlan })));
    yield;
  }
  if (problems.length > 0) throw new PolicyError(policies.source, problems);
  return plans;
}

/** The plan an event's shadow limits count apart in (under shadowEvent), when any plan of it has one: they share its counters. */
export function apartPlanOf(plan: EventPlan): EventPlan | undefined {
  return plan.shadow ?? plan.clients?.apart;
}

/** The event shadow limits count under, beside enforced ones: a name no policy event can have. */
export function shadowEvent(event: string): string {
  return `${event}~shadow`;
}
