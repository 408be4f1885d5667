// What a reload keeps of what windows counted. A new policy set may read bucket sizes the old
// one never counted in (a granularity from 1 s to 10 s, a day window on a minute-only event):
// their buckets hold nothing from before the reload, so judging on them would hand every
// client a fresh allowance. For a transition after the reload, the event keeps counting in the
// old sizes too, and each limit is judged on a cover of *complete* buckets only (old sizes,
// which every instance counted all along, and new sizes from the moment every instance counts
// in them), any bucket that overlaps the window counted whole: an upper bound of what was
// admitted. Once the newest window has passed since then, the plan's own cover is exact again.
import { DEFAULTS } from '../../../config/defaults.js';
import { TTL_MARGIN_SECONDS } from '../../keys.js';
import type {
  CounterLevel,
  EventPlan,
  LevelHistory,
  ReloadCarry,
  Transition,
  WindowLimitPlan,
} from '../../plan-types.js';
import { bucketStart, levelName, type BucketRun } from './buckets.js';
import { bucketCarry } from './bucket-carry.js';
import { countedAt, type WindowCounters } from './plan.js';

/** When and how a reload is planned: its second (this instance's clock), the clocks' skew and how far apart instances may reload. */
export interface ReloadMoment {
  readonly second: number;
  readonly skewSeconds: number;
  /** How long instances sharing the counters may take to load the same files: DEFAULTS.reloadSpreadSeconds. */
  readonly spreadSeconds?: number | undefined;
}

/** The seconds back from now each level's buckets still hold: its TTL, less its size and the margin. */
function heldSeconds(level: CounterLevel): number {
  return level.ttlSeconds - level.size - TTL_MARGIN_SECONDS;
}

function sizeName(name: number | string): string {
  return typeof name === 'number' ? `${name} s` : name;
}

/** The longest window a limit covers (a calendar window's longest period). */
export function windowOf(limit: WindowLimitPlan): number {
  return limit.calendar ? Math.max(limit.policy.window, limit.levels[0] ?? 0) : limit.policy.window;
}

/**
 * The counters of an event after a reload from `previous`: unchanged when every size the new
 * limits read was counted and held long enough; otherwise the old sizes are counted beside the
 * new ones until the transition ends, and the limits are judged on complete buckets meanwhile.
 */
export function carryCounters(
  counters: WindowCounters,
  limits: readonly WindowLimitPlan[],
  previous: EventPlan,
  moment: ReloadMoment,
): WindowCounters {
  const R = moment.second;
  const spread = moment.spreadSeconds ?? DEFAULTS.reloadSpreadSeconds;
  const longestNew = Math.max(0, ...limits.map(windowOf));
  if (previous.algorithm === 'token-bucket') return { ...counters, ...bucketCarry(previous, longestNew, R, spread) };
  if (previous.algorithm !== 'sliding' && previous.algorithm !== 'fixed') {
    // A concurrency limit's state says nothing of buckets of time.
    return {
      ...counters,
      carry: {
        since: R,
        exactAt: R + spread + longestNew,
        how: 'not-carried',
        reasons: [
          `algorithm ${previous.algorithm} → ${counters.algorithm}: nothing it counted is read; clients start from zero`,
        ],
      },
    };
  }
  const completeFrom = R + spread + moment.skewSeconds;
  const before = previous.transition;
  const prevLevels = (before?.levels ?? previous.levels).filter((level) => countedAt(level, R));
  const prevByName = new Map(prevLevels.map((level) => [levelName(level), level]));
  const history = new Map<number | string, LevelHistory>();
  const fresh: string[] = [];
  const shortLived: string[] = [];
  let inherits = false;
  for (const level of counters.levels) {
    const name = levelName(level);
    const prev = prevByName.get(name);
    const inherited = before?.history.get(name);
    if (!prev) {
      history.set(name, { completeFrom });
      fresh.push(sizeName(name));
      continue;
    }
    const from = inherited?.completeFrom;
    const olderTtl = Math.min(prev.ttlSeconds, inherited?.olderTtl ?? Infinity);
    if (from !== undefined && from > R) inherits = true;
    // Buckets written before the reload live their old TTL: shorter than the new windows read them.
    if (olderTtl < level.ttlSeconds)
      shortLived.push(`${sizeName(name)} (kept ${olderTtl} s, read for ${level.ttlSeconds} s)`);
    history.set(name, { ...(from !== undefined && from > R ? { completeFrom: from } : {}), olderTtl });
  }
  // How far back the old counters still hold: their longest-lived size.
  const horizon = Math.max(0, ...prevLevels.map(heldSeconds));
  const reasons: string[] = [];
  if (fresh.length > 0) reasons.push(`sizes new to the reload: ${fresh.join(', ')}, counted from it on`);
  if (shortLived.length > 0) reasons.push(`sizes the old policies kept for less time: ${shortLived.join(', ')}`);
  if (inherits) reasons.push('an earlier reload is still in transition');
  if (reasons.length === 0) return counters; // every size read was counted, and kept as long: exact at once
  reasons.push(
    'until then each limit is judged on the buckets every instance counted, any that overlaps its window counted whole',
  );
  if (longestNew > horizon)
    reasons.push(
      `the old policies kept ${horizon} s of counts and the new windows read ${longestNew} s: admissions before that are not known`,
    );
  const latestFrom = Math.max(completeFrom, ...[...history.values()].map((h) => h.completeFrom ?? 0));
  const coverExact = Math.max(...limits.map((limit) => firstExactSecond(limit, latestFrom)));
  const exactAt = Math.max(coverExact, longestNew > horizon ? latestFrom + longestNew : R);
  const carry: ReloadCarry = { since: R, exactAt, how: 'conservative', reasons };
  // The old sizes the new limits do not read are counted until every instance's transition is
  // over (an instance that reloads up to `spread` later still reads them, up to a bucket later),
  // living as long as the new windows read them.
  const kept = new Set(counters.levels.map(levelName));
  const coarsest = Math.max(...counters.levels.map((level) => level.size), ...prevLevels.map((level) => level.size));
  const retiring = prevLevels
    .filter((level) => !kept.has(levelName(level)))
    .map((level): CounterLevel => {
      history.set(levelName(level), { olderTtl: level.ttlSeconds });
      return {
        ...level,
        ttlSeconds: Math.max(level.ttlSeconds, longestNew + level.size + TTL_MARGIN_SECONDS),
        countedUntil: exactAt + spread + coarsest,
      };
    });
  const levels = [...counters.levels, ...retiring].sort((a, b) => b.size - a.size);
  const transition: Transition = { carry, completeFrom: latestFrom, history, levels, skewSeconds: moment.skewSeconds };
  return { ...counters, levels, transition, carry };
}

