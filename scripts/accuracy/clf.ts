// The accuracy lab's reading of a Common Log Format trace: who and when, from memgate's own
// access-log reader (src/what-if/access-log.ts, which `memgate what-if` uses too).
import { parseAccessLine, parseAccessLog } from '../../src/what-if/access-log.js';
import type { TimedRequest } from './traffic.js';

/** Requests read from a log, and what could not be read. */
export interface ParsedLog {
  /** In time order. */
  readonly requests: TimedRequest[];
  readonly unparseable: number;
  /** The first unreadable line, to show the user what went wrong. */
  readonly firstUnparseable?: string;
}

/** One Common Log Format line as a request (host = feature), or undefined. */
export function parseClfLine(line: string): TimedRequest | undefined {
  const request = parseAccessLine(line);
  return request ? { ms: request.ms, feature: request.host } : undefined;
}

/** Every request of a Common Log Format text, in time order; bad lines are counted, not fatal. */
export function parseClf(text: string): ParsedLog {
  const log = parseAccessLog(text);
  return {
    requests: log.requests.map(({ ms, host }) => ({ ms, feature: host })),
    unparseable: log.unparseable,
    ...(log.firstUnparseable === undefined ? {} : { firstUnparseable: log.firstUnparseable }),
  };
}
