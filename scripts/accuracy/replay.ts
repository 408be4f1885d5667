import { replayInWorkers, type RunSettings } from './parallel.js';
import { slidingLog, worstWindowTracker } from './reference.js';
import { replayScheme, type SchemeResult, type StoreChoice } from './scheme-replay.js';
import type { TimedRequest } from './traffic.js';

export interface ReplayResult {
  readonly requests: number;
  readonly features: number;
  readonly referenceAllowed: number;
  readonly referenceWorstOverAdmission: number;
  readonly schemes: readonly SchemeResult[];
}

export interface ReplayOptions extends RunSettings {
  /** The embedded store on the replay's clock by default. */
  readonly store?: StoreChoice;
  /** Worker threads to spread the schemes over; 1 (the default) replays in this thread. */
  readonly workers?: number;
  /** Called now and then with how many scheme checks are done, over all schemes. */
  readonly onProgress?: (checksDone: number) => void;
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
  const admitted = worstWindowTracker(limit, window);
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
