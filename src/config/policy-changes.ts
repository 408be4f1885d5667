/**
 * What a reload changed, in words for its log line: events added and removed, and for each
 * event kept, its limits added, removed and changed (by name) and its other settings.
 */
import { describeMatch } from './feature-match.js';
import { allAtOnce } from './in-slices.js';
import type { EventPolicy, LimitPolicy, OverridePolicy, PolicySet } from './policies.js';

export interface PolicyChanges {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** `login: limit login-1m 5/60s → 10/60s; onStoreError allow → deny`, one per changed event. */
  readonly changed: readonly string[];
  /** The gateway section, when it differs. */
  readonly gateway: boolean;
}

export function policyChanges(before: PolicySet, after: PolicySet): PolicyChanges {
  return allAtOnce(policyChangeSteps(before, after));
}

/**
 * policyChanges a step at a time, for a reload on the serving thread (in-slices.ts): two
 * files of 20,000 overrides take tens of milliseconds to compare.
 */
export function* policyChangeSteps(before: PolicySet, after: PolicySet): Generator<void, PolicyChanges> {
  const added = [...after.events.keys()].filter((event) => !before.events.has(event));
  const removed = [...before.events.keys()].filter((event) => !after.events.has(event));
  const changed: string[] = [];
  for (const [event, next] of after.events) {
    const old = before.events.get(event);
    if (!old) continue;
    const parts = yield* eventChanges(old, next);
    if (parts.length > 0) changed.push(`${event}: ${parts.join('; ')}`);
    yield;
  }
  return { added, removed, changed, gateway: JSON.stringify(before.gateway) !== JSON.stringify(after.gateway) };
}

/** One line of changes, or `no change`. */
export function describeChanges({ added, removed, changed, gateway }: PolicyChanges): string {
  const parts = [
    ...(added.length > 0 ? [`events added: ${added.join(', ')}`] : []),
    ...(removed.length > 0 ? [`events removed: ${removed.join(', ')}`] : []),
    ...changed,
    ...(gateway ? ['gateway section changed'] : []),
  ];
  return parts.length > 0 ? parts.join(' | ') : 'no change';
}

function* eventChanges(before: EventPolicy, after: EventPolicy): Generator<void, string[]> {
  const parts: string[] = [];
  const limits = (policy: EventPolicy) => new Map(policy.limits.map((limit) => [limit.name, limit]));
  const [old, next] = [limits(before), limits(after)];
  for (const [name, limit] of next) {
    const was = old.get(name);
    if (!was) parts.push(`limit ${name} added (${shape(limit)})`);
    else if (shape(was) !== shape(limit)) parts.push(`limit ${name} ${shape(was)} → ${shape(limit)}`);
  }
  for (const name of old.keys()) if (!next.has(name)) parts.push(`limit ${name} removed`);
  for (const key of ['algorithm', 'edge', 'onStoreError'] as const) {
    if (before[key] !== after[key]) parts.push(`${key} ${before[key]} → ${after[key]}`);
  }
  if (JSON.stringify(before.lease) !== JSON.stringify(after.lease)) parts.push('lease changed');
  parts.push(...(yield* keyedChanges('tier', tierShapes(before), tierShapes(after))));
  parts.push(...(yield* keyedChanges('override', overrideShapes(before), overrideShapes(after))));
  for (const list of ['allow', 'deny'] as const) {
    const entries = (policy: EventPolicy) => new Map((policy[list] ?? []).map((match) => [describeMatch(match), '']));
    parts.push(...(yield* keyedChanges(list, entries(before), entries(after), { changedToo: false })));
  }
  return parts;
}

/** `override feature "acme" added (10/60s)`, `tier pro 100/60s → 200/60s`, `deny prefix "bot-" removed`. */
function* keyedChanges(
  kind: string,
  before: ReadonlyMap<string, string>,
  after: ReadonlyMap<string, string>,
  { changedToo = true } = {},
): Generator<void, string[]> {
  const parts: string[] = [];
  let unnamed = 0;
  let looked = 0;
  // A few named, the rest counted: 20,000 overrides changed at once made a log line of
  // megabytes, written while checks waited.
  const add = (part: () => string) => {
    if (parts.length < CHANGES_NAMED_PER_KIND) parts.push(part());
    else unnamed++;
  };
  for (const [key, shapeNow] of after) {
    const was = before.get(key);
    if (was === undefined) add(() => `${kind} ${key} added${shapeNow ? ` (${shapeNow})` : ''}`);
    else if (changedToo && was !== shapeNow) add(() => `${kind} ${key} ${was} → ${shapeNow}`);
    if (++looked % KEYS_PER_STEP === 0) yield;
  }
  for (const key of before.keys()) {
    if (!after.has(key)) add(() => `${kind} ${key} removed`);
    if (++looked % KEYS_PER_STEP === 0) yield;
  }
  if (unnamed > 0) parts.push(`${unnamed} more ${kind} changes`);
  return parts;
}

/** Changes of one kind (overrides, list entries) a reload's line names; the others it counts. */
const CHANGES_NAMED_PER_KIND = 10;

/** Keys compared between two looks at the clock. */
const KEYS_PER_STEP = 256;

const setShape = (limits: readonly LimitPolicy[]) => limits.map(shape).join(', ');

function tierShapes(policy: EventPolicy): Map<string, string> {
  return new Map([...(policy.tiers ?? [])].map(([tier, limits]) => [tier, setShape(limits)]));
}

/**
 * Each event's overrides in words, by their match, made once per event policy: the thread
 * that parses a file makes them (`knownOverrideShapes`), so that a reload of 20,000
 * overrides compares words on the serving thread instead of writing them there.
 */
const shapesOf = new WeakMap<EventPolicy, ReadonlyMap<string, string>>();

export function knownOverrideShapes(policy: EventPolicy, shapes: ReadonlyMap<string, string>): void {
  shapesOf.set(policy, shapes);
}

export function overrideShapes(policy: EventPolicy): ReadonlyMap<string, string> {
  const known = shapesOf.get(policy);
  if (known) return known;
  const shapeOf = ({ limits, tier, until }: OverridePolicy) =>
    `${limits ? setShape(limits) : `tier ${tier ?? ''}`}${until === undefined ? '' : ` until ${new Date(until).toISOString()}`}`;
  const shapes = new Map((policy.overrides ?? []).map((override) => [describeMatch(override.match), shapeOf(override)]));
  shapesOf.set(policy, shapes);
  return shapes;
}

/** `5/60s`, with the granularity when it is not the window's own. */
function shape({ limit, window, granularity, shadow }: LimitPolicy): string {
  return `${limit}/${window}s${granularity === window ? '' : ` by ${granularity}s`}${shadow ? ' (shadow)' : ''}`;
}
