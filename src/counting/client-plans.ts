// Which limits apply to one client of an event: the event's own, a tier's or an override's, or
// none because an allow or deny list holds the client. Built once per policy load (plan.ts); a
// check of an event without tiers, overrides or lists never comes here.
import { FeatureMatcher, listMatcher, type ClientLists, type ClientMatch } from '../config/feature-match.js';
import { LimiterInputError } from './errors.js';
import type { AnyLimitPlan, ClientChoice, EventPlan, Listed } from './plan-types.js';

export type { Listed };

/**
 * An override as the limiter uses it: the plan of its limits (its own or its tier's). An
 * override of limits of its own is planned when a client first matches it: an event may have
 * 10,000, few of them in use, and planning them all on a reload's serving thread made garbage
 * that held checks behind its collections.
 */
export class OverridePlan {
  readonly match: ClientMatch;
  /** Milliseconds since the epoch from which it gives way to the next most specific rule. */
  readonly until: number | undefined;
  #plan: EventPlan | undefined;
  #planned: (() => EventPlan) | undefined;

  constructor(options: {
    readonly match: ClientMatch;
    readonly until: number | undefined;
    /** The plan, or how to make it at first use. */
    readonly plan: EventPlan | (() => EventPlan);
  }) {
    this.match = options.match;
    this.until = options.until;
    if (typeof options.plan === 'function') this.#planned = options.plan;
    else this.#plan = options.plan;
  }

  get plan(): EventPlan {
    if (this.#plan === undefined) {
      this.#plan = (this.#planned as () => EventPlan)();
      this.#planned = undefined;
    }
    return this.#plan;
  }
}

export class ClientPlans implements ClientChoice {
  readonly #tiers: ReadonlyMap<string, EventPlan>;
  readonly #overrides: FeatureMatcher<OverridePlan> | undefined;
  readonly #lists: FeatureMatcher<Listed> | undefined;
  /** Whether any override has an `until`: only then is the clock read. */
  readonly #lapses: boolean;

  constructor(options: {
    readonly tiers: ReadonlyMap<string, EventPlan>;
    readonly overrides: readonly OverridePlan[];
    readonly lists: ClientLists | undefined;
    /** Every limit of the tiers and overrides, planned. */
    readonly limits: readonly AnyLimitPlan[];
    readonly apart?: EventPlan | undefined;
  }) {
    this.#tiers = options.tiers;
    this.#overrides =
      options.overrides.length > 0
        ? new FeatureMatcher(options.overrides.map((override) => ({ match: override.match, value: override })))
        : undefined;
    this.#lists = listMatcher(options.lists);
    this.#lapses = options.overrides.some((override) => override.until !== undefined);
    this.limits = options.limits;
    this.apart = options.apart;
  }

  get tiers(): ReadonlyMap<string, EventPlan> {
    return this.#tiers;
  }

  readonly limits: readonly AnyLimitPlan[];
  readonly apart: EventPlan | undefined;

  /**
   * The plan for `feature`, or the list holding it. Precedence: a list (the most specific of
   * its entries); an override (the most specific one not past its `until`), whose word about
   * one client is more specific than its caller's; the tier the caller names; the event's own
   * limits. `tier` was validated by tierPlan already. `nowMs` is read only when an override
   * can lapse.
   */
  choose(
    base: EventPlan,
    feature: string,
    tier: EventPlan | undefined,
    nowMs: () => number,
    { lists }: { readonly lists: boolean },
  ): EventPlan | Listed {
    const listed = lists ? this.#lists?.match(feature) : undefined;
    if (listed !== undefined) return listed;
    if (this.#overrides) {
      let now: number | undefined;
      const current = this.#lapses
        ? (override: OverridePlan) => override.until === undefined || override.until > (now ??= nowMs())
        : undefined;
      const override = this.#overrides.match(feature, current);
      if (override) return override.plan;
    }
    return tier ?? base;
  }
}

/** The plan of the tier a caller names for `base`'s event; a clear error for any other tier. */
export function tierPlan(base: EventPlan, tier: unknown): EventPlan | undefined {
  if (tier === undefined) return undefined;
  if (typeof tier !== 'string' || tier.length === 0 || !tier.isWellFormed())
    throw new LimiterInputError('invalid_tier', 'tier must be a non-empty string of well-formed Unicode');
  const tiers = base.clients?.tiers;
  const plan = tiers?.get(tier);
  if (plan) return plan;
  const known = tiers ? [...tiers.keys()] : [];
  throw new LimiterInputError(
    'unknown_tier',
    `unknown tier ${JSON.stringify(tier.slice(0, 64))} for event ${base.event}; ${known.length > 0 ? `its tiers are ${known.join(', ')}` : 'it has no tiers'}`,
  );
}
