// What memgate answers Envoy's ShouldRateLimit: each descriptor matched against the Envoy
// configuration of the limiter's snapshot (config/envoy-match.ts), the matched limits decided
// and counted together by the limiter in one request (one of them reserving; reservations named
// settled first: envoy-reservations.ts), and the answer in Envoy's terms (docs/envoy.md says how
// it differs from envoyproxy/ratelimit's).
import {
  countsInOneBucket,
  ENVOY_UNIT_SECONDS,
  RESERVATION_ENTRY,
  type EnvoyConfig,
  type EnvoyDescriptor,
  type EnvoyRateLimit,
  type EnvoyUnit,
} from '../config/envoy-config.js';
import {
  applyReplaces,
  ENVOY_EVENT_PREFIX,
  entriesFeature,
  envoyOverrideEvent,
  matchEnvoyDescriptor,
  overrideStatKey,
  upstreamStatKey,
  type EnvoyMatch,
} from '../config/envoy-match.js';
import { calendarPeriod } from '../counting/algorithms/fixed/calendar.js';
import { upstreamDynamicMetadata } from './envoy-metadata.js';
import type { Decision, LimitStatus } from '../counting/decision.js';
import { featureName } from '../shared/feature-name.js';
import type { Limiter, TogetherCheck } from '../counting/limiter.js';
import type { RuntimeLimit } from '../counting/runtime-plans.js';
import { rateLimitHeaders } from '../http/rate-limit-headers.js';
import type {
  CurrentLimit,
  DescriptorStatus,
  HeaderValue,
  RateLimitRequest,
  RateLimitDescriptor,
  RateLimitResponse,
  RateLimitUnit,
} from './messages.js';
import { settleNamed, type SettleRefusal } from './envoy-reservations.js';

export type { SettleRefusal };

/** What the decider asks of the limiter: its snapshot in force, once per call. */
export type EnvoyLimiter = Pick<Limiter, 'current'>;

/** Every unit, shortest first: the one a window's length names, when it names one. */
const UNITS = Object.keys(ENVOY_UNIT_SECONDS) as EnvoyUnit[];

/**
 * A limit's modes: in shadow, in quota mode, and whether its denial refuses the request by
 * itself (shadow ones never do, quota_mode ones only together: quotaRefuses).
 */
function modes(shadow: boolean, quota: boolean): Pick<LimitedDescriptor, 'enforced' | 'quota' | 'shadow'> {
  return { enforced: !shadow && !quota, quota, shadow };
}

/**
 * upstream's quota rule: a call is over when any descriptor enforced by itself is, or when it
 * has quota_mode descriptors and every one of them is over.
 */
function quotaRefuses(quota: readonly { readonly over: boolean }[]): boolean {
  return quota.length > 0 && quota.every(({ over }) => over);
}

/**
 * upstream's stat key of a counted descriptor, as its GetLimit names it: the matched path, with
 * the request's values where value_to_metric or detailed_metric put them (upstreamStatKey), or
 * for a per-request `limit` the request's entries (overrideStatKey).
 */
function statKey(
  config: EnvoyConfig | undefined,
  domain: string,
  match: LimitedDescriptor,
  entries: readonly { key: string; value: string }[],
): string {
  const configured = match.descriptor && config ? upstreamStatKey(config, domain, entries) : undefined;
  return configured ?? overrideStatKey(domain, entries);
}

/** What an unlimited descriptor reports as remaining, as envoyproxy/ratelimit does. */
const UNLIMITED_REMAINING = 0xffff_ffff;

