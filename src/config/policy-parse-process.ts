/**
 * The process a load's files are parsed in (parse-apart.ts): the job arrives as the first
 * message, its answer leaves in parts, each sent when the serving process asks for the next.
 * It ends when the serving process ends it, or goes away.
 *
 * First it lowers its own priority to the nice value it was given, every thread of it: on
 * Linux a priority is a thread's, and V8's helper threads, which compile and collect for the
 * parse, are already running when this code starts (the serving process setting the pid's
 * would reach the main thread only).
 */
import { setThreadsNice } from './thread-priority.js';
import type { ParseJob } from './policy-parse-job.js';

const nice = Number(process.argv[2]);
if (Number.isInteger(nice)) setThreadsNice({ nice });

const { parseMessages } = await import('./policy-parse-job.js');

const send = (message: unknown) => {
  process.send?.(message);
};

process.once('message', (job: ParseJob) => {
  const messages = parseMessages(job);
  const sendNext = () => {
    const next = messages.next();
    if (!next.done) send(next.value);
  };
  process.on('message', sendNext);
  sendNext();
});
// The serving process ended without ending this one (killed outright): nothing is waiting.
process.on('disconnect', () => {
  process.exit(0);
});
