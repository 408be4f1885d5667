/**
 * What envoyproxy/ratelimit's configuration files come to once read: domains, their
 * descriptors and their limits. The limiter runs on this model alone; reading and checking
 * the files (YAML, the schema, the merge of a directory) is envoy-config.ts, which the
 * library package leaves out.
 */
import type { CalendarWindow } from './calendar-window.js';
import type { Algorithm, OnStoreError, ReservationPolicy } from './policies.js';

/** Envoy's RateLimitResponse.RateLimit.Unit, as written in the files (any case). */
export type EnvoyUnit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year';

/** Seconds per unit, as envoyproxy/ratelimit's utils.UnitToDivider: a month is 30 days, a year 365. */
export const ENVOY_UNIT_SECONDS: Readonly<Record<EnvoyUnit, number>> = {
  second: 1,
  minute: 60,
  hour: 3600,
  day: 86_400,
  week: 7 * 86_400,
  month: 30 * 86_400,
  year: 365 * 86_400,
};

/** requests_per_unit is a uint32 in Envoy's API. */
export const MAX_REQUESTS_PER_UNIT = 4_294_967_295;

/**
 * The descriptor entry whose value names a reservation to settle (docs/envoy.md, "Costs known
 * after the response"): Envoy's stream-done call takes it from the dynamic metadata memgate
 * answered the request's call with. No descriptor of a file may have it as its key.
 */
export const RESERVATION_ENTRY = 'memgate_reservation';

export interface EnvoyRateLimit {
  /** rate_limit.name: what `replaces` refers to; also reported as current_limit.name. */
  readonly name?: string | undefined;
  /** Only `replaces` entries of a matched limit drop other matched limits of the same request. */
  readonly replaces: readonly string[];
  /** Unlimited limits count nothing and always answer OK. */
  readonly unlimited: boolean;
  /** The unit as written (lower case); absent when unlimited, or when only `window` is given. */
  readonly unit?: EnvoyUnit | undefined;
  /** 0 denies every request, as in envoyproxy/ratelimit. */
  readonly requestsPerUnit: number;
  /** Seconds: `window` when given, else the unit's length. */
  readonly window: number;
  /** `fixed` (the default, as envoyproxy/ratelimit: windows aligned to multiples of their length since the epoch) or `sliding`. */
  /** Envoy's limits count in windows of time. */
  readonly algorithm: EnvoyAlgorithm;
  /** Seconds; equals `window` for fixed windows. */
  readonly granularity: number;
  readonly onStoreError: OnStoreError;
  /**
   * `calendar:` (a memgate extension on unit day, week or month): periods from local midnight in
   * a time zone, as policy files' calendar windows. Without it a month is 30 days from the
   * epoch, as in envoyproxy/ratelimit.
   */
  readonly calendar?: CalendarWindow | undefined;
  /**
   * `reservations:` (a memgate extension): a call's hits_addend reserves instead of counting
   * plainly, and a later call naming the reservation settles it with the actual cost. Its life
   * fits the window by the rule of policy files' reservations.
   */
  readonly reservations?: ReservationPolicy | undefined;
}

/** One descriptor of a file, with its children indexed the way envoyproxy/ratelimit looks them up. */
export interface EnvoyDescriptor {
  readonly key: string;
  /** Absent: the descriptor matches any value of its key, and counts each value apart. */
  readonly value?: string | undefined;
  /** `key_value`, or `key` when there is no value: the name envoyproxy/ratelimit files it under. */
  readonly compositeKey: string;
  /** Composite keys from the domain down to this descriptor. */
  readonly path: readonly string[];
  readonly rateLimit?: EnvoyRateLimit | undefined;
  readonly shadowMode: boolean;
  readonly quotaMode: boolean;
  readonly detailedMetric: boolean;
  readonly valueToMetric: boolean;
  /** Values matching this descriptor's wildcard share one counter. */
  readonly shareThreshold: boolean;
  readonly metadata?: Readonly<Record<string, unknown>> | undefined;
  readonly children: DescriptorLevel;
}

/** The descriptors of one level: by composite key, and the wildcard ones in file order. */
export interface DescriptorLevel {
  readonly byKey: ReadonlyMap<string, EnvoyDescriptor>;
  /** Composite keys containing `*`, split on it, in the order of the file: the first that matches wins. */
  readonly wildcards: readonly { readonly compositeKey: string; readonly parts: readonly string[] }[];
}

export interface EnvoyDomain {
  readonly domain: string;
  /** The file it came from. */
  readonly source: string;
  readonly descriptors: DescriptorLevel;
}

/** Every domain of one file or a directory of files. */
export class EnvoyConfig {
  readonly domains: ReadonlyMap<string, EnvoyDomain>;

  constructor(
    domains: Iterable<EnvoyDomain>,
    /** The file or directory read. */
    readonly source: string,
  ) {
    this.domains = new Map([...domains].map((domain) => [domain.domain, domain]));
  }
}

/** Whether a limit counts each window in one bucket (a fixed window, a calendar period), which frees all at once when it ends. */
export function countsInOneBucket(limit: Pick<EnvoyRateLimit, 'algorithm' | 'calendar'>): boolean {
  return limit.algorithm === 'fixed' || limit.calendar !== undefined;
}

/** The algorithms an Envoy rate_limit may name: windows of time, as envoyproxy/ratelimit counts. */
export type EnvoyAlgorithm = Extract<Algorithm, 'fixed' | 'sliding'>;