export interface EnvoyDeciderOptions {
  /**
   * Its snapshot in force is taken once per call: the Envoy configuration (none matches no
   * limit), the settles and the checks of one call are all of one policy version.
   */
  readonly limiter: EnvoyLimiter;
  /** Told of each shadow_mode (or quota_mode) descriptor that would have been over its limit. */
  readonly onShadowOverLimit?: (event: string) => void;
  /** Told of each descriptor whose per-request `limit` was applied. */
  readonly onLimitOverride?: (domain: string) => void;
  /** Told of each reservation a call named and memgate did not settle; the call is answered OK for it all the same. */
  readonly onSettleRefused?: (refusal: SettleRefusal) => void;
  /** Told of each call with several descriptors that would reserve: none does, each counts its hits_addend. */
  readonly onReservationsSkipped?: (domain: string) => void;
  /** Milliseconds since the epoch, for when fixed windows end. Default Date.now. */
  readonly now?: () => number;
  /**
   * Every descriptor in shadow (upstream's global SHADOW_MODE): each is decided and counted as
   * a `shadow_mode` one is, a descriptor over its limit still says OVER_LIMIT, and the call is
   * answered OK.
   */
  readonly shadowAll?: boolean;
  /** Every descriptor in quota mode (upstream's global QUOTA_MODE): the call is over only when all of them are. */
  readonly quotaAll?: boolean;
  /**
   * upstream's LIMIT_RESPONSE_HEADERS_ENABLED: these three headers, of the descriptor closest
   * to its limit (an over-limit one first), in place of memgate's RateLimit headers.
   */
  readonly limitHeaders?: LimitHeaderNames;
  /** upstream's RESPONSE_DYNAMIC_METADATA: the call described in the answer's dynamic_metadata (envoy-metadata.ts). */
  readonly describeInMetadata?: boolean;
  /** Told what each call counted and found, for upstream's statsd stats (upstream-stats.ts). */
  readonly stats?: EnvoyStatsSink;
}

/** One descriptor's counting as upstream's stats read it: its limit, the hits asked, and what was counted before them. */
export interface DescriptorHits {
  /** upstream's stat key, `<domain>.<key_value>…` (statKey), before upstream's sanitizing. */
  readonly key: string;
  readonly limit: number;
  readonly hits: number;
  /** Counted in its window before this call. */
  readonly before: number;
  /** Over its limit (the hits were not counted: memgate counts no refused hit). */
  readonly over: boolean;
  /** In its own shadow_mode (not the global one, which upstream counts as global_shadow_mode only). */
  readonly shadow: boolean;
  /** Refused from this instance's memory of a denial, without Memcached (upstream's local cache). */
  readonly fromMemory: boolean;
}

/** What upstream's statsd stats are made from (upstream-stats.ts). */
export interface EnvoyStatsSink {
  /** Each descriptor with a limit that counted (not a peek, not a degraded decision). */
  descriptor(hits: DescriptorHits): void;
  /** Each descriptor of a call to a domain no file defines. */
  domainNotFound(domain: string): void;
  /** A call over its limits answered OK by the global shadow mode. */
  globalShadow(): void;
}

/** The names of the limit, remaining and reset headers (upstream's LIMIT_*_HEADER). */
export interface LimitHeaderNames {
  readonly limit: string;
  readonly remaining: string;
  readonly reset: string;
}

/** A descriptor whose limit counts: the check it becomes, and how to report it. */
interface Counted {
  readonly index: number;
  readonly event: string;
  /** The hits asked (0: a peek). */
  readonly hits: number;
  readonly rateLimit: EnvoyRateLimit;
  readonly enforced: boolean;
  /** quota_mode: over only with all the call's quota descriptors (and then says OVER_LIMIT), unless in shadow. */
  readonly quota: boolean;
  readonly shadow: boolean;
}

/** A descriptor whose limit counts, from the file or from the request's own `limit`. */
interface LimitedDescriptor {
  readonly kind: 'limit';
  readonly event: string;
  /** The file's descriptor it matched (none for a per-request override): upstream's stats are named by its path. */
  readonly descriptor?: EnvoyDescriptor;
  /** The counter within the event. */
  readonly feature: string;
  readonly rateLimit: EnvoyRateLimit;
  /** Its denial refuses the request (not shadow_mode nor quota_mode). */
  readonly enforced: boolean;
  readonly quota: boolean;
  readonly shadow: boolean;
}

/** What one descriptor of a request comes to. */
type Decided = Exclude<EnvoyMatch, { kind: 'limit' }> | LimitedDescriptor;

/**
 * A descriptor's per-request `limit`, as envoyproxy/ratelimit applies it (GetLimit): in place
 * of whatever the configuration says of the descriptor, whenever its domain is configured,
 * never in shadow, named by nothing `replaces` can name. It counts on the matched descriptor's
 * own counters (its event and feature; the same buckets when the unit is the configured one),
 * or, where no configured limit matches, per domain and entries.
 */
