/**
 * What a single-counter limiter library (express-rate-limit, @fastify/rate-limit) must be
 * told about one of memgate's decisions so that it denies exactly when memgate denied and
 * its headers show memgate's counts. Those libraries deny when `hits > limit`, compute
 * `remaining = limit - hits`, and say their counter resets at one instant; memgate has
 * several sliding limits per event.
 */
import type { Decision, LimitStatus } from '../shared/decision.js';
import { closestToExhaustion } from '../shared/rate-limit-headers.js';

export { closestToExhaustion };

export interface LibraryCounts {
  /** The library's hit count: over `limit` exactly when memgate denied. */
  readonly hits: number;
  /** Epoch ms the library should name as its reset: a denial's retryAfter, else when counted cost next leaves the window. */
  readonly resetAtMs: number;
}

/** A degraded decision (memgate could not count) names no instant; it is asked again in this long. */
const DEGRADED_RESET_MS = 1000;

/**
 * The counts for `decision` under the library's `limit`: a denial is `limit + 1` hits and
 * resets after its retryAfter; an allowed check is `limit - remaining` of the limit closest
 * to exhaustion (the one memgate's own RateLimit header names), so the library's
 * `remaining` is memgate's, at least 1 and at most `limit`.
 */
export function libraryCounts(decision: Decision, limit: number, nowMs: number): LibraryCounts {
  if (!decision.allowed) {
    return { hits: limit + 1, resetAtMs: nowMs + (decision.retryAfter ?? 1) * 1000 };
  }
  const closest = closestToExhaustion(decision.limits);
  if (!closest) return { hits: 1, resetAtMs: nowMs + DEGRADED_RESET_MS };
  return {
    hits: Math.min(limit, Math.max(1, limit - closest.remaining)),
    resetAtMs: nowMs + closest.resetSeconds * 1000,
  };
}

/** The limit a fresh client meets first: the smallest count (on a tie, the shortest window). */
export function tightestLimit(limits: readonly LimitStatus[]): LimitStatus | undefined {
  let tightest: LimitStatus | undefined;
  for (const limit of limits) {
    if (
      !tightest ||
      limit.limit < tightest.limit ||
      (limit.limit === tightest.limit && limit.window < tightest.window)
    ) {
      tightest = limit;
    }
  }
  return tightest;
}

export interface LibrarySettings {
  /** The library's own name and the names of its two settings, for the message. */
  readonly library: string;
  readonly limitName: string;
  readonly windowName: string;
  /** The library's limit, when it is a number (a function of the request cannot be compared). */
  readonly limit: number | undefined;
  /** The library's window in milliseconds, when it is a number. */
  readonly windowMs: number | undefined;
}

/**
 * A one-line warning when the library's limit or window is not the event's tightest limit,
 * else undefined. memgate decides either way; the warning is about the headers.
 */
export function mismatchWarning(event: string, decision: Decision, settings: LibrarySettings): string | undefined {
  const tightest = tightestLimit(decision.limits);
  if (!tightest) return undefined;
  const { library, limitName, windowName, limit, windowMs } = settings;
  const wrongLimit = limit !== undefined && limit !== tightest.limit;
  const wrongWindow = windowMs !== undefined && windowMs !== tightest.window * 1000;
  if (!wrongLimit && !wrongWindow) return undefined;
  const theirs = [
    wrongLimit ? `${limitName} ${String(limit)}` : undefined,
    wrongWindow ? `${windowName} ${String(windowMs)}` : undefined,
  ].filter((part) => part !== undefined);
  return (
    `memgate: ${library}'s ${theirs.join(' and ')} differ from event "${event}"'s tightest limit ` +
    `"${tightest.name}" (${tightest.limit} per ${tightest.window} s): memgate still decides every 429, ` +
    `but the headers' limit, remaining and window are off; set ${limitName}: ${tightest.limit}, ${windowName}: ${tightest.window * 1000}`
  );
}

/** Writes each distinct message once. */
export function onceEach(write: (message: string) => void): (message: string | undefined) => void {
  const written = new Set<string>();
  return (message) => {
    if (message === undefined || written.has(message)) return;
    written.add(message);
    write(message);
  };
}

/** Where warnings go unless the caller says otherwise. */
export function consoleWarn(message: string): void {
  // These integrations run inside the host application, whose console is where a
  // misconfiguration of its own limiter belongs (the option `warn` redirects it).
  // eslint-disable-next-line no-console
  console.warn(message);
}
