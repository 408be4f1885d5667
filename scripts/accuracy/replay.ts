import { randomBytes } from 'node:crypto';
import { createLimiter, type Limiter } from '../../src/counting/limiter.js';
import { bucketKey, counterKeyBase } from '../../src/counting/keys.js';
import { itemsPerFeature } from '../../src/counting/sizing.js';
import type { CounterStore } from '../../src/store/counter-store.js';
import { createEmbeddedStore } from '../../src/store/embedded-store.js';
import { slidingLog, WindowLog } from './reference.js';
import type { Scheme } from './schemes.js';
import type { TimedRequest } from './traffic.js';

/** How one scheme fared against the exact sliding log on one traffic. */
export interface SchemeResult {
  readonly scheme: Scheme;
  readonly allowed: number;
  /** Allowed by the scheme, denied by the reference. */
  readonly falseAllows: number;
  /** Denied by the scheme, allowed by the reference. */
  readonly falseDenies: number;
  /** Most requests admitted in any true window of the limit's length, divided by the limit. */
  readonly worstOverAdmission: number;
  readonly keysPerCheck: { readonly mean: number; readonly max: number };
  readonly itemsPerFeature: number;
  /** Estimated Memcached memory of those items: item header, key and value. */
  readonly bytesPerFeature: number;
}

export interface ReplayResult {
  readonly requests: number;
  readonly features: number;
  readonly referenceAllowed: number;
  readonly referenceWorstOverAdmission: number;
  readonly schemes: readonly SchemeResult[];
}

export interface ReplayOptions {
  readonly limit: number;
  /** Seconds. */
  readonly window: number;
  readonly schemes: readonly Scheme[];
  /** A fresh store per scheme; the embedded store on the replay's clock by default. */
  readonly storeFor?: (now: () => number) => CounterStore;
  /** Called now and then with how many requests are done. */
  readonly onProgress?: (done: number) => void;
}

/** Memcached's per-item cost besides key and value (item header with CAS, CRLF). */
const ITEM_OVERHEAD_BYTES = 56;

/** Tracks, per feature, the most admitted in any window (t − W, t]: the peak is always at an admission. */
function overAdmissionTracker(limit: number, window: number): { admit(feature: string, ms: number): void; worst(): number } {
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

/**
 * Replays requests, in time order, through the exact sliding log and through every
 * scheme's own memgate limiter (its own store, the same driven clock), and compares.
 */
export async function replay(requests: readonly TimedRequest[], options: ReplayOptions): Promise<ReplayResult> {
  const { limit, window, schemes } = options;
  const clock = { ms: requests[0]?.ms ?? 0 };
  const now = () => clock.ms;
  const storeFor = options.storeFor ?? ((time: () => number) => createEmbeddedStore({ now: time }));
  const reference = slidingLog([{ limit, window }]);
  const referenceAdmitted = overAdmissionTracker(limit, window);
  // Each scheme counts under its own prefix, so they can share one Memcached.
  const runId = randomBytes(4).toString('hex');
  const runs = schemes.map((scheme, i) => {
    const store = storeFor(now);
    const limiter: Limiter = createLimiter({ policies: scheme.policies(limit, window), store, now, keyPrefix: `lab${runId}s${i}` });
    return { scheme, store, limiter, allowed: 0, falseAllows: 0, falseDenies: 0, admitted: overAdmissionTracker(limit, window) };
  });
  const features = new Set<string>();
  let referenceAllowed = 0;

  for (const [index, { ms, feature }] of requests.entries()) {
    clock.ms = ms;
    features.add(feature);
    const truth = reference.check(feature, ms);
    if (truth) {
      referenceAllowed++;
      referenceAdmitted.admit(feature, ms);
    }
    for (const run of runs) {
      const { allowed } = await run.limiter.check({ event: 'e', feature });
      if (allowed) {
        run.allowed++;
        run.admitted.admit(feature, ms);
        if (!truth) run.falseAllows++;
      } else if (truth) {
        run.falseDenies++;
      }
    }
    if (index % 10_000 === 0) options.onProgress?.(index);
  }
  options.onProgress?.(requests.length);

  const results = runs.map((run): SchemeResult => {
    const plan = run.limiter.plans.get('e');
    if (!plan) throw new Error('scheme policy has no event e');
    const [limitPlan] = plan.limits;
    const items = itemsPerFeature(plan.levels);
    // A representative key: an IPv4 client, the event name "login".
    const keyBytes = bucketKey(counterKeyBase('mg', 'login', '203.0.113.7'), plan.levels[0]?.size ?? window, 1_795_305_600).length;
    return {
      scheme: run.scheme,
      allowed: run.allowed,
      falseAllows: run.falseAllows,
      falseDenies: run.falseDenies,
      worstOverAdmission: run.admitted.worst(),
      keysPerCheck: limitPlan?.keysPerCheck ?? { mean: 0, max: 0 },
      itemsPerFeature: items,
      bytesPerFeature: items * (ITEM_OVERHEAD_BYTES + keyBytes + 4),
    };
  });
  await Promise.all(runs.map((run) => run.store.close()));
  return {
    requests: requests.length,
    features: features.size,
    referenceAllowed,
    referenceWorstOverAdmission: referenceAdmitted.worst(),
    schemes: results,
  };
}