function overrideMatch(
  config: EnvoyConfig,
  domain: string,
  descriptor: RateLimitDescriptor,
  matched: EnvoyMatch,
): LimitedDescriptor | undefined {
  const { limit } = descriptor;
  if (!limit || !config.domains.has(domain)) return undefined;
  const unit = limit.unit.toLowerCase() as EnvoyUnit;
  const window = ENVOY_UNIT_SECONDS[unit];
  const configured = matched.kind === 'limit' ? matched.rateLimit : undefined;
  // The configured limit's sliding window where its buckets divide the new window; Envoy's fixed windows otherwise.
  const sliding = configured !== undefined && !countsInOneBucket(configured) && window % configured.granularity === 0;
  const rateLimit: EnvoyRateLimit = {
    replaces: [],
    unlimited: false,
    unit,
    requestsPerUnit: limit.requestsPerUnit,
    window,
    algorithm: sliding ? 'sliding' : 'fixed',
    granularity: sliding ? configured.granularity : window,
    onStoreError: configured?.onStoreError ?? 'allow',
  };
  const counter =
    matched.kind === 'limit'
      ? { event: matched.event, feature: matched.feature }
      : { event: envoyOverrideEvent(domain), feature: entriesFeature(descriptor.entries) };
  return { kind: 'limit', rateLimit, enforced: true, quota: false, shadow: false, ...counter };
}

/**
 * A per-request limit under the global modes, and in quota mode where the limit it replaces is
 * (upstream copies it): under a global shadow nothing refuses the call.
 */
function withModes(
  override: LimitedDescriptor | undefined,
  matched: EnvoyMatch,
  { shadowAll, quotaAll }: { readonly shadowAll: boolean; readonly quotaAll: boolean },
): LimitedDescriptor | undefined {
  if (!override) return undefined;
  return { ...override, ...modes(shadowAll, quotaAll || (matched.kind === 'limit' && matched.descriptor.quotaMode)) };
}

