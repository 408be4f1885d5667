/**
 * The process a load's files are parsed in (parse-apart.ts): the job arrives as the first
 * message, its answer leaves in parts, each sent when the serving process asks for the next.
 * It ends when the serving process ends it, or goes away.
 */
import type { ParseJob } from './policy-parse-job.js';
import { parseMessages } from './policy-parse-job.js';

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
