// Replays schemes of a lab run on its own thread, one at a time as the pool hands them out
// (see parallel.ts).
import { parentPort, workerData } from 'node:worker_threads';
import type { PoolMessage, WorkerMessage, WorkerTask } from './parallel.js';
import { replayScheme } from './scheme-replay.js';

const task = workerData as WorkerTask;
const port = parentPort;
if (!port) throw new Error('replay-worker runs as a worker thread');
const post = (message: WorkerMessage) => {
  port.postMessage(message);
};
const requests = Array.from(task.ms, (ms, i) => ({ ms, feature: task.features[task.featureIds[i] ?? 0] ?? '' }));
const { limit, window, store } = task.options;

port.on('message', (message: PoolMessage) => {
  if (message.type === 'stop') {
    port.close();
    return;
  }
  const scheme = task.options.schemes[message.scheme];
  if (!scheme) throw new Error(`no scheme ${message.scheme}`);
  const onProgress = (done: number) => {
    post({ type: 'progress', scheme: message.scheme, done });
  };
  void replayScheme(requests, task.truth, scheme, { limit, window, ...(store ? { store } : {}), onProgress }).then(
    (result) => {
      post({ type: 'result', scheme: message.scheme, result });
    },
  );
});