export function createEnvoyDecider(
  options: EnvoyDeciderOptions,
): (request: RateLimitRequest) => Promise<RateLimitResponse> {
  const now = options.now ?? Date.now;
  const shadowAll = options.shadowAll ?? false;
  const quotaAll = options.quotaAll ?? false;
  return async (request) => {
    // One snapshot for the whole call: its Envoy configuration, its settles and its checks.
    const limiter = options.limiter.current();
    const config = limiter.envoy;
    const onSettleRefused = options.onSettleRefused ?? (() => undefined);
    // Settles first: a settled descriptor is answered OK and decided no further.
    const { descriptors, settled } = await settleNamed(limiter, config, request, onSettleRefused);
    const found = descriptors.map((descriptor, index): EnvoyMatch => {
      if (settled[index]) return { kind: 'none', reason: 'no-limit' };
      return config
        ? matchEnvoyDescriptor(config, request.domain, descriptor.entries)
        : { kind: 'none', reason: 'unknown-domain' };
    });
    const overrides = descriptors.map((descriptor, index) =>
      config && !settled[index]
        ? withModes(
            overrideMatch(config, request.domain, descriptor, found[index] as EnvoyMatch),
            found[index] as EnvoyMatch,
            {
              shadowAll,
              quotaAll,
            },
          )
        : undefined,
    );
    // An overridden descriptor neither replaces nor is replaced: its limit has no name.
    const replaced = applyReplaces(
      found.map((match, index): EnvoyMatch => (overrides[index] ? { kind: 'none', reason: 'no-limit' } : match)),
    );
    const matches = replaced.map(
      (match, index): Decided =>
        overrides[index] ??
        (match.kind === 'limit'
          ? {
              kind: 'limit',
              event: match.event,
              feature: match.feature,
              rateLimit: match.rateLimit,
              descriptor: match.descriptor,
              ...modes(shadowAll || match.shadowMode, quotaAll || match.descriptor.quotaMode),
            }
          : match),
    );
    for (const override of overrides) if (override) options.onLimitOverride?.(request.domain);
    if (options.stats)
      for (const match of found)
        if (match.kind === 'none' && match.reason === 'unknown-domain') options.stats.domainNotFound(request.domain);
    const statuses: (DescriptorStatus | undefined)[] = [];
    const counted: Counted[] = [];
    const checks: TogetherCheck[] = [];
    /** Positions in `checks` of the descriptors that would reserve their hits_addend. */
    const reserving: number[] = [];
    const nowMs = now();
    matches.forEach((match, index) => {
      const settledLimit = settled[index];
      // A settle's answer says which limit it settled; counts it has none (ask with hits_addend 0).
      if (settledLimit) statuses[index] = { code: 'OK', ...currentLimitOf(settledLimit), limitRemaining: 0 };
      else if (match.kind === 'none') statuses[index] = { code: 'OK', limitRemaining: 0 };
      else if (match.kind === 'unlimited') statuses[index] = { code: 'OK', limitRemaining: UNLIMITED_REMAINING };
      else {
        const descriptor = descriptors[index];
        const hits = descriptor?.hitsAddend ?? Math.max(1, request.hitsAddend);
        const { event, rateLimit, enforced, quota, shadow } = match;
        counted.push({ index, event, hits, rateLimit, enforced, quota, shadow });
        const override = overrides[index];
        // Its limit's own, not a per-request override's; a cost it can hold, not a question (0).
        if (match.rateLimit.reservations && !override && hits > 0 && hits <= match.rateLimit.requestsPerUnit)
          reserving.push(checks.length);
        // A descriptor's own hits_addend of 0 asks without counting (Envoy's API: "check only").
        // A limit of 0 requests is a check that can never pass: the limiter answers it, counting nothing.
        checks.push({
          event: match.event,
          feature: featureName(match.feature),
          cost: Math.max(1, hits),
          peek: hits === 0,
          enforced: match.enforced,
          ...(override ? { limit: runtimeLimitOf(override) } : {}),
        });
      }
    });
    // One reservation per call: with several candidates, none reserves (each counts its hits_addend).
    if (reserving.length > 1) options.onReservationsSkipped?.(request.domain);
    // A call that quota descriptors may refuse after it was counted reserves nothing: its reservation could never be settled.
    const quotaDecides = counted.some(({ quota }) => quota);
    const reserveAt = reserving.length === 1 && !quotaDecides ? (reserving[0] as number) : undefined;
    if (reserveAt !== undefined) checks[reserveAt] = { ...(checks[reserveAt] as TogetherCheck), reserve: true };
    const together = checks.length > 0 ? await limiter.checkTogether(checks) : undefined;
    const limits: LimitStatus[] = [];
    /** When the enforced limits of 0 requests would reset: they are over until then. */
    const zeroLimitResetsMs: number[] = [];
    /** The call's quota_mode descriptors, and whether each is over (under QUOTA_MODE, those no limit matched too). */
    const quota: { over: boolean }[] = quotaAll
      ? matches.filter((m) => m.kind === 'none').map(() => ({ over: false }))
      : [];
    /** A descriptor over its limit outside quota mode: upstream would refuse the call but for the global shadow. */
    let overAlone = false as boolean;
    let degraded = false as boolean;
    counted.forEach(({ index, event, hits, rateLimit, enforced, quota: inQuota, shadow }, i) => {
      const decision = together?.checks[i] as Decision;
      if (decision.degraded) degraded = true;
      // A check that does not enforce answers as allowed, its limit's status among its shadow limits.
      const status = decision.limits[0] ?? decision.shadowLimits?.[0];
      const over = enforced ? !decision.allowed : (decision.shadowDenied?.length ?? 0) > 0;
      // Its own shadow_mode (the global one aside), which upstream answers OK and counts as shadow_mode.
      const ownShadow = (matches[index] as LimitedDescriptor).descriptor?.shadowMode ?? false;
      if (options.stats && hits > 0 && status && !decision.degraded) {
        // Allowed, the room left is after these hits; over, before them (a refused hit is not counted).
        const used = rateLimit.requestsPerUnit - status.remaining;
        const before = over ? used : used - hits;
        const key = statKey(
          config,
          request.domain,
          matches[index] as LimitedDescriptor,
          descriptors[index]?.entries ?? [],
        );
        options.stats.descriptor({
          key,
          limit: rateLimit.requestsPerUnit,
          hits,
          before: Math.max(0, before),
          over,
          // The global shadow is counted as global_shadow_mode only, as upstream.
          shadow: ownShadow,
          fromMemory: together?.fromMemory?.[i] === true,
        });
      }
      // Over, its status says OVER_LIMIT: enforced, under the global shadow, or in quota mode
      // not in its own shadow_mode (a descriptor's own shadow_mode answers OK, as upstream).
      const reportsOver = enforced || shadowAll || (inQuota && !shadow);
      if (over && !enforced && !decision.degraded) options.onShadowOverLimit?.(event);
      if (over && !inQuota && !ownShadow) overAlone = true;
      if (rateLimit.requestsPerUnit === 0) {
        // Over whatever is asked, until a window that never frees up ends.
        const resetMs = windowEndMs(rateLimit, nowMs);
        if (enforced) zeroLimitResetsMs.push(resetMs);
        if (inQuota) quota.push({ over: reportsOver });
        statuses[index] = {
          code: reportsOver ? 'OVER_LIMIT' : 'OK',
          ...currentLimitOf(rateLimit),
          limitRemaining: 0,
          durationUntilResetSeconds: upstreamSeconds(resetMs),
        };
        return;
      }
      // Clients see the limits that apply to them: a shadow limit is the operator's to watch.
      if (status && enforced) limits.push(status);
      const resetMs = untilResetMs(rateLimit, decision, status, nowMs);
      const saysOver = over && reportsOver;
      if (inQuota) quota.push({ over: saysOver });
      statuses[index] = {
        code: saysOver ? 'OVER_LIMIT' : 'OK',
        ...currentLimitOf(rateLimit),
        // Over its limit, a descriptor has 0 left, shadow ones too, as upstream answers (Envoy
        // passes it on as X-RateLimit-Remaining): hits_addend beyond the room left admits none.
        limitRemaining: over ? 0 : (status?.remaining ?? 0),
        ...(resetMs === undefined ? {} : { durationUntilResetSeconds: upstreamSeconds(resetMs) }),
      };
    });
    // The global shadow answers every call OK, whatever the quota rule says (upstream applies it last).
    const allowed = (together?.allowed ?? true) && (shadowAll || !quotaRefuses(quota));
    if (shadowAll && options.stats && (overAlone || quotaRefuses(quota))) options.stats.globalShadow();
    const retryAfter = allowed ? undefined : retryAfterOf(zeroLimitResetsMs, together?.retryAfter);
    const headers = options.limitHeaders
      ? upstreamLimitHeaders(
          statuses as DescriptorStatus[],
          options.limitHeaders,
          new Set(counted.filter(({ quota }) => quota).map(({ index }) => index)),
        )
      : rateLimitHeaders({ allowed, limits, ...(retryAfter === undefined ? {} : { retryAfter }) });
    const reservation = allowed && reserveAt !== undefined ? together?.checks[reserveAt]?.reservation : undefined;
    const described = options.describeInMetadata
      ? upstreamDynamicMetadata(
          request,
          matches.map((match, index) => ({
            status: statuses[index] as DescriptorStatus,
            unlimited: match.kind === 'unlimited',
            metadata: configuredMetadata(replaced[index], overrides[index]),
          })),
        )
      : undefined;
    // The reservation's id for Envoy's stream-done call, which names it in a descriptor entry of the same key.
    const dynamicMetadata = { ...described, ...(reservation ? { [RESERVATION_ENTRY]: reservation.id } : {}) };
    return {
      overallCode: allowed ? 'OK' : 'OVER_LIMIT',
      statuses: statuses as DescriptorStatus[],
      responseHeadersToAdd: Object.entries(headers).map(([key, value]): HeaderValue => ({ key, value })),
      ...(Object.keys(dynamicMetadata).length > 0 ? { dynamicMetadata } : {}),
      policyVersion: limiter.version,
      degraded,
    };
  };
}

