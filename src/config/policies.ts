import { extname } from 'node:path';
import { DEFAULTS } from './defaults.js';
import { asRecord, compareRanks, formatPath, pathOf, rankIn, valueAt, type SchemaError } from './document-order.js';
import {
  CALENDAR_NOMINAL_SECONDS,
  CALENDAR_WINDOWS,
  calendarWindowOf,
  type CalendarWindow,
} from './calendar-window.js';
import { formatDuration, parseDuration } from './duration.js';
import { parseZonedTime } from './iso-time.js';
import { textBoundsProblem } from './policy-bounds.js';
import { readBoundedText } from './policy-files.js';
import { describeMatch, sameClientNote, parseClientLists, parseClientMatch, reportMatchProblems, type ClientMatch } from './feature-match.js';
import { missedAtGate, parseGateway, type GatewayPolicy, type RawGateway } from './gateway-policy.js';
import { MAX_CLIENT_RULES_PER_FILE, MAX_LIMIT, policyFileSchema } from './policy-schema.js';
import { validatePolicyShape } from './policy-shape-validator.js';
import { parseYamlText, YamlTextError } from './policy-yaml.js';

/**
 * `sliding` (the default): the last `window` seconds, summed from buckets. `fixed`: windows
 * aligned to the epoch, or calendar periods. `token-bucket`: GCRA, a rate with a burst.
 * `concurrency`: at most `limit` requests in flight at once, each released when done.
 */
export type Algorithm = 'sliding' | 'fixed' | 'token-bucket' | 'concurrency';

/** A token bucket's rate: `count` tokens every `periodSeconds` (`10/s`, `600/1m`). */
export interface TokenRate {
  readonly count: number;
  readonly periodSeconds: number;
}

/**
 * How a sliding window counts its oldest bucket when the bucket lies partly outside the
 * window: `whole` counts it (never over-admits; the default), `drop` leaves it out (never
 * denies early; may over-admit by one bucket's requests), `weighted` counts the share of
 * it inside the window.
 */
export type Edge = 'whole' | 'drop' | 'weighted';

/**
 * What a check decides when the store cannot answer in time: `allow` (the default: an
 * outage of the rate limiter does not become an outage of the API) or `deny` (for events
 * where letting traffic through unchecked is the greater risk, such as logins).
 */
export type OnStoreError = 'allow' | 'deny';

/** One limit of an event, with durations in seconds. */
export interface LimitPolicy {
  /** Unique within its event; used in decisions and RateLimit headers. */
  readonly name: string;
  readonly limit: number;
  readonly window: number;
  /** Size of the finest bucket; equals `window` for fixed windows. */
  readonly granularity: number;
  /**
   * A calendar window (`window: 1d | 1w | 1mo` with `anchor` and `timezone`, fixed windows
   * only): periods from local midnight to local midnight; `window` is then the unit's nominal
   * length (CALENDAR_NOMINAL_SECONDS).
   */
  readonly calendar?: CalendarWindow | undefined;
  /**
   * A token bucket's rate (`algorithm: token-bucket`): `limit` is then its burst, the most
   * one moment may take, and `window` how long an empty bucket takes to fill, in whole seconds.
   */
  readonly rate?: TokenRate | undefined;
  /**
   * `mode: shadow` (the limit's, or its event's): decided and counted as if enforced, but
   * never refusing; the decision names it in `shadowDenied` when it would have.
   */
  readonly shadow?: true;
  /**
   * A concurrency limit (`algorithm: concurrency`): `limit` requests in flight at once;
   * `window` is its `timeout`, after which a request never released frees its slot.
   */
  readonly inFlight?: true;
}

/** Quota leases of an event (see docs/client.md#leases): off unless the event has a `lease` section. */
export interface LeasePolicy {
  /** Most units one lease may take. */
  readonly maxUnits: number;
  /** Seconds a client may spend a lease's units before it returns what is left. */
  readonly life: number;
}

/**
 * Limits of their own for the clients `match` names, in place of the event's `limits`: its
 * own `limits`, or a tier's. See docs/policies.md, "Per-client limits".
 */
/**
 * Reservations of an event (`reservations:`): a check may count a cost it does not know yet
 * (`reserve: N`) and settle it later with the actual one. Off unless the section is there.
 */
export interface ReservationPolicy {
  /** Seconds its holder has to settle a reservation; until then (and the grace) its buckets stay unsettled. */
  readonly life: number;
}

export interface OverridePolicy {
  readonly match: ClientMatch;
  readonly limits?: readonly LimitPolicy[] | undefined;
  readonly tier?: string | undefined;
  /** Milliseconds since the epoch from which it no longer applies: a temporary boost. */
  readonly until?: number | undefined;
}

export interface EventPolicy {
  readonly event: string;
  readonly algorithm: Algorithm;
  /** Treatment of the oldest, partly-outside bucket of each sliding limit. */
  readonly edge: Edge;
  readonly onStoreError: OnStoreError;
  readonly lease?: LeasePolicy | undefined;
  readonly reservations?: ReservationPolicy | undefined;
  /** In the order of the policy file: what applies to a client no override, tier or list names. */
  readonly limits: readonly LimitPolicy[];
  /** Named limit sets (free, pro, ...), in the file's order. */
  readonly tiers?: ReadonlyMap<string, readonly LimitPolicy[]> | undefined;
  /** In the file's order; the most specific match wins (config/feature-match.ts). */
  readonly overrides?: readonly OverridePolicy[] | undefined;
  /** Clients never limited: allowed without counting. */
  readonly allow?: readonly ClientMatch[] | undefined;
  /** Clients always refused, counting nothing. */
  readonly deny?: readonly ClientMatch[] | undefined;
}


