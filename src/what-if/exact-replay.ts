// A policy set replayed exactly over logged requests, for `memgate what-if`: each request placed
// as /gate would place it (the gateway section's routes, client and lists), the client's limits
// chosen as memgate chooses them (lists, the most specific override not past its `until` at the
// request's time, the event's own limits), and decided on sliding logs: every admitted request
// kept with its second, so a window's count is exact (a fixed window's or a calendar period's
// from its start; a token bucket by memgate's own GCRA arithmetic, at the request's millisecond). memgate at 1 s granularity decides the same
// (test/what-if.test.ts replays the same logs through it); coarser buckets are what the accuracy
// lab measures.
import { isIP } from 'node:net';
import { FeatureMatcher, listMatcher } from '../config/feature-match.js';
import type { EventPolicy, LimitPolicy, OverridePolicy, PolicySet } from '../config/policies.js';
import { clientAddressFeature } from '../shared/client-address.js';
import { CLIENT_DEFAULTS } from '../shared/defaults.js';
import { calendarLevel } from '../counting/algorithms/fixed/calendar.js';
import { planTokenBucketLimit } from '../counting/algorithms/token-bucket/gcra.js';
import type { TokenBucketLimitPlan } from '../counting/plan-types.js';
import { gcraStep } from '../counting/algorithms/token-bucket/gcra.js';
import type { LoggedRequest } from './access-log.js';

/** Where /gate would put a logged request. */
export type Placement =
  | { readonly kind: 'count'; readonly event: string; readonly feature: string }
  | { readonly kind: 'uncounted'; readonly reason: UncountedReason; readonly feature?: string };

/** What the gateway section's deny list refuses is reported as this event: no event's limits decide it. */
export const GATEWAY_DENY_LIST = '(gateway deny list)';

/** Why a request counts against no event: what /gate would answer it without a limit. */
export type UncountedReason =
  'no request line' | 'no route (unmatched: allow)' | 'refused as input' | 'gateway allow list';

/** A replayed request's fate under one policy set. */
export interface ReplayedRequest {
  readonly placement: Placement;
  /** Allowed (or not counted), denied, or denied by a gateway deny list. */
  readonly allowed: boolean;
  /** A limit in shadow would have refused it. */
  readonly shadowDenied: boolean;
}

export interface ReplayOptions {
  /** Counts every request against this event instead of placing it by the gateway section. */
  readonly event?: string | undefined;
}

/** A feature of a logged host, as /gate counts a client: an IPv6 address by its prefix; a name as it is. */
function hostFeature(host: string, ipv6Subnet: number | false): string {
  return isIP(host) === 0 ? host : clientAddressFeature(host, ipv6Subnet);
}

/** Where /gate would place `request` under `policies`. */
export function placeRequest(policies: PolicySet, request: LoggedRequest, options: ReplayOptions = {}): Placement {
  const gateway = policies.gateway;
  const feature = hostFeature(request.host, gateway?.ipv6Subnet ?? CLIENT_DEFAULTS.ipv6Subnet);
  if (options.event !== undefined) return { kind: 'count', event: options.event, feature };
  if (!gateway) throw new Error(`${policies.source} has no gateway section to place requests by; give --event`);
  if (request.target === undefined) return { kind: 'uncounted', reason: 'no request line', feature };
  const outcome = gateway.resolve(request.target);
  // An ambiguous path, or a path no route names under unmatched: deny: invalidStatus, counting nothing.
  if (outcome.action === 'refuse') return { kind: 'uncounted', reason: 'refused as input', feature };
  const listed = gateway.listed(feature);
  if (listed === 'allow') return { kind: 'uncounted', reason: 'gateway allow list', feature };
  if (listed === 'deny') return { kind: 'count', event: GATEWAY_DENY_LIST, feature };
  if (outcome.action === 'allow') return { kind: 'uncounted', reason: 'no route (unmatched: allow)', feature };
  return { kind: 'count', event: outcome.event, feature };
}

/** Seconds of admitted requests, oldest first, trimmed to the longest window that reads them. */
class SecondsLog {
  #seconds: number[] = [];
  #head = 0;

  constructor(private readonly keepSeconds: number) {}

  /** Admitted requests in seconds (from, to]. */
  countAfter(from: number, to: number): number {
    let count = 0;
    for (let i = this.#seconds.length - 1; i >= this.#head; i--) {
      const second = this.#seconds[i] as number;
      if (second <= from) break;
      if (second <= to) count++;
    }
    return count;
  }

  add(second: number): void {
    this.#seconds.push(second);
    while (this.#head < this.#seconds.length && (this.#seconds[this.#head] as number) <= second - this.keepSeconds)
      this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#seconds.length) {
      this.#seconds = this.#seconds.slice(this.#head);
      this.#head = 0;
    }
  }
}

/** Whether one more request at `second` fits `limit` on what `log` admitted. */
function fits(limit: LimitPolicy, algorithm: EventPolicy['algorithm'], log: SecondsLog, second: number): boolean {
  const from = limit.calendar
    ? calendarLevel(limit.calendar).periodAt(second).start - 1
    : algorithm === 'fixed'
      ? second - (second % limit.window) - 1
      : second - limit.window;
  return log.countAfter(from, second) + 1 <= limit.limit;
}

