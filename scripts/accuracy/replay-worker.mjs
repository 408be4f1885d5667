// Entry of a replay worker thread: teach this thread TypeScript, then run the worker.
// (Node 20 does not apply `--import tsx` from a worker's execArgv before its entry loads.)
import { register } from 'tsx/esm/api';

register();
await import('./replay-worker.ts');
