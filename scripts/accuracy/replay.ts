import { randomBytes } from 'node:crypto';
import { createLimiter, type Limiter } from '../../src/counting/limiter.js';
import { bucketKey, counterKeyBase } from '../../src/counting/keys.js';
import { itemsPerFeature } from '../../src/counting/sizing.js';
import type { CounterStore } from '../../src/store/counter-store.js';
import { createEmbeddedStore } from '../../src/store/embedded-store.js';
import { createMemcachedStore } from '../../src/store/memcached/memcached-store.js';
import { replayInWorkers } from './parallel.js';
import { slidingLog, WindowLog } from './reference.js';
import { schemePolicies, type Scheme } from './schemes.js';
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

/** Where a scheme counts: plain data, so a worker thread can open its own. */
export type StoreChoice = { readonly kind: 'embedded' } | { readonly kind: 'memcached'; readonly servers: string };

export interface ReplayOptions {
  readonly limit: number;
  /** Seconds. */
  readonly window: number;
  readonly schemes: readonly Scheme[];
  /** The embedded store on the replay's clock by default. */
  readonly store?: StoreChoice;
  /** Worker threads to spread the schemes over; 1 (the default) replays in this thread. */
  readonly workers?: number;
  /** Called now and then with how many scheme checks are done, over all schemes. */
  readonly onProgress?: (checksDone: number) => void;
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

/** What the exact sliding log decided for each request, and how it fared itself. */
export interface ReferenceRun {
  /** 1 where the exact log allowed the request. */
  readonly truth: Uint8Array;
  readonly allowed: number;
  readonly worstOverAdmission: number;
  readonly features: number;
}

export function replayReference(requests: readonly TimedRequest[], limit: number, window: number): ReferenceRun {
  const reference = slidingLog([{ limit, window }]);
  const admitted = overAdmissionTracker(limit, window);
  const truth = new Uint8Array(requests.length);
  const features = new Set<string>();
  let allowed = 0;
  requests.forEach(({ ms, feature }, i) => {
    features.add(feature);
    if (reference.check(feature, ms)) {
      truth[i] = 1;
      allowed++;
      admitted.admit(feature, ms);
    }
  });
  return { truth, allowed, worstOverAdmission: admitted.worst(), features: features.size };
}

/**
 * Replays requests, in time order, through one scheme's own memgate limiter (its own
 * store, a clock driven by the requests) and compares with the exact log's decisions.
 */
export async function replayScheme(
  requests: readonly TimedRequest[],
  truth: Uint8Array,
  scheme: Scheme,
  options: { readonly limit: number; readonly window: number; readonly store?: StoreChoice; readonly onProgress?: (done: number) => void },
): Promise<SchemeResult> {
  const { limit, window } = options;
  const clock = { ms: requests[0]?.ms ?? 0 };
  const now = () => clock.ms;
  const store: CounterStore =
    options.store?.kind === 'memcached' ? createMemcachedStore({ servers: options.store.servers }) : createEmbeddedStore({ now });
  // A prefix of its own, so schemes and runs can share one Memcached.
  const keyPrefix = `lab${randomBytes(6).toString('hex')}`;
  const limiter: Limiter = createLimiter({ policies: schemePolicies(scheme, limit, window), store, now, keyPrefix });
  const admitted = overAdmissionTracker(limit, window);
  let allowedCount = 0;
  let falseAllows = 0;
  let falseDenies = 0;
  try {
    for (const [index, { ms, feature }] of requests.entries()) {
      clock.ms = ms;
      const { allowed } = await limiter.check({ event: 'e', feature });
      if (allowed) {
        allowedCount++;
        admitted.admit(feature, ms);
        if (truth[index] === 0) falseAllows++;
      } else if (truth[index] === 1) {
        falseDenies++;
      }
      if (index % 10_000 === 9_999) options.onProgress?.(index + 1);
    }
  } finally {
    await store.close();
  }
  options.onProgress?.(requests.length);
  const plan = limiter.plans.get('e');
  if (!plan) throw new Error('scheme policy has no event e');
  const items = itemsPerFeature(plan.levels);
  // A representative key: an IPv4 client, the event name "login".
  const keyBytes = bucketKey(counterKeyBase('mg', 'login', '203.0.113.7'), plan.levels[0]?.size ?? window, 1_795_305_600).length;
  return {
    scheme,
    allowed: allowedCount,
    falseAllows,
    falseDenies,
    worstOverAdmission: admitted.worst(),
    keysPerCheck: plan.limits[0]?.keysPerCheck ?? { mean: 0, max: 0 },
    itemsPerFeature: items,
    bytesPerFeature: items * (ITEM_OVERHEAD_BYTES + keyBytes + 4),
  };
}

/**
 * Replays requests through the exact sliding log, then through every scheme, each on its
 * own store and clock; with `workers`, the schemes are spread over worker threads.
 */
export async function replay(requests: readonly TimedRequest[], options: ReplayOptions): Promise<ReplayResult> {
  const { limit, window, schemes } = options;
  const reference = replayReference(requests, limit, window);
  const done = new Array<number>(schemes.length).fill(0);
  const progress = (scheme: number, count: number) => {
    done[scheme] = count;
    options.onProgress?.(done.reduce((a, b) => a + b, 0));
  };
  const workers = options.workers ?? 1;
  let results: SchemeResult[] = [];
  if (workers > 1) {
    results = await replayInWorkers(requests, reference.truth, { ...options, workers }, progress);
  } else {
    for (const [i, scheme] of schemes.entries()) {
      const store = options.store ? { store: options.store } : {};
      const onProgress = (n: number) => {
        progress(i, n);
      };
      results.push(await replayScheme(requests, reference.truth, scheme, { limit, window, ...store, onProgress }));
    }
  }
  return {
    requests: requests.length,
    features: reference.features,
    referenceAllowed: reference.allowed,
    referenceWorstOverAdmission: reference.worstOverAdmission,
    schemes: results,
  };
}
