import type { TimedRequest } from './traffic.js';

/** Requests read from a log, and what could not be read. */
export interface ParsedLog {
  /** In time order. */
  readonly requests: TimedRequest[];
  readonly unparseable: number;
  /** The first unreadable line, to show the user what went wrong. */
  readonly firstUnparseable?: string;
}

const MONTHS: Record<string, number> = {
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

// host ident authuser [01/Aug/1995:00:00:01 -0400] "request" status bytes
// Only the host and the time matter here; the rest of the line may be anything.
const CLF_LINE = /^(\S+) \S+ \S+ \[(\d{2})\/([A-Z][a-z]{2})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})\]/;

/** One Common Log Format line as a request (host = feature), or undefined. */
export function parseClfLine(line: string): TimedRequest | undefined {
  const match = CLF_LINE.exec(line);
  if (!match) return undefined;
  const [, host, day, monthName, year, hour, minute, second, sign, zoneHours, zoneMinutes] =
    match as unknown as string[];
  const month = MONTHS[monthName as string];
  if (month === undefined) return undefined;
  const local = Date.UTC(Number(year), month, Number(day), Number(hour), Number(minute), Number(second));
  const offsetMs = (Number(zoneHours) * 60 + Number(zoneMinutes)) * 60_000 * (sign === '-' ? -1 : 1);
  const ms = local - offsetMs;
  // Date.UTC rolls 31 Feb over into March: refuse dates that do not exist.
  if (new Date(local).getUTCDate() !== Number(day) || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 60)
    return undefined;
  return { ms, feature: host as string };
}

/** Every request of a Common Log Format text, in time order; bad lines are counted, not fatal. */
export function parseClf(text: string): ParsedLog {
  const requests: TimedRequest[] = [];
  let unparseable = 0;
  let firstUnparseable: string | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const request = parseClfLine(line);
    if (request) {
      requests.push(request);
    } else {
      unparseable++;
      firstUnparseable ??= line.slice(0, 200);
    }
  }
  // Servers log at completion, so lines can be slightly out of order.
  requests.sort((a, b) => a.ms - b.ms);
  return { requests, unparseable, ...(firstUnparseable === undefined ? {} : { firstUnparseable }) };
}
