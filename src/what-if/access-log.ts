// Access logs in the Common and Combined Log Formats, as web servers write them:
//   host ident authuser [01/Aug/1995:00:00:01 -0400] "GET /path HTTP/1.0" 200 1839 ["referer" "agent"]
// Read for what a replay needs: who (the host), when (1 s resolution, its zone applied) and
// what (the request's method and target). Anything after the status is ignored. A log is read
// as it streams (readAccessLog), a line at a time, so what it holds does not grow with the file.
import { LineSplitter } from './line-splitter.js';
import { TimeOrder } from './time-order.js';

/** One request of a log. */
export interface LoggedRequest {
  /** Milliseconds since the epoch. */
  readonly ms: number;
  /** The first field: an address, or a name where the server resolved it. */
  readonly host: string;
  /** Absent when the request line could not be read (`"-"`, or garbage a scanner sent). */
  readonly method?: string;
  readonly target?: string;
  /** The log's own line number, from 1. */
  readonly line: number;
}

/** A log's requests in time order, and what could not be read. */
export interface AccessLog {
  readonly requests: LoggedRequest[];
  readonly unparseable: number;
  /** The first unreadable line, to show what went wrong. */
  readonly firstUnparseable?: string;
}

const MONTHS: Readonly<Record<string, number>> = {
  Jan: 0,
  Feb: 1,
  Mar: 2,
  Apr: 3,
  May: 4,
  Jun: 5,
  Jul: 6,
  Aug: 7,
  Sep: 8,
  Oct: 9,
  Nov: 10,
  Dec: 11,
};

const LINE =
  /^(\S+) \S+ \S+ \[(\d{2})\/([A-Z][a-z]{2})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})\](?: "((?:[^"\\]|\\.)*)")?/;

/** One line, or undefined when it is not an access log line. */
export function parseAccessLine(text: string, line = 0): LoggedRequest | undefined {
  const match = LINE.exec(text);
  if (!match) return undefined;
  const [, host = '', day, monthName = '', year, hour, minute, second, sign, zoneHours, zoneMinutes, request] = match;
  const month = MONTHS[monthName];
  if (month === undefined) return undefined;
  const local = Date.UTC(Number(year), month, Number(day), Number(hour), Number(minute), Number(second));
  // Date.UTC rolls 31 Feb over into March: refuse dates that do not exist.
  if (new Date(local).getUTCDate() !== Number(day) || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 60)
    return undefined;
  const offsetMs = (Number(zoneHours) * 60 + Number(zoneMinutes)) * 60_000 * (sign === '-' ? -1 : 1);
  const [method, target] = request?.split(' ') ?? [];
  return {
    ms: local - offsetMs,
    host,
    line,
    ...(method && target?.startsWith('/')
      ? { method, target }
      : target?.includes('://') && method
        ? { method, target }
        : {}),
  };
}

/** Every request of a log's text, in time order; bad lines are counted, not fatal. For a log in memory (the accuracy lab's traces); a file is read with readAccessLog. */
export function parseAccessLog(text: string): AccessLog {
  const requests: LoggedRequest[] = [];
  let unparseable = 0;
  let firstUnparseable: string | undefined;
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    const request = parseAccessLine(line, index + 1);
    if (request) requests.push(request);
    else {
      unparseable++;
      firstUnparseable ??= line.slice(0, 200);
    }
  });
  // Servers log at completion, so lines can be slightly out of order; equal times keep the log's order.
  requests.sort((a, b) => a.ms - b.ms || a.line - b.line);
  return { requests, unparseable, ...(firstUnparseable === undefined ? {} : { firstUnparseable }) };
}

/** Why a line of the log is not replayed. */
export type SkipReason = 'too long' | 'not an access log line' | 'out of time order';

/** The lines of a log skipped for one reason. */
export interface SkippedLines {
  readonly lines: number;
  /** The first one's line number, from 1. */
  readonly firstLine: number;
  /** What the first one begins with, but for a line too long. */
  readonly firstText?: string;
}

/** What reading a log found, besides its requests. */
export interface AccessLogSummary {
  /** Requests read and replayed. */
  readonly requests: number;
  /** Milliseconds since the epoch of the first and last request, when there was one. */
  readonly firstMs?: number;
  readonly lastMs?: number;
  readonly skipped: Readonly<Partial<Record<SkipReason, SkippedLines>>>;
}

export interface ReadAccessLogOptions {
  /** A longer line is skipped (and counted) as it streams by. */
  readonly maxLineBytes: number;
  /** How far behind the newest line a line may be and still be put in its place (see TimeOrder). */
  readonly reorderMs: number;
  /** The most the lines held for that may weigh. */
  readonly reorderBytes: number;
  /** Given each request, in time order, equal times in the order of the log. */
  readonly onRequest: (request: LoggedRequest) => void;
  /** Told the bytes read so far after each chunk, for progress. */
  readonly onBytesRead?: (bytes: number) => void;
}

/** What a held request weighs beyond its line's text: the object, its strings' headers, the queue's slot. */
const HELD_REQUEST_BYTES = 200;
/** What is kept of a line that could not be read, to show what went wrong. */
const EXCERPT_CHARACTERS = 200;

/**
 * Reads a log from its bytes as they stream in, handing on its requests in time order: what it
 * holds is one line and the lines being put back in order, whatever the log's size. A line too
 * long, one that is not an access log line, and one too far out of time order are skipped and
 * counted, never fatal.
 */
export async function readAccessLog(
  input: AsyncIterable<Buffer>,
  options: ReadAccessLogOptions,
): Promise<AccessLogSummary> {
  const skipped: Partial<Record<SkipReason, SkippedLines>> = {};
  const skip = (reason: SkipReason, line: number, text?: string) => {
    const before = skipped[reason];
    skipped[reason] = before
      ? { ...before, lines: before.lines + 1 }
      : { lines: 1, firstLine: line, ...(text === undefined ? {} : { firstText: text.slice(0, EXCERPT_CHARACTERS) }) };
  };
  const seen = { requests: 0, firstMs: undefined as number | undefined, lastMs: undefined as number | undefined };
  const order = new TimeOrder<LoggedRequest>({
    holdMs: options.reorderMs,
    holdBytes: options.reorderBytes,
    release: (request) => {
      seen.requests++;
      seen.firstMs ??= request.ms;
      seen.lastMs = request.ms;
      options.onRequest(request);
    },
  });
  const splitter = new LineSplitter(options.maxLineBytes);
  const take = (lines: ReturnType<LineSplitter['push']>) => {
    for (const line of lines) {
      if ('tooLong' in line) {
        skip('too long', line.number);
        continue;
      }
      if (line.text.trim() === '') continue;
      const request = parseAccessLine(line.text, line.number);
      if (!request) skip('not an access log line', line.number, line.text);
      else if (!order.add(request, line.text.length + HELD_REQUEST_BYTES)) skip('out of time order', line.number);
    }
  };
  let bytesRead = 0;
  for await (const chunk of input) {
    take(splitter.push(chunk));
    bytesRead += chunk.length;
    options.onBytesRead?.(bytesRead);
  }
  take(splitter.end());
  order.flush();
  return {
    requests: seen.requests,
    ...(seen.firstMs === undefined || seen.lastMs === undefined ? {} : { firstMs: seen.firstMs, lastMs: seen.lastMs }),
    skipped,
  };
}
