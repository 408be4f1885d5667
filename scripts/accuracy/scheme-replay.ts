// One scheme replayed through memgate's own limiter: what a replay worker thread runs, and
// what it sends back.
import { randomBytes } from 'node:crypto';
import { createLimiter, type Limiter } from '../../src/counting/limiter.js';
import { bucketKey, counterKeyBase, tokenBucketKey } from '../../src/counting/keys.js';
import { itemsPerFeature } from '../../src/counting/sizing.js';
import { partOf } from '../../src/counting/algorithms/parts.js';
import type { CounterStore } from '../../src/store/counter-store.js';
import { createEmbeddedStore } from '../../src/store/embedded-store.js';
import { createMemcachedStore } from '../../src/store/memcached/memcached-store.js';
import { worstWindowTracker } from './reference.js';
import { bucketWorstWindow, schemePolicies, type Scheme } from './schemes.js';
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
  /**
   * The most the scheme can admit in any true window, over the limit, where it is known
   * exactly: a token bucket's b + ⌈W/T⌉ − 1 (docs/accuracy.md).
   */
  readonly worstBound?: number;
  readonly keysPerCheck: { readonly mean: number; readonly max: number };
  readonly itemsPerFeature: number;
  /** Estimated Memcached memory of those items: item header, key and value. */
  readonly bytesPerFeature: number;
  /** Time spent inside the limiter's checks, in milliseconds: the replay less the lab's own work. */
  readonly limiterMs: number;
}

/** Where a scheme counts: plain data, so a worker thread can open its own. */
export type StoreChoice = { readonly kind: 'embedded' } | { readonly kind: 'memcached'; readonly servers: string };

/** A store of the kind chosen; the embedded one on the replay's clock `now`. */
export function openStore(choice: StoreChoice, now: () => number): CounterStore {
  // The lab stops at a Memcached that does not answer, saying so in its own line.
  return choice.kind === 'memcached'
    ? createMemcachedStore({ servers: choice.servers, logger: false })
    : createEmbeddedStore({ now });
}

/** Memcached's per-item cost besides key and value (item header with CAS, CRLF). */
const ITEM_OVERHEAD_BYTES = 56;

/**
 * Replays requests, in time order, through one scheme's own memgate limiter (its own
 * store, a clock driven by the requests) and compares with the exact log's decisions.
 */
export async function replayScheme(
  requests: readonly TimedRequest[],
  truth: Uint8Array,
  scheme: Scheme,
  options: {
    readonly limit: number;
    readonly window: number;
    readonly store?: StoreChoice;
    readonly onProgress?: (done: number) => void;
  },
): Promise<SchemeResult> {
  const { limit, window } = options;
  const clock = { ms: requests[0]?.ms ?? 0 };
  const now = () => clock.ms;
  const store = openStore(options.store ?? { kind: 'embedded' }, now);
  // A prefix of its own, so schemes and runs can share one Memcached.
  const keyPrefix = `lab${randomBytes(6).toString('hex')}`;
  const limiter: Limiter = createLimiter({ policies: schemePolicies(scheme, limit, window), store, now, keyPrefix });
  const admitted = worstWindowTracker(limit, window);
  let allowedCount = 0;
  let falseAllows = 0;
  let falseDenies = 0;
  let limiterMs = 0;
  try {
    for (const [index, { ms, feature }] of requests.entries()) {
      clock.ms = ms;
      const asked = performance.now();
      const { allowed, degraded } = await limiter.check({ event: 'e', feature });
      limiterMs += performance.now() - asked;
      // Decided without the store, by onStoreError: not what the scheme would decide.
      if (degraded)
        throw new Error(`${store.description} stopped answering while replaying ${JSON.stringify(scheme.name)}`);
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
  // A representative client: an IPv4 address, the event name "login".
  const base = counterKeyBase('mg', 'login', '203.0.113.7');
  const first = plan.limits[0];
  const bucket = first && 'emissionUs' in first ? first : undefined;
  // A token bucket keeps one value, its TAT in microseconds (16 digits); a counter about 4.
  const items = 'levels' in plan ? itemsPerFeature(plan.levels) : 1;
  const keyBytes =
    'levels' in plan
      ? bucketKey(base, plan.levels[0]?.size ?? window, 1_795_305_600).length
      : tokenBucketKey(base).length;
  const valueBytes = bucket ? 16 : 4;
  return {
    scheme,
    allowed: allowedCount,
    falseAllows,
    falseDenies,
    worstOverAdmission: admitted.worst(),
    ...(bucket ? { worstBound: bucketWorstWindow(bucket.burst, bucket.emissionUs, window) / limit } : {}),
    keysPerCheck: plan.limits[0] ? partOf(plan).limitSizing(plan.limits[0]).keysPerCheck : { mean: 0, max: 0 },
    itemsPerFeature: items,
    bytesPerFeature: items * (ITEM_OVERHEAD_BYTES + keyBytes + valueBytes),
    limiterMs,
  };
}
