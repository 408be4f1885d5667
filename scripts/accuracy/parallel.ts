import { Worker } from 'node:worker_threads';
import type { SchemeResult, StoreChoice } from './scheme-replay.js';
import type { Scheme } from './schemes.js';
import type { TimedRequest } from './traffic.js';

/** What every scheme of a run shares: plain data, sent to each worker as it is. */
export interface RunSettings {
  readonly limit: number;
  /** Seconds. */
  readonly window: number;
  readonly schemes: readonly Scheme[];
  readonly store?: StoreChoice;
}

/** What a replay worker is given: requests as typed arrays (cheap to send), and its schemes. */
export interface WorkerTask {
  readonly ms: Float64Array;
  readonly featureIds: Uint32Array;
  readonly features: readonly string[];
  readonly truth: Uint8Array;
  readonly options: RunSettings;
}

/** From the pool to a worker: replay this scheme (an index into options.schemes), or stop. */
export type PoolMessage = { readonly type: 'replay'; readonly scheme: number } | { readonly type: 'stop' };

/** From a worker to the pool. */
export type WorkerMessage =
  | { readonly type: 'progress'; readonly scheme: number; readonly done: number }
  | { readonly type: 'result'; readonly scheme: number; readonly result: SchemeResult };

/**
 * Replays the schemes on `workers` threads; the exact log's decisions (`truth`) are
 * computed once by the caller. Each idle worker takes the next scheme, finest buckets
 * (the costliest) first, so no thread is left with all the slow ones. Results come back
 * in scheme order.
 */
export async function replayInWorkers(
  requests: readonly TimedRequest[],
  truth: Uint8Array,
  options: RunSettings & { readonly workers: number },
  progress: (scheme: number, done: number) => void,
): Promise<SchemeResult[]> {
  const ids = new Map<string, number>();
  const featureIds = new Uint32Array(requests.length);
  const ms = new Float64Array(requests.length);
  requests.forEach((request, i) => {
    let id = ids.get(request.feature);
    if (id === undefined) ids.set(request.feature, (id = ids.size));
    featureIds[i] = id;
    ms[i] = request.ms;
  });
  // Functions cannot cross into a worker; only the data of the options goes.
  const shared: RunSettings = {
    limit: options.limit,
    window: options.window,
    schemes: options.schemes,
    ...(options.store ? { store: options.store } : {}),
  };
  const task: WorkerTask = { ms, featureIds, features: [...ids.keys()], truth, options: shared };
  const queue = options.schemes
    .map((_scheme, i) => i)
    .sort((a, b) => (options.schemes[a]?.granularity ?? 0) - (options.schemes[b]?.granularity ?? 0));
  const results = new Array<SchemeResult>(options.schemes.length);
  const threads = Math.min(options.workers, queue.length);
  await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<void>((resolve, reject) => {
          const worker = new Worker(new URL('./replay-worker.mjs', import.meta.url), { workerData: task });
          const next = () => {
            const scheme = queue.shift();
            worker.postMessage(
              scheme === undefined
                ? ({ type: 'stop' } satisfies PoolMessage)
                : ({ type: 'replay', scheme } satisfies PoolMessage),
            );
          };
          worker.on('message', (message: WorkerMessage) => {
            if (message.type === 'progress') {
              progress(message.scheme, message.done);
            } else {
              results[message.scheme] = message.result;
              next();
            }
          });
          worker.once('error', reject);
          worker.once('exit', (code) => {
            if (code === 0) resolve();
            else reject(new Error(`replay worker exited with ${code}`));
          });
          next();
        }),
    ),
  );
  return results;
}