/** A validated policy file: what createLimiter and the service run on. */
export class PolicySet {
  readonly events: ReadonlyMap<string, EventPolicy>;

  constructor(
    events: Iterable<EventPolicy>,
    /** Where the policies came from (a file path), for error messages and logs. */
    readonly source: string,
    readonly gateway?: GatewayPolicy,
    /**
     * What the file says that memgate takes but the operator should know, one line each, in
     * the file's order: rules that never match where they are used (an event's IPv6 address at
     * a /gate that counts IPv6 clients by their network). The service logs them at each load;
     * `memgate policies` prints them.
     */
    readonly warnings: readonly string[] = [],
  ) {
    this.events = new Map([...events].map((policy) => [policy.event, policy]));
  }
}

/** A policy file that cannot be used; `problems` lists every fault found, one line each. */
export class PolicyError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(`invalid policies in ${source}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'PolicyError';
  }
}

const DURATION_HINT = 'must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds';


/** One fault of a policy file, with where it is, so faults are listed in the file's order. */
interface Problem {
  /** Path of the fault in the document: `['events', 'login', 'limits', '0', 'window']`. */
  readonly path: readonly string[];
  readonly text: string;
}

/**
 * Validates a parsed policy document (the object form of the file). Every fault is
 * reported in one pass: the shape (keys, types, ranges) by the JSON schema, and what the
 * schema cannot say (durations, a granularity that divides its window, the gateway's
 * sources and routes) for every field whose shape is sound.
 */
export function parsePolicies(document: unknown, source = 'policies'): PolicySet {
  // validatePolicyShape was compiled ahead of time from policyFileSchema (npx tsx
  // scripts/policy-validator.ts): the library does not carry ajv. Its errors are ajv's, word for word.
  const shapeErrors = validatePolicyShape(document) ? [] : (validatePolicyShape.errors ?? []);
  const problems: Problem[] = shapeErrors.flatMap((error) => describeSchemaError(error, document));
  // A field the schema refused is not checked again: one fault, one line.
  const refused = shapeErrors.map((error) => pathOf(error).join('/'));
  const sound = (path: readonly string[]) => {
    const at = path.join('/');
    return !refused.some((p) => p === at || p.startsWith(`${at}/`));
  };
  const root = asRecord(document);
  const rawEvents = asRecord(root?.events) ?? {};
  const events: EventPolicy[] = [];
  for (const [event, value] of Object.entries(rawEvents)) {
    const parsed = parseEvent(event, asRecord(value), (path) => sound(['events', event, ...path]), (path, text) => {
      problems.push({ path: ['events', event, ...path], text: `event "${event}", field ${formatPath(path)}: ${text}` });
    });
    if (parsed) events.push(parsed);
  }
  const rawGateway = asRecord(root?.gateway);
  let gateway: GatewayPolicy | undefined;
  if (rawGateway) {
    const gatewayProblems: string[] = [];
    const fields = Object.keys(policyFileSchema.properties.gateway.properties) as (keyof RawGateway)[];
    // Fields of the wrong shape are left out, as if unset; checks that need them are skipped.
    const soundFields = Object.fromEntries(fields.filter((field) => sound(['gateway', field])).map((field) => [field, rawGateway[field]])) as RawGateway;
    const incomplete = new Set(fields.filter((field) => !sound(['gateway', field])));
    gateway = parseGateway(soundFields, new Set(Object.keys(rawEvents)), gatewayProblems, incomplete);
    problems.push(...gatewayProblems.map((text) => ({ path: ['gateway'], text })));
  }
  const rules = clientRules(root);
  if (rules > MAX_CLIENT_RULES_PER_FILE) {
    problems.push({
      path: [],
      text: `the file holds ${rules} client rules (overrides, allow and deny entries), more than the ${MAX_CLIENT_RULES_PER_FILE} a file may hold`,
    });
  }
  if (problems.length > 0 || !root) throw new PolicyError(source, inFileOrder(problems, document).map((problem) => problem.text));
  const warnings = gateway ? missedAtGateByEvents(events, gateway) : [];
  return new PolicySet(events, source, gateway, inFileOrder(warnings, document).map((warning) => warning.text));
}

/**
 * An event's rules that never match at /gate, when /gate names IPv6 clients by their network
 * (gateway-policy.ts, missedAtGate): warned, not refused, since a /check naming the address
 * itself still matches them. Only events /gate can count are looked at (its routes' and
 * unmatched's, or every event when a header names it).
 */
function missedAtGateByEvents(events: readonly EventPolicy[], gateway: GatewayPolicy): Problem[] {
  const routed =
    gateway.event.from === 'header'
      ? undefined
      : new Set([...gateway.routes.map((route) => route.event), ...(typeof gateway.unmatched === 'object' ? [gateway.unmatched.event] : [])]);
  const warnings: Problem[] = [];
  const warn = (event: string, path: readonly string[], match: ClientMatch) => {
    const missed = missedAtGate(match, gateway);
    if (!missed) return;
    const at = [...path, 'feature' in match ? 'feature' : 'cidr'];
    warnings.push({
      path: ['events', event, ...at],
      text: `event "${event}", field ${formatPath(at)}: ${missed}. Loaded: it matches at /check, which names the client as sent, never at /gate`,
    });
  };
  for (const policy of events) {
    if (routed && !routed.has(policy.event)) continue;
    policy.overrides?.forEach((override, index) => {
      warn(policy.event, ['overrides', String(index), 'match'], override.match);
    });
    for (const list of ['allow', 'deny'] as const)
      policy[list]?.forEach((match, index) => {
        warn(policy.event, [list, String(index)], match);
      });
  }
  return warnings;
}

/** The overrides and list entries of every event and of the gateway. */
function clientRules(root: Record<string, unknown> | undefined): number {
  const count = (value: unknown) => (Array.isArray(value) ? value.length : 0);
  const sections = [...Object.values(asRecord(root?.events) ?? {}), root?.gateway].map(asRecord);
  return sections.reduce((sum, section) => sum + count(section?.overrides) + count(section?.allow) + count(section?.deny), 0);
}

/**
 * One event's policy, or undefined when it cannot be built; `report` takes each fault with
 * its field's path under the event. Fields whose shape is not `sound` were refused by
 * the schema already and are not checked again.
 */
function parseEvent(
  event: string,
  raw: Record<string, unknown> | undefined,
  sound: (path: readonly string[]) => boolean,
  report: (path: readonly string[], text: string) => void,
): EventPolicy | undefined {
  if (!raw || !Array.isArray(raw.limits)) return undefined;
  // An algorithm the schema refused is unknown: nothing that depends on it is checked.
  const algorithm = sound(['algorithm']) ? ((raw.algorithm as Algorithm | undefined) ?? 'sliding') : undefined;
  if (algorithm === 'fixed' && raw.edge !== undefined && sound(['edge'])) {
    report(['edge'], 'applies to sliding windows only; a fixed window has no partial bucket');
  }
  if (algorithm === 'token-bucket' && raw.edge !== undefined && sound(['edge'])) {
    report(['edge'], 'applies to sliding windows only; a token bucket has no buckets of time');
  }
  const mode = sound(['mode']) ? (raw.mode as string | undefined) : undefined;
  const limits = parseLimitSet(event, mode, raw.limits as unknown[], ['limits'], algorithm, sound, report);
  const tiers = new Map<string, readonly LimitPolicy[]>();
  for (const [tier, value] of Object.entries(asRecord(raw.tiers) ?? {})) {
    const tierLimits = asRecord(value)?.limits;
    if (!Array.isArray(tierLimits)) continue;
    const parsed = parseLimitSet(event, mode, tierLimits, ['tiers', tier, 'limits'], algorithm, sound, report);
    if (parsed) tiers.set(tier, parsed);
  }
  const overrides = parseOverrides(event, mode, raw.overrides, new Set(Object.keys(asRecord(raw.tiers) ?? {})), algorithm, sound, report);
  const lists = parseClientLists({ allow: sound(['allow']) ? raw.allow : [], deny: sound(['deny']) ? raw.deny : [] }, report);
  // Only used when the file has no fault at all, so every field is sound by then.
  if (algorithm === undefined || !limits || !overrides || !lists) return undefined;
  const limitSets = [limits, ...tiers.values(), ...overrides.flatMap((o) => (o.limits ? [o.limits] : []))];
  if (algorithm === 'token-bucket') {
    // One value per client holds a bucket: a second bucket would need a second value swapped at once with it.
    if (limitSets.some((set) => set.length > 1)) {
      report(['limits'], 'a token-bucket event has one limit per set (its bucket); give another rate an event of its own');
      return undefined;
    }
    if (raw.lease !== undefined) {
      report(['lease'], 'applies to sliding and fixed windows; a token bucket is taken a request at a time');
      return undefined;
    }
  }
  if (algorithm === 'concurrency') {
    // One set of slots per client: two limits of one request in flight would each hold it.
    if (limitSets.some((set) => set.length > 1)) {
      report(['limits'], 'a concurrency event has one limit per set (its slots); give another limit an event of its own');
      return undefined;
    }
    for (const section of ['lease', 'reservations'] as const)
      if (raw[section] !== undefined) {
        report([section], 'applies to limits over time; a concurrency limit holds each request until it is released');
        return undefined;
      }
  }
  if (raw.lease !== undefined && limitSets.some((set) => set.some((limit) => limit.shadow))) {
    // A lease counts its units before they are spent: a limit that never refuses has nothing to lease.
    report(['lease'], 'cannot be combined with shadow limits; try the limits in shadow without the lease, then enforce them');
    return undefined;
  }
  const lease = raw.lease !== undefined && sound(['lease']) ? parseLease(asRecord(raw.lease) ?? {}, limitSets, report) : undefined;
  if (lease === null) return undefined;
  if (raw.reservations !== undefined && limitSets.some((set) => set.some((limit) => limit.shadow))) {
    report(['reservations'], 'cannot be combined with shadow limits: a limit that never refuses has nothing to reserve');
    return undefined;
  }
  const reservations =
    raw.reservations !== undefined && sound(['reservations'])
      ? parseReservations(asRecord(raw.reservations) ?? {}, limitSets, algorithm, report)
      : undefined;
  if (reservations === null) return undefined;
  const edge = (raw.edge as Edge | undefined) ?? 'whole';
  const onStoreError = (raw.onStoreError as OnStoreError | undefined) ?? 'allow';
  return {
    event,
    algorithm,
    edge,
    onStoreError,
    limits,
    ...(lease ? { lease } : {}),
    ...(reservations ? { reservations } : {}),
    ...(tiers.size > 0 ? { tiers } : {}),
    ...(overrides.length > 0 ? { overrides } : {}),
    ...(lists.allow.length > 0 ? { allow: lists.allow } : {}),
    ...(lists.deny.length > 0 ? { deny: lists.deny } : {}),
  };
}

/**
 * A list of limits (the event's, a tier's or an override's), or undefined when any is faulty;
 * `at` is the list's path under the event. A limit without a name is `<event>-<window>`.
 */
function parseLimitSet(
  event: string,
  eventMode: string | undefined,
  raw: readonly unknown[],
  at: readonly string[],
  algorithm: Algorithm | undefined,
  sound: (path: readonly string[]) => boolean,
  report: (path: readonly string[], text: string) => void,
): LimitPolicy[] | undefined {
  const limits: LimitPolicy[] = [];
  raw.forEach((value, index) => {
    const rawLimit = asRecord(value);
    if (!rawLimit) return;
    const path = (field: string) => [...at, String(index), field];
    const required = algorithm === 'token-bucket' ? ['rate'] : algorithm === 'concurrency' ? ['limit'] : ['limit', 'window'];
    const missing = required.filter((key) => rawLimit[key] === undefined);
    if (algorithm !== undefined && missing.length > 0) {
      for (const key of missing) report([...at, String(index)], `missing required key "${key}"`);
      return;
    }
    const limit = parseLimit(rawLimit, algorithm, (field) => sound(path(field)), (field, message) => {
      report(path(field), message);
    });
    if (!limit || !sound(path('name'))) return;
    const mode = (rawLimit.mode as string | undefined) ?? eventMode;
    limits.push({
      ...limit,
      name: (rawLimit.name as string | undefined) ?? `${event}-${windowWord(limit)}`,
      ...(mode === 'shadow' ? { shadow: true as const } : {}),
    });
  });
  const seen = new Set<string>();
  limits.forEach((limit, index) => {
    if (seen.has(limit.name)) {
      report([...at, String(index), 'name'], `"${limit.name}" is used by another limit of this set; give each limit a distinct name`);
    }
    seen.add(limit.name);
  });
  return limits.length === raw.length ? limits : undefined;
}

/** An ISO 8601 time with its zone: a boost must not end at a time that depends on where memgate runs. */

/** An event's overrides, or undefined when any is faulty. */
function parseOverrides(
  event: string,
  eventMode: string | undefined,
  raw: unknown,
  /** The tiers the event names, faulty or not. */
  tiers: ReadonlySet<string>,
  algorithm: Algorithm | undefined,
  sound: (path: readonly string[]) => boolean,
  report: (path: readonly string[], text: string) => void,
): OverridePolicy[] | undefined {
  if (!Array.isArray(raw) || !sound(['overrides'])) return raw === undefined ? [] : undefined;
  const overrides: OverridePolicy[] = [];
  const matched = new Set<string>();
  let faulty = false;
  for (const [index, value] of (raw as unknown[]).entries()) {
    const at = ['overrides', String(index)];
    const entry = asRecord(value);
    if (!entry || !sound(at)) {
      faulty = true;
      continue;
    }
    const problems: string[] = [];
    const match = sound([...at, 'match']) ? parseClientMatch(entry.match, 'match', problems) : undefined;
    reportMatchProblems(problems, [...at], report);
    let limits: LimitPolicy[] | undefined;
    if ((entry.limits === undefined) === (entry.tier === undefined)) {
      report(at, 'give an override either limits of its own or a tier, not both or neither');
      faulty = true;
    } else if (Array.isArray(entry.limits)) {
      limits = parseLimitSet(event, eventMode, entry.limits, [...at, 'limits'], algorithm, sound, report);
      if (!limits) faulty = true;
    } else if (typeof entry.tier === 'string' && !tiers.has(entry.tier)) {
      const known = [...tiers];
      report([...at, 'tier'], `"${entry.tier}" is not a tier of this event; ${known.length > 0 ? `its tiers are ${known.join(', ')}` : 'it has no tiers'}`);
      faulty = true;
    }
    let until: number | undefined;
    if (entry.until !== undefined && sound([...at, 'until'])) {
      const text = entry.until as string;
      until = parseZonedTime(text) ?? Number.NaN;
      if (Number.isNaN(until)) {
        report([...at, 'until'], `must be an ISO 8601 time with its zone, on a day and at an hour that exist, such as 2026-12-31T23:59:59Z or 2026-12-31T18:00:00-05:00 (got ${JSON.stringify(text)})`);
        faulty = true;
      }
    }
    if (!match) {
      faulty = true;
      continue;
    }
    if (matched.has(describeMatch(match))) {
      report([...at, 'match'], `${describeMatch(match)} is matched by an override before this one${sameClientNote(match)}; which would apply is a guess`);
      faulty = true;
    }
    matched.add(describeMatch(match));
    overrides.push({ match, ...(limits ? { limits } : { tier: entry.tier as string }), ...(until !== undefined ? { until } : {}) });
  }
  return faulty ? undefined : overrides;
}


/**
 * An event's lease section, or null when it is faulty. A lease's units are counted at the
 * second it is taken and, once returned, its spent units at the second of the return: so
 * that a window never loses a spent unit early, a lease must end (with the grace for its
 * return) within every window of the event.
 */
function parseLease(
  raw: Record<string, unknown>,
  limitSets: readonly (readonly LimitPolicy[])[],
  report: (path: readonly string[], text: string) => void,
): LeasePolicy | null {
  let life: number | undefined = DEFAULTS.leaseLifeSeconds;
  if (raw.life !== undefined) {
    life = parseDuration(raw.life);
    if (life === undefined) {
      report(['lease', 'life'], `${DURATION_HINT} (got ${JSON.stringify(raw.life)})`);
      return null;
    }
  }
  if (life > DEFAULTS.leaseMaxLifeSeconds) {
    report(['lease', 'life'], `${formatDuration(life)} is longer than the ${DEFAULTS.leaseMaxLifeSeconds} s a lease may live`);
    return null;
  }
  const all = limitSets.flat();
  const limits = limitSets[0] ?? [];
  const shortest = Math.min(...all.map((limit) => limit.window));
  const held = life + DEFAULTS.leaseReturnGraceSeconds;
  if (all.length > 0 && held >= shortest) {
    report(
      ['lease', 'life'],
      `a lease of ${formatDuration(life)} (plus ${DEFAULTS.leaseReturnGraceSeconds} s for its return) must end within the shortest window${limitSets.length > 1 ? ' of the event, its tiers and overrides' : ''}, ${formatDuration(shortest)}`,
    );
    return null;
  }
  const tightest = Math.min(...limits.map((limit) => limit.limit));
  const maxUnits = (raw.maxUnits as number | undefined) ?? Math.max(1, Math.floor(tightest * DEFAULTS.leaseMaxUnitsShare));
  return { maxUnits: Math.min(maxUnits, tightest), life };
}

/** The longest a token bucket may take to fill: its value must live that long in Memcached. */
const MAX_FILL_SECONDS = 10 * 365 * 86_400;

const RATE_PATTERN = /^([0-9]+)\s*\/\s*([0-9]*)\s*([smhd])$/;
const RATE_UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/** `10/s`, `600/1m`, `5/10s`: tokens per period; undefined when not one. */
export function parseRate(value: unknown): TokenRate | undefined {
  const match = typeof value === 'string' ? RATE_PATTERN.exec(value.trim()) : null;
  if (!match) return undefined;
  const count = Number(match[1]);
  const periodSeconds = Number(match[2] === '' ? 1 : match[2]) * RATE_UNIT_SECONDS[match[3] as keyof typeof RATE_UNIT_SECONDS];
  const valid = (n: number) => Number.isSafeInteger(n) && n >= 1 && n <= MAX_LIMIT;
  return valid(count) && valid(periodSeconds) ? { count, periodSeconds } : undefined;
}

/** A rate as written back: `10/1s`, `600/1m`. */
export function formatRate({ count, periodSeconds }: TokenRate): string {
  return `${count}/${formatDuration(periodSeconds)}`;
}

/** A token bucket: `rate` and `burst` (default: one period's tokens). */
function parseTokenBucket(
  raw: Record<string, unknown>,
  sound: (field: string) => boolean,
  report: (field: string, message: string) => void,
): Omit<LimitPolicy, 'name'> | undefined {
  for (const field of ['limit', 'window', 'granularity', 'anchor', 'timezone'] as const)
    if (raw[field] !== undefined) {
      report(field, 'a token bucket takes rate and burst: rate: 10/s, burst: 50 is 10 a second on average, up to 50 at once');
      return undefined;
    }
  if (!sound('rate')) return undefined;
  const rate = parseRate(raw.rate);
  if (!rate) {
    report('rate', `must be tokens per period, such as 10/s, 600/1m or 5/10s (got ${JSON.stringify(raw.rate)})`);
    return undefined;
  }
  if (!sound('burst')) return undefined;
  const burst = (raw.burst as number | undefined) ?? rate.count;
  // How long an empty bucket takes to fill: what RateLimit-Policy's w says of it.
  const window = Math.max(1, Math.ceil((burst * rate.periodSeconds) / rate.count));
  if (window > MAX_FILL_SECONDS) {
    report('burst', `a bucket of ${burst} at ${formatRate(rate)} takes ${Math.round(window / 86_400 / 365)} years to fill; at most 10: raise the rate or lower the burst`);
    return undefined;
  }
  return { limit: burst, window, granularity: window, rate };
}

/**
 * A concurrency limit: `limit` requests in flight, and `timeout` (default 60 s, at most a day),
 * after which a request never released frees its slot.
 */
function parseConcurrency(
  raw: Record<string, unknown>,
  sound: (field: string) => boolean,
  report: (field: string, message: string) => void,
): Omit<LimitPolicy, 'name'> | undefined {
  for (const field of ['window', 'granularity', 'anchor', 'timezone', 'rate', 'burst'] as const)
    if (raw[field] !== undefined) {
      report(field, 'a concurrency limit takes limit and timeout: limit: 20, timeout: 30s is 20 requests in flight at once, each freed 30 s after it began if never released');
      return undefined;
    }
  if (!sound('limit') || !sound('timeout')) return undefined;
  const limit = raw.limit as number;
  let timeout: number = DEFAULTS.concurrencyTimeoutSeconds;
  if (raw.timeout !== undefined) {
    const parsed = parseDuration(raw.timeout);
    if (parsed === undefined) {
      report('timeout', `${DURATION_HINT} (got ${JSON.stringify(raw.timeout)})`);
      return undefined;
    }
    timeout = parsed;
  }
  if (timeout > DEFAULTS.concurrencyMaxTimeoutSeconds) {
    report('timeout', `${formatDuration(timeout)} is longer than the ${formatDuration(DEFAULTS.concurrencyMaxTimeoutSeconds)} a slot may be held`);
    return undefined;
  }
  if (limit > DEFAULTS.concurrencyMaxLimit) {
    report('limit', `${limit} requests in flight: at most ${DEFAULTS.concurrencyMaxLimit}, as every check reads each slot`);
    return undefined;
  }
  return { limit, window: timeout, granularity: timeout, inFlight: true };
}

/** A limit's window as a name says it: `1m`, a calendar window's word, `1mo`, or a rate's, `10per1s`. */
function windowWord(limit: Omit<LimitPolicy, 'name'>): string {
  if (limit.rate) return formatRate(limit.rate).replace('/', 'per');
  if (limit.inFlight) return 'inflight';
  const unit = limit.calendar?.unit;
  return Object.keys(CALENDAR_WINDOWS).find((word) => CALENDAR_WINDOWS[word] === unit) ?? formatDuration(limit.window);
}

const CALENDAR_HINT = 'calendar windows are 1d, 1w or 1mo with algorithm: fixed';

/**
 * An event's reservations section, or null when it is faulty. A settle takes the reserved cost
 * back from the buckets of the reservation's second, so that second must still count in every
 * window when the reservation ends (with the grace for a late settle).
 */
function parseReservations(
  raw: Record<string, unknown>,
  limitSets: readonly (readonly LimitPolicy[])[],
  algorithm: Algorithm,
  report: (path: readonly string[], text: string) => void,
): ReservationPolicy | null {
  // A token bucket has no windows: a settle moves its one value, whenever it comes.
  const windows = algorithm === 'token-bucket' ? [] : limitSets.flat().map((limit) => limit.window);
  const within = `the shortest window${limitSets.length > 1 ? ' of the event, its tiers and overrides' : ''}`;
  return reservationPolicyOf(raw.life, Math.min(...windows), within, (field, text) => { report(field === 'life' ? ['reservations', 'life'] : ['reservations'], text); },
  );
}

/**
 * A reservations section's life, or null when faulty (each fault told to `report`): policy
 * files' and Envoy files' one rule. The default is 5 minutes, or what fits `shortest` (the
 * window named `within`); at most an hour; and the life with its grace must end within it.
 */
export function reservationPolicyOf(
  rawLife: unknown,
  shortest: number,
  within: string,
  report: (field: 'section' | 'life', text: string) => void,
): ReservationPolicy | null {
  const grace = DEFAULTS.leaseReturnGraceSeconds;
  if (rawLife === undefined) {
    if (shortest <= grace + 1) {
      report('section', `no reservation fits ${within}, ${formatDuration(shortest)}: a reservation and the ${grace} s to settle it late must end within it`);
      return null;
    }
    return { life: Math.min(DEFAULTS.reservationLifeSeconds, shortest - grace - 1) };
  }
  const life = parseDuration(rawLife);
  if (life === undefined) {
    report('life', `${DURATION_HINT} (got ${JSON.stringify(rawLife)})`);
    return null;
  }
  if (life > DEFAULTS.reservationMaxLifeSeconds) {
    report('life', `${formatDuration(life)} is longer than the ${formatDuration(DEFAULTS.reservationMaxLifeSeconds)} a reservation may live`);
    return null;
  }
  if (life + grace >= shortest) {
    report('life', `a reservation of ${formatDuration(life)} (plus ${grace} s to settle it late) must end within ${within}, ${formatDuration(shortest)}`);
    return null;
  }
  return { life };
}

function parseLimit(
  raw: Record<string, unknown>,
  algorithm: Algorithm | undefined,
  sound: (field: string) => boolean,
  report: (field: string, message: string) => void,
): Omit<LimitPolicy, 'name'> | undefined {
  if (algorithm === 'token-bucket') return parseTokenBucket(raw, sound, report);
  if (algorithm === 'concurrency') return parseConcurrency(raw, sound, report);
  if (raw.timeout !== undefined) {
    report('timeout', 'applies to algorithm: concurrency; a window counts `limit` per `window`');
    return undefined;
  }
  for (const field of ['rate', 'burst'] as const)
    if (raw[field] !== undefined) {
      report(field, 'applies to algorithm: token-bucket; a window counts `limit` per `window`');
      return undefined;
    }
  const limit = sound('limit') ? (raw.limit as number | undefined) : undefined;
  const calendar = parseCalendar(raw, algorithm, sound, report);
  if (calendar === null) return undefined;
  let window: number | undefined = calendar ? CALENDAR_NOMINAL_SECONDS[calendar.unit] : undefined;
  if (raw.window !== undefined && sound('window') && !calendar) {
    window = parseDuration(raw.window);
    if (window === undefined)
      report('window', `${DURATION_HINT} (got ${JSON.stringify(raw.window)})`);
  }
  let granularity: number | undefined = algorithm === 'fixed' ? window : 1;
  if (raw.granularity !== undefined && sound('granularity')) {
    if (algorithm === 'fixed') {
      report('granularity', 'applies to sliding windows only; a fixed window is one counter per window');
      return undefined;
    }
    granularity = parseDuration(raw.granularity);
    if (granularity === undefined) report('granularity', `${DURATION_HINT} (got ${JSON.stringify(raw.granularity)})`);
  }
  if (limit === undefined || window === undefined || granularity === undefined || algorithm === undefined) return undefined;
  if (window % granularity !== 0) {
    report('window', `${formatDuration(window)} is not a multiple of the granularity ${formatDuration(granularity)}`);
    return undefined;
  }
  return { limit, window, granularity, ...(calendar ? { calendar } : {}) };
}

/**
 * A limit's calendar window: undefined when it has none, null when it is faulty. `1w` and
 * `1mo` are always calendar windows; `1d` is one when given a time zone other than UTC (a UTC
 * day is the epoch-aligned `1d` memgate always counted, and keeps its counters).
 */
function parseCalendar(
  raw: Record<string, unknown>,
  algorithm: Algorithm | undefined,
  sound: (field: string) => boolean,
  report: (field: string, message: string) => void,
): CalendarWindow | undefined | null {
  const word = typeof raw.window === 'string' && sound('window') ? raw.window.trim() : undefined;
  const unit = word === undefined ? undefined : CALENDAR_WINDOWS[word];
  const anchored = raw.anchor !== undefined || raw.timezone !== undefined;
  if (unit === undefined || (unit === 'day' && !anchored)) {
    if (!anchored) return undefined;
    const field = raw.anchor !== undefined ? 'anchor' : 'timezone';
    report(field, `applies to calendar windows only (got window ${JSON.stringify(raw.window)}); ${CALENDAR_HINT}`);
    return null;
  }
  if (algorithm !== 'fixed') {
    if (algorithm !== undefined)
      report('window', `"${word}" is a calendar window: ${CALENDAR_HINT}; a sliding window is a duration such as 7d`);
    return null;
  }
  return calendarWindowOf(
    unit,
    { anchor: sound('anchor') ? raw.anchor : undefined, timezone: sound('timezone') ? raw.timezone : undefined },
    report,
  );
}

/** Reads and validates a YAML or JSON policy file. */
export async function loadPolicyFile(path: string): Promise<PolicySet> {
  return parsePolicyText(await readPolicyText(path), path);
}

/** A policy file's text; PolicyError when it cannot be read. */
export async function readPolicyText(path: string): Promise<string> {
  try {
    return await readBoundedText(path);
  } catch (error) {
    throw new PolicyError(path, [(error as Error).message]);
  }
}

/** Validates the text of a policy file: JSON when `source` ends in .json, else YAML. */
export function parsePolicyText(text: string, source: string): PolicySet {
  return parsePolicies(parsePolicyDocument(text, source), source);
}

/** The document a policy file's text holds (JSON when `source` ends in .json, else YAML), not yet validated. */
export function parsePolicyDocument(text: string, source: string): unknown {
  const json = extname(source).toLowerCase() === '.json';
  const unbounded = textBoundsProblem(text);
  if (unbounded !== undefined) throw new PolicyError(source, [unbounded]);
  try {
    return json ? JSON.parse(text) : parseYamlText(text);
  } catch (error) {
    if (!(error instanceof SyntaxError || error instanceof YamlTextError)) throw error;
    const message = error.message;
    throw new PolicyError(source, [`not valid ${json ? 'JSON' : 'YAML'}: ${json ? withLineAndColumn(message, text) : message}`]);
  }
}

/**
 * The gateway section (`section`, of a file whose events are `events`) that parsePolicies
 * accepted, built again: its matchers are
 * functions, which a structured clone (a parse in another thread) cannot carry.
 */
export function gatewayOf(section: unknown, events: Iterable<string>): GatewayPolicy | undefined {
  const raw = asRecord(section) as RawGateway | undefined;
  if (!raw) return undefined;
  const problems: string[] = [];
  const gateway = parseGateway(raw, new Set(events), problems);
  if (problems.length > 0) throw new PolicyError('gateway', problems);
  return gateway;
}

/**
 * JSON.parse's "… in JSON at position 77" as a person finds it in an editor, "… at line 3,
 * column 62", as the YAML parser says it.
 */
export function withLineAndColumn(message: string, text: string): string {
  const position = /\bat position (\d+)/.exec(message);
  if (!position) return message;
  const before = text.slice(0, Number(position[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return message.replace(/ in JSON at position \d+.*$|\bat position \d+.*$/s, ` at line ${line}, column ${column}`);
}

/** Where a key may appear in a policy file, and how a person names that place. */
type Place = 'top' | 'event' | 'limit' | 'gateway' | 'route';

const PLACE_NAMES: Record<Place, { long: string; short: string }> = {
  top: { long: 'the top level, beside events', short: 'the top level' },
  event: { long: 'the event', short: 'the event' },
  limit: { long: 'a limit (an item of limits)', short: 'a limit' },
  gateway: { long: 'the gateway section, at the top level', short: 'the gateway section' },
  route: { long: 'a route (an item of gateway.routes)', short: 'a route' },
};

/** The keys of each place, from the schema itself. */
const eventSchema = policyFileSchema.properties.events.additionalProperties;
const gatewaySchema = policyFileSchema.properties.gateway;
const PLACE_KEYS: Record<Place, readonly string[]> = {
  top: Object.keys(policyFileSchema.properties),
  event: Object.keys(eventSchema.properties),
  limit: Object.keys(eventSchema.properties.limits.items.properties),
  gateway: Object.keys(gatewaySchema.properties),
  route: Object.keys(gatewaySchema.properties.routes.items.properties),
};

function placeOf(path: readonly string[]): Place | undefined {
  const shape = path.map((segment, i) => (i === 1 && path[0] === 'events' ? '*' : /^[0-9]+$/.test(segment) ? '#' : segment)).join('/');
  const places: Record<string, Place> = { '': 'top', 'events/*': 'event', 'events/*/limits/#': 'limit', gateway: 'gateway', 'gateway/routes/#': 'route' };
  return places[shape];
}

/** For a known key in the wrong place: where it belongs. */
function placementHint(key: string, path: readonly string[]): string | undefined {
  const here = placeOf(path);
  if (here === undefined) return undefined;
  const homes = (Object.keys(PLACE_KEYS) as Place[]).filter((place) => place !== here && PLACE_KEYS[place].includes(key));
  if (homes.length === 0) return undefined;
  return `"${key}" belongs to ${homes.map((place) => PLACE_NAMES[place].long).join(' or ')}, not to ${PLACE_NAMES[here].short}`;
}


/** Turns a schema error into "event "login", field limits[0].limit: must be >= 1 (got 0)". */
function describeSchemaError(error: SchemaError, document: unknown): Problem[] {
  // A bad event name is reported once, by its propertyNames error, not again by the pattern inside it.
  if (error.propertyName !== undefined) return [];
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
  const got = () => JSON.stringify(valueAt(document, path));
  let message: string;
  if (error.keyword === 'additionalProperties') {
    const key = String(error.params.additionalProperty);
    const here = placeOf(path);
    const looksLikeEvent = here === 'top' && asRecord(valueAt(document, [key]))?.limits !== undefined;
    message = looksLikeEvent
      ? `unknown key "${key}": it looks like an event; events go under events:`
      : (placementHint(key, path) ?? `unknown key "${key}"${here ? `; ${PLACE_NAMES[here].short} takes ${PLACE_KEYS[here].join(', ')}` : ''}`);
  } else if (error.keyword === 'required') {
    message = `missing required key "${String(error.params.missingProperty)}"`;
  } else if (error.keyword === 'propertyNames') {
    const name = String(error.params.propertyName);
    return [{ path: pathOf(error), text: `event "${name}": event names are 1 to 64 letters, digits, "_", "." or "-"` }];
  } else if (error.keyword === 'type' && (path.at(-1) === 'window' || path.at(-1) === 'granularity')) {
    message = `${DURATION_HINT} (got ${got()})`;
  } else if (error.keyword === 'enum') {
    message = `must be one of ${(error.params.allowedValues as unknown[]).join(', ')} (got ${got()})`;
  } else if (error.keyword === 'type' && path.join('/') === 'gateway/trustedProxies') {
    message = `must be a number of proxies or a list of their addresses and CIDR ranges (got ${got()})`;
  } else if (error.keyword === 'pattern' && path.at(-1) === 'prefix') {
    message = `must be a path: a "/" then no spaces, "?" or "#" (got ${got()})`;
  } else if (error.keyword === 'minProperties' && path.join('/') === 'events') {
    return [{ path, text: 'field events: defines no events' }];
  } else {
    message = `${error.message ?? 'is invalid'} (got ${got()})`;
  }
  const at = pathOf(error);
  if (path[0] === 'events' && path[1] !== undefined) {
    const field = formatPath(path.slice(2));
    return [{ path: at, text: `event "${path[1]}"${field ? `, field ${field}` : ''}: ${message}` }];
  }
  return [{ path: at, text: `${path.length > 0 ? `field ${formatPath(path)}` : 'top level'}: ${message}` }];
}

/** Problems in the order of what they are about in the file; several about one field keep their order. */
function inFileOrder(problems: readonly Problem[], document: unknown): Problem[] {
  return problems
    .map((problem) => ({ problem, rank: rankIn(document, problem.path) }))
    .sort((a, b) => compareRanks(a.rank, b.rank))
    .map(({ problem }) => problem);
}


