import type { Logger } from 'pino';

/** Least time between two lines about statsd being unreachable. */
const STATSD_ERROR_INTERVAL_MS = 60_000;

/**
 * What the operator reads when statsd cannot be reached (MEMGATE_STATSD): one line a minute at
 * most, with how many errors it left out, as a statsd that is down fails every send.
 */
export function statsdErrorLog(logger: Pick<Logger, 'warn'>, target: string, now: () => number = Date.now) {
  let lastAt = -Infinity;
  let leftOut = 0;
  return (error: Error): void => {
    if (now() - lastAt < STATSD_ERROR_INTERVAL_MS) {
      leftOut++;
      return;
    }
    logger.warn(
      { err: error, ...(leftOut > 0 ? { leftOut } : {}) },
      `statsd at ${target}: ${error.message} (stats may be lost meanwhile; checks are not affected)`,
    );
    lastAt = now();
    leftOut = 0;
  };
}
