/**
 * Thread priorities on Linux, where a nice value is a thread's, not its process's: setting a
 * pid's reaches its main thread alone. Used twice: the policy parse process lowers every thread
 * of its own (policy-parse-process.ts), and the service lowers its V8 helper threads below its
 * serving thread (main.ts), so that a collection's concurrent marking waits for a core where a
 * check would otherwise wait for it. Elsewhere (no /proc) only the calling thread is changed, or
 * nothing.
 */
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';

/** The lowest priority a thread can have. */
export const MAX_NICE = 19;

export interface ThreadNice {
  /** The nice value the threads get (-20 to 19). */
  readonly nice: number;
  /** Leave the calling thread (the process's main thread) as it is. */
  readonly exceptMain?: boolean;
}

/** Sets the nice value of the process's threads that exist now; answers how many were changed. */
export function setThreadsNice({ nice, exceptMain = false }: ThreadNice): number {
  let threads: string[];
  try {
    threads = readdirSync('/proc/self/task');
  } catch {
    threads = exceptMain ? [] : ['0']; // No /proc: this thread only (0 is the caller).
  }
  let changed = 0;
  for (const thread of threads) {
    if (exceptMain && Number(thread) === process.pid) continue;
    try {
      setPriority(Number(thread), nice);
      changed += 1;
    } catch {
      // Ended meanwhile, or not allowed here (a sandbox without setpriority): left as it is.
    }
  }
  return changed;
}