/** The first second from which `limit`'s own cover reads only buckets that start at or after `from`. */
export function firstExactSecond(limit: WindowLimitPlan, from: number): number {
  const oldest = (now: number) => Math.min(...limit.cover(now).map((run) => run.start));
  // The oldest start of the cover never moves back as time goes on.
  let lo = from;
  let hi = from + 2 * (windowOf(limit) + Math.max(...limit.levels)) + 1;
  while (oldest(hi) < from) hi += hi - from;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (oldest(mid) >= from) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** A limit judged under a transition: before `exactAt`, on complete buckets, each counted whole. */
export function carriedLimit(limit: WindowLimitPlan, transition: Transition): WindowLimitPlan {
  const { exactAt } = transition.carry;
  return {
    ...limit,
    exactFrom: exactAt,
    cover: (now) => (now >= exactAt ? limit.cover(now) : carriedCover(limit, transition, now)),
    oldestWeight: (now) => (now >= exactAt ? limit.oldestWeight(now) : 1),
    // Never too early for a bucket of any size: its newest second leaves the window then.
    releaseAt: (start, size, now) =>
      now >= exactAt
        ? limit.releaseAt(start, size, now)
        : Math.max(limit.releaseAt(start, size, now), Math.min(start + size - 1, now) + windowOf(limit)),
  };
}

/**
 * The buckets an upper bound of `limit`'s window at `now` is summed from, newest first: from
 * the bucket holding `now` back to the window's first second (as the limit's own cover starts
 * it), each step the coarsest complete bucket that ends where the chosen ones begin. A bucket
 * reaching before the window is the last, counted whole. When no complete bucket holds a
 * second (the old counters no longer hold it), the older part is not known and not read.
 */
export function carriedCover(limit: WindowLimitPlan, transition: Transition, now: number): BucketRun[] {
  const first = Math.min(...limit.cover(now).map((run) => run.start));
  const levels = transition.levels.filter((level) => countedAt(level, now));
  const runs: BucketRun[] = [];
  let end = now + 1;
  let newest = true;
  while (end > first) {
    let inside: { level: CounterLevel; start: number; size: number } | undefined;
    let outside: typeof inside;
    let overlapping: typeof inside;
    for (const level of levels) {
      const { start, size } = bucketOf(level, end - 1);
      if (!complete(transition, level, start, now)) continue;
      const candidate = { level, start, size };
      if (!newest && start + size !== end) {
        overlapping = candidate; // the finest last: it overlaps least
        continue;
      }
      if (start >= first) {
        inside = candidate;
        break;
      }
      outside = candidate; // finer ones start later: the last reaches least before the window
    }
    const chosen = inside ?? outside ?? overlapping;
    if (!chosen) break;
    const last = runs[runs.length - 1];
    if (
      last &&
      !last.calendar &&
      !chosen.level.calendar &&
      last.size === chosen.size &&
      last.start === chosen.start + chosen.size
    ) {
      runs[runs.length - 1] = { size: last.size, start: chosen.start, count: last.count + 1 };
    } else {
      runs.push({
        size: chosen.size,
        start: chosen.start,
        count: 1,
        ...(chosen.level.calendar ? { calendar: chosen.level.calendar } : {}),
      });
    }
    if (chosen === outside) break;
    end = chosen.start;
    newest = false;
  }
  return runs;
}

function bucketOf(level: CounterLevel, second: number): { start: number; size: number } {
  return level.calendar
    ? level.calendar.periodAt(second)
    : { start: bucketStart(second, level.size), size: level.size };
}

/** Whether the bucket of `level` at `start` holds everything every instance counted in it, read at `now`. */
function complete(transition: Transition, level: CounterLevel, start: number, now: number): boolean {
  const history = transition.history.get(levelName(level));
  if (history?.completeFrom !== undefined) return start >= history.completeFrom;
  if (start >= transition.completeFrom) return true;
  // Written before the transition: it lives its old TTL from its first count at the earliest.
  const ttl = history?.olderTtl ?? level.ttlSeconds;
  return start + ttl > now + transition.skewSeconds;
}
