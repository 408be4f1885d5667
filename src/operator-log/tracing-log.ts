import type { DiagLogger } from '@opentelemetry/api';
import type { Logger } from 'pino';

/** Least time between two lines of the OpenTelemetry SDK's complaints. */
const TRACING_ERROR_INTERVAL_MS = 60_000;

/**
 * What the operator reads of the SDK memgate started (its `diag`: an export the collector
 * refused or that could not reach it): one warning a minute at most, with how many it left
 * out, as a collector that is down fails every batch.
 */
export function tracingDiagLog(logger: Pick<Logger, 'warn'>, target: string, now: () => number = Date.now): DiagLogger {
  let lastAt = -Infinity;
  let leftOut = 0;
  const warn = (message: string, ...args: unknown[]): void => {
    if (now() - lastAt < TRACING_ERROR_INTERVAL_MS) {
      leftOut++;
      return;
    }
    const [first] = args;
    const detail = first instanceof Error ? first.message : first === undefined ? '' : JSON.stringify(first);
    logger.warn(
      { tracing: target, detail: `${message}${detail ? ` ${detail}` : ''}`, ...(leftOut > 0 ? { leftOut } : {}) },
      `tracing to ${target}: ${errorMessage(message)} (spans may be lost meanwhile; checks are not affected)`,
    );
    lastAt = now();
    leftOut = 0;
  };
  const quiet = () => undefined;
  return { error: warn, warn, info: quiet, debug: quiet, verbose: quiet };
}

/** The SDK reports a failed export as the error in JSON (its stack, message, code): the message alone reads best. */
function errorMessage(text: string): string {
  try {
    const { message } = JSON.parse(text) as { message?: unknown };
    return typeof message === 'string' ? message : text;
  } catch {
    return text;
  }
}

/** Spans still held when the service stopped that could not be sent in time. */
export function logTracingDropped(logger: Pick<Logger, 'warn'>, flushMs: number): void {
  logger.warn(`tracing: the spans still held were not all sent within ${flushMs} ms of the stop, and are lost`);
}