/** A token bucket's constants, as memgate plans them. */
const buckets = new WeakMap<LimitPolicy, TokenBucketLimitPlan>();
function bucketOf(limit: LimitPolicy): TokenBucketLimitPlan {
  let bucket = buckets.get(limit);
  if (!bucket) buckets.set(limit, (bucket = planTokenBucketLimit(limit)));
  return bucket;
}

/** One event's limits and their logs, per client. */
class EventReplay {
  readonly #overrides: FeatureMatcher<OverridePolicy> | undefined;
  readonly #lists: FeatureMatcher<'allow' | 'deny'> | undefined;
  readonly #longest: number;
  /** What the enforced limits (or an event wholly in shadow) count, and what shadow limits beside them count. */
  readonly #logs = new Map<string, { main: SecondsLog; shadow: SecondsLog }>();
  /** A token bucket's value per client: its theoretical arrival time, µs. */
  readonly #tats = new Map<string, number>();

  constructor(readonly policy: EventPolicy) {
    const overrides = policy.overrides ?? [];
    this.#overrides =
      overrides.length > 0
        ? new FeatureMatcher(overrides.map((override) => ({ match: override.match, value: override })))
        : undefined;
    this.#lists = listMatcher({ allow: policy.allow ?? [], deny: policy.deny ?? [] });
    const sets = [
      policy.limits,
      ...(policy.tiers?.values() ?? []),
      ...overrides.flatMap((override) => (override.limits ? [override.limits] : [])),
    ];
    this.#longest = Math.max(...sets.flat().map((limit) => limit.window));
  }

  decide(feature: string, ms: number): { allowed: boolean; shadowDenied: boolean } {
    const listed = this.#lists?.match(feature);
    if (listed !== undefined) return { allowed: listed === 'allow', shadowDenied: false };
    const limits = this.#limitsOf(feature, ms);
    if (this.policy.algorithm === 'token-bucket') return this.#decideBucket(feature, ms, limits[0] as LimitPolicy);
    let logs = this.#logs.get(feature);
    if (!logs)
      this.#logs.set(feature, (logs = { main: new SecondsLog(this.#longest), shadow: new SecondsLog(this.#longest) }));
    const second = Math.floor(ms / 1000);
    const { algorithm } = this.policy;
    const enforced = limits.filter((limit) => limit.shadow !== true);
    const shadows = limits.filter((limit) => limit.shadow === true);
    if (enforced.length === 0) {
      // Limits all in shadow count on the event's own counters, as if enforced (plan.ts).
      const admitted = limits.every((limit) => fits(limit, algorithm, logs.main, second));
      if (admitted) logs.main.add(second);
      return { allowed: true, shadowDenied: !admitted };
    }
    const allowed = enforced.every((limit) => fits(limit, algorithm, logs.main, second));
    const shadowFits = shadows.every((limit) => fits(limit, algorithm, logs.shadow, second));
    // Enforced limits count every request served; shadow ones only those they would admit.
    if (allowed) logs.main.add(second);
    if (allowed && shadows.length > 0 && shadowFits) logs.shadow.add(second);
    return { allowed, shadowDenied: !shadowFits };
  }

  /** A token bucket's decision, as memgate's GCRA makes it at the request's millisecond (one limit a set). */
  #decideBucket(feature: string, ms: number, limit: LimitPolicy): { allowed: boolean; shadowDenied: boolean } {
    const step = gcraStep(bucketOf(limit), this.#tats.get(feature), ms * 1000, 1, true);
    if (step.allowed) this.#tats.set(feature, step.tatUs);
    return limit.shadow
      ? { allowed: true, shadowDenied: !step.allowed }
      : { allowed: step.allowed, shadowDenied: false };
  }

  /** The client's limits: the most specific override current at `ms` (its own or its tier's), else the event's. */
  #limitsOf(feature: string, ms: number): readonly LimitPolicy[] {
    const override = this.#overrides?.match(
      feature,
      (candidate) => candidate.until === undefined || candidate.until > ms,
    );
    if (!override) return this.policy.limits;
    return override.limits ?? this.policy.tiers?.get(override.tier ?? '') ?? this.policy.limits;
  }
}

/** A policy set's exact replay: feed it logged requests in time order. */
export class ExactReplay {
  readonly #events = new Map<string, EventReplay>();

  constructor(
    readonly policies: PolicySet,
    private readonly options: ReplayOptions = {},
  ) {
    for (const policy of policies.events.values()) this.#events.set(policy.event, new EventReplay(policy));
    if (options.event !== undefined && !policies.events.has(options.event))
      throw new Error(`--event ${options.event} is not an event of ${policies.source}`);
  }

  replay(request: LoggedRequest): ReplayedRequest {
    const placement = placeRequest(this.policies, request, this.options);
    if (placement.kind === 'uncounted') return { placement, allowed: true, shadowDenied: false };
    // Denied by the gateway section's deny list: no event's limits.
    const replay = this.#events.get(placement.event);
    if (!replay) return { placement, allowed: false, shadowDenied: false };
    return { placement, ...replay.decide(placement.feature, request.ms) };
  }
}
