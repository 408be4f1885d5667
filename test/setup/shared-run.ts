// Global setup of the integration projects (vitest.config.ts): what every test file of a run
// shares, made once however many projects ask for it. dist/ is built (service processes start
// `node dist/main.js`, as `npm start` does, instead of compiling src/ each time), and one
// memcached serves every test that can share one (each uses keys of its own, uniquePrefix());
// tests that stop, pause or measure a server start their own. A memgate store keeps that
// memcached's clock for the whole run, as a running fleet does: a memgate started by a test
// agrees the clock others named at the first turn it sees, instead of waiting up to two more
// seconds for instances that a test just before it closed (src/store/memcached/server-clock.ts).
// It runs on a thread of its own (dist/'s store), away from this process's busy event loop,
// where it missed turns it should have named.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import type { TestProject } from 'vitest/node';
import { startMemcached, type TestMemcached } from '../helpers/memcached.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `host:port` of the memcached the run shares. */
    sharedMemcached: string;
  }
}

interface SharedRun {
  readonly memcached: TestMemcached;
  /** The thread whose store keeps the shared memcached's clock named, turn after turn. */
  readonly clockKeeper: Worker;
  users: number;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The clock keeper's thread: a Memcached store of dist/ on `workerData.servers`, its clock synchronized, then kept. */
const CLOCK_KEEPER = `
const { parentPort, workerData } = require('node:worker_threads');
import(workerData.store).then(async ({ createMemcachedStore }) => {
  const store = createMemcachedStore({ servers: workerData.servers });
  await store.clock.ready();
  parentPort.postMessage('ready');
});
`;

async function startClockKeeper(servers: string): Promise<Worker> {
  const store = pathToFileURL(`${ROOT}dist/store/memcached/memcached-store.js`).href;
  const worker = new Worker(CLOCK_KEEPER, { eval: true, workerData: { servers, store } });
  const [message] = (await Promise.race([once(worker, 'message'), once(worker, 'error')])) as unknown[];
  if (message !== 'ready') throw new Error('the clock keeper did not start', { cause: message });
  worker.unref();
  return worker;
}
/** The run's one start, whichever project's setup came first (all run in this one process). */
const holder: { run?: Promise<SharedRun> } = ((globalThis as { memgateSharedRun?: object }).memgateSharedRun ??= {});

/**
 * Set by `npm test` (scripts/test.mjs), which builds once before it starts two vitest runs: a
 * build of each at once would write the same files under the other's tests.
 */
const BUILT = 'DIST_BUILT_BY_NPM_TEST';

async function start(): Promise<SharedRun> {
  // Every package (memgate's dist/, memgate-client's and memgate-limiter's), as an install's prepare builds them.
  if (process.env[BUILT] !== '1')
    await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: ROOT }).catch((error: unknown) => {
      const output = (error as { stdout?: string }).stdout ?? '';
      throw new Error(`building dist/ for the tests failed (npm run build):\n${output}`, { cause: error });
    });
  const memcached = await startMemcached();
  const clockKeeper = await startClockKeeper(memcached.servers);
  return { memcached, clockKeeper, users: 0 };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Global setups of several projects run in this one process: the first starts, the rest share.
  holder.run ??= start();
  const run = await holder.run;
  run.users++;
  project.provide('sharedMemcached', run.memcached.servers);
  return async () => {
    run.users--;
    if (run.users > 0) return;
    delete holder.run;
    await run.clockKeeper.terminate();
    await run.memcached.stop();
  };
}
