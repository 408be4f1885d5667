// The heap in use once its garbage is collected, for what measures a heap per client (the
// memory bench's worker, test/memory-estimate.test.ts). gc() is node's, exposed here at run
// time, so no caller needs node started with --expose-gc.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** The heap in use after two full collections: one may return with its sweeping still running, the heap then still counting its garbage. */
export function collectedHeap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}
