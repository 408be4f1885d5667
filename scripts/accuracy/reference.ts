/**
 * The exact limiters the accuracy lab measures memgate against. They keep every admitted
 * request (a sliding log) or an exact count per window, so they are correct by
 * construction and cost memory no production limiter could afford; and an exact token
 * bucket, which memgate's must match decision for decision.
 */

export interface ReferenceLimit {
  readonly limit: number;
  /** Seconds. */
  readonly window: number;
}

export interface ReferenceLimiter {
  /** Admits a request of `cost` by `feature` at `ms` iff every limit has room; denied requests are not counted. */
  check(feature: string, ms: number, cost?: number): boolean;
}

/** Requests inside one window, oldest first, with their running sum. */
export class WindowLog {
  private times: number[] = [];
  private costs: number[] = [];
  private head = 0;
  sum = 0;

  /** Forgets requests at or before `cutoffMs`: the window is (t − W, t]. */
  evict(cutoffMs: number): void {
    while (this.head < this.times.length && (this.times[this.head] as number) <= cutoffMs) {
      this.sum -= this.costs[this.head] as number;
      this.head++;
    }
    // Drop the consumed prefix now and then, so memory follows the window, not the trace.
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.costs = this.costs.slice(this.head);
      this.head = 0;
    }
  }

  add(ms: number, cost: number): void {
    this.times.push(ms);
    this.costs.push(cost);
    this.sum += cost;
  }
}

/** The exact sliding log: a request at t fits a limit iff the cost admitted in (t − W, t], in milliseconds, plus its own is at most the limit. */
export function slidingLog(limits: readonly ReferenceLimit[]): ReferenceLimiter {
  const logs = new Map<string, WindowLog[]>();
  return {
    check(feature, ms, cost = 1) {
      let featureLogs = logs.get(feature);
      if (!featureLogs) {
        featureLogs = limits.map(() => new WindowLog());
        logs.set(feature, featureLogs);
      }
      let fits = true;
      for (const [i, { limit, window }] of limits.entries()) {
        const log = featureLogs[i] as WindowLog;
        log.evict(ms - window * 1000);
        if (log.sum + cost > limit) fits = false;
      }
      if (fits) for (const log of featureLogs) log.add(ms, cost);
      return fits;
    },
  };
}

/** Exact epoch-aligned fixed windows: one count per window, reset when the window changes. */
export function fixedWindows(limits: readonly ReferenceLimit[]): ReferenceLimiter {
  const counts = new Map<string, { window: number; sum: number }[]>();
  return {
    check(feature, ms, cost = 1) {
      let featureCounts = counts.get(feature);
      if (!featureCounts) {
        featureCounts = limits.map(() => ({ window: Number.NaN, sum: 0 }));
        counts.set(feature, featureCounts);
      }
      const current = limits.map(({ window }, i) => {
        const count = featureCounts[i] as { window: number; sum: number };
        const index = Math.floor(ms / (window * 1000));
        if (count.window !== index) Object.assign(count, { window: index, sum: 0 });
        return count;
      });
      const fits = current.every((count, i) => count.sum + cost <= (limits[i] as ReferenceLimit).limit);
      if (fits) for (const count of current) count.sum += cost;
      return fits;
    },
  };
}

/**
 * An exact token bucket, as the leaky bucket GCRA is equivalent to: per feature, a level of
 * tokens refilled continuously at `count` every `periodSeconds` up to `burst`, from which a
 * request takes `cost` when it holds that many. Kept in whole units (a token is the period in
 * milliseconds, and each millisecond refills `count` of them), so it is exact: memgate keeps
 * a theoretical arrival time instead, in microseconds, and the two must agree.
 */
export function tokenBucket(
  rate: { readonly count: number; readonly periodSeconds: number },
  burst: number,
): ReferenceLimiter {
  const token = rate.periodSeconds * 1000;
  const full = burst * token;
  const buckets = new Map<string, { level: number; ms: number }>();
  return {
    check(feature, ms, cost = 1) {
      let bucket = buckets.get(feature);
      if (!bucket) buckets.set(feature, (bucket = { level: full, ms }));
      bucket.level = Math.min(full, bucket.level + (ms - bucket.ms) * rate.count);
      bucket.ms = ms;
      if (bucket.level < cost * token) return false;
      bucket.level -= cost * token;
      return true;
    },
  };
}

/** Tracks, per feature, the most admitted in any window (t − W, t]: the peak is always at an admission. */
export function worstWindowTracker(
  limit: number,
  window: number,
): { admit(feature: string, ms: number): void; worst(): number } {
  const logs = new Map<string, WindowLog>();
  let worst = 0;
  return {
    admit(feature, ms) {
      let log = logs.get(feature);
      if (!log) logs.set(feature, (log = new WindowLog()));
      log.evict(ms - window * 1000);
      log.add(ms, 1);
      worst = Math.max(worst, log.sum);
    },
    worst: () => worst / limit,
  };
}
