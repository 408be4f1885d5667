// Access logs in the Common and Combined Log Formats, as web servers write them:
//   host ident authuser [01/Aug/1995:00:00:01 -0400] "GET /path HTTP/1.0" 200 1839 ["referer" "agent"]
// Read for what a replay needs: who (the host), when (1 s resolution, its zone applied) and
// what (the request's method and target). Anything after the status is ignored.

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

/** Every request of a log's text, in time order; bad lines are counted, not fatal. */
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
