// Global setup of the integration projects (vitest.config.ts): what every test file of a run
// shares, made once however many projects ask for it. dist/ is built (service processes start
// `node dist/main.js`, as `npm start` does, instead of compiling src/ each time), and one
// memcached serves every test that can share one (each uses keys of its own, uniquePrefix());
// tests that stop, pause or measure a server start their own.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
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
  users: number;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The run's one start, whichever project's setup came first (all run in this one process). */
const holder: { run?: Promise<SharedRun> } = ((globalThis as { memgateSharedRun?: object }).memgateSharedRun ??= {});

async function start(): Promise<SharedRun> {
  // Every package (memgate's dist/, memgate-client's and memgate-limiter's), as an install's prepare builds them.
  await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: ROOT }).catch((error: unknown) => {
    const output = (error as { stdout?: string }).stdout ?? '';
    throw new Error(`building dist/ for the tests failed (npm run build):\n${output}`, { cause: error });
  });
  return { memcached: await startMemcached(), users: 0 };
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
    await run.memcached.stop();
  };
}
