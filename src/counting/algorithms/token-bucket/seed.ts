// A token bucket after a reload from sliding or fixed windows. The windows counted what each
// client was admitted; a bucket that started full would hand every client its whole burst
// again. So until the old windows have passed, a client with no bucket yet starts from what
// they hold: each admission they counted is a token taken (every bucket overlapping a window
// counted whole), the most any old limit counted. What the old windows no longer held is not
// known, as for a change of bucket sizes (windows/carry-over.ts).
import { DEFAULTS } from '../../../config/defaults.js';
import type { Context } from '../../context.js';
import { bucketKey } from '../../keys.js';
import type { EventPlan, ReloadCarry, TokenBucketLimitPlan, TokenBucketSeed } from '../../plan-types.js';
import type { BucketRun } from '../windows/buckets.js';
import { windowOf, type ReloadMoment } from '../windows/carry-over.js';

/** What a token bucket's plan keeps of the reload that made it: a seed from windows, or only the report. */
export interface TokenBucketCarry {
  readonly seed?: TokenBucketSeed | undefined;
  readonly carry?: ReloadCarry | undefined;
}

/** What a reload from `previous` to a token bucket keeps of its counts. */
export function tokenBucketCarry(previous: EventPlan, moment: ReloadMoment): TokenBucketCarry | undefined {
  if (previous.algorithm === 'token-bucket') return undefined;
  const spread = moment.spreadSeconds ?? DEFAULTS.reloadSpreadSeconds;
  if (previous.algorithm === 'concurrency')
    return {
      carry: {
        since: moment.second,
        exactAt: moment.second,
        how: 'not-carried',
        reasons: [
          'algorithm concurrency → token-bucket: requests in flight say nothing of tokens; clients start with a full bucket',
        ],
      },
    };
  const until = moment.second + spread + Math.max(...previous.limits.map(windowOf));
  const carry: ReloadCarry = {
    since: moment.second,
    exactAt: until,
    how: 'conservative',
    reasons: [
      `algorithm ${previous.algorithm} → token-bucket: a client's bucket starts less a token for each admission its old windows counted (each bucket that overlaps a window counted whole); what they no longer held is not known`,
    ],
  };
  return { seed: { previous, until, carry }, carry };
}

function keysOf(runs: readonly BucketRun[], base: string): string[] {
  const keys: string[] = [];
  for (const { size, start, count, calendar } of runs)
    for (let i = 0; i < count; i++) keys.push(bucketKey(base, calendar ? calendar.tag : size, start + i * size));
  return keys;
}

/**
 * The TAT (µs) a client's missing bucket starts from at `nowUs`: as many tokens taken as the
 * old windows counted for it, at most the burst; undefined (a full bucket) when they counted
 * nothing. One read of the old buckets, only for a client with no bucket during the seed.
 */
export async function seededTat(
  context: Context,
  seed: TokenBucketSeed,
  limit: TokenBucketLimitPlan,
  base: string,
  nowUs: number,
): Promise<number | undefined> {
  const second = Math.floor(nowUs / 1_000_000);
  const covers = seed.previous.limits.map((old) => keysOf(old.cover(second), base));
  const { read } = await context.store.incrementAndRead([], covers.flat());
  let at = 0;
  let taken = 0;
  for (const keys of covers) {
    let count = 0;
    for (let i = 0; i < keys.length; i++) count += read[at + i] ?? 0;
    at += keys.length;
    taken = Math.max(taken, Math.min(limit.burst, count));
  }
  return taken > 0 ? nowUs + taken * limit.emissionUs : undefined;
}