/** The `metadata` of the configured descriptor that decided: none for a per-request limit, as upstream's GetLimit makes it. */
function configuredMetadata(
  match: EnvoyMatch | undefined,
  override: LimitedDescriptor | undefined,
): Readonly<Record<string, unknown>> | undefined {
  return !override && match?.kind === 'limit' ? match.descriptor.metadata : undefined;
}

/**
 * upstream's limit headers (LIMIT_RESPONSE_HEADERS_ENABLED): of the descriptor with a limit and
 * the least remaining, or the last one over its limit; none when no descriptor has a limit.
 */
function upstreamLimitHeaders(
  statuses: readonly DescriptorStatus[],
  names: LimitHeaderNames,
  quotaAt: ReadonlySet<number>,
): Record<string, string> {
  let closest: DescriptorStatus | undefined;
  let forced = false;
  statuses.forEach((status, index) => {
    if (!status.currentLimit) return;
    // An over-limit descriptor that refuses by itself is picked whatever comes after; a quota one is not.
    const overAlone = status.code === 'OVER_LIMIT' && !quotaAt.has(index);
    const closer = !forced && (!closest || status.limitRemaining < closest.limitRemaining);
    if (overAlone || closer) closest = status;
    if (overAlone) forced = true;
  });
  if (!closest?.currentLimit) return {};
  return {
    [names.limit]: String(closest.currentLimit.requestsPerUnit),
    [names.remaining]: String(closest.limitRemaining),
    [names.reset]: String(
      closest.durationUntilResetSeconds ?? ENVOY_UNIT_SECONDS[closest.currentLimit.unit.toLowerCase() as EnvoyUnit],
    ),
  };
}

/** An override's limit as the limiter takes it, named as its descriptor's limit would be. */
function runtimeLimitOf(match: LimitedDescriptor): RuntimeLimit {
  const { rateLimit } = match;
  return {
    name: `${match.event
      .slice(ENVOY_EVENT_PREFIX.length)
      .replaceAll(/[^A-Za-z0-9_.-]/g, '_')
      .slice(0, 55)}-${rateLimit.unit ?? rateLimit.window}`,
    limit: rateLimit.requestsPerUnit,
    window: rateLimit.window,
    algorithm: rateLimit.algorithm,
    granularity: rateLimit.granularity,
    onStoreError: rateLimit.onStoreError,
  };
}

/**
 * Envoy's current_limit, whose unit must say the window: the configured unit, or one of the
 * same length as a `window`; none for a window no unit is as long as (90 s).
 */
function currentLimitOf(rateLimit: EnvoyRateLimit): { currentLimit?: CurrentLimit } {
  const unit = rateLimit.calendar
    ? rateLimit.unit
    : [rateLimit.unit, ...UNITS].find((u) => u !== undefined && ENVOY_UNIT_SECONDS[u] === rateLimit.window);
  if (unit === undefined) return {};
  return {
    currentLimit: {
      name: rateLimit.name ?? '',
      requestsPerUnit: rateLimit.requestsPerUnit,
      unit: unit.toUpperCase() as RateLimitUnit,
    },
  };
}

/**
 * duration_until_reset: when a fixed window ends, as envoyproxy/ratelimit says; for a sliding
 * window, when a denied request may pass, or when the first counted cost leaves the window.
 */
function untilResetMs(
  rateLimit: EnvoyRateLimit,
  decision: Decision,
  status: LimitStatus | undefined,
  nowMs: number,
): number | undefined {
  // Decided without the store, by onStoreError: no count, so no reset; a denial says when to ask again.
  if (decision.degraded) return decision.retryAfter === undefined ? undefined : decision.retryAfter * 1000;
  // A window counted in one bucket resets when it ends, as envoyproxy/ratelimit's do.
  if (countsInOneBucket(rateLimit)) return windowEndMs(rateLimit, nowMs);
  if (!decision.allowed && decision.retryAfter !== undefined) return decision.retryAfter * 1000;
  return status ? status.resetSeconds * 1000 : undefined;
}

/**
 * A reset in whole seconds, as envoyproxy/ratelimit computes it from whole seconds of its clock
 * (the window's length less the seconds it has run: 1 to the length, never 0).
 */
function upstreamSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * Milliseconds until the fixed window holding `nowMs` ends: windows align to the epoch, or
 * with `calendar:`, run to local midnight of the next period.
 */
function windowEndMs({ window, calendar }: EnvoyRateLimit, nowMs: number): number {
  if (calendar) return calendarPeriod(nowMs, calendar).endMs - nowMs;
  const lengthMs = window * 1000;
  return lengthMs - (nowMs % lengthMs);
}

/** Retry-After for an OVER_LIMIT answer: the limiter's for the limits it decided, and the resets of limits of 0. */
function retryAfterOf(zeroLimitResetsMs: readonly number[], fromLimiter: number | undefined): number | undefined {
  const seconds = zeroLimitResetsMs.map((ms) => Math.ceil(ms / 1000));
  if (fromLimiter !== undefined) seconds.push(fromLimiter);
  return seconds.length > 0 ? Math.max(1, ...seconds) : undefined;
}
