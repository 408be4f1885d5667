import { describe, expect, it } from 'vitest';
import { tracingDiagLog } from './tracing-log.js';

describe('tracingDiagLog', () => {
  it("tells the SDK's failed exports once a minute at most, by their message, counting those left out", () => {
    const lines: { details: Record<string, unknown>; message: string }[] = [];
    const clock = { ms: 0 };
    const log = tracingDiagLog(
      {
        warn: (details: object, message?: string) => lines.push({ details: { ...details }, message: message ?? '' }),
      } as never,
      'http://collector:4318/v1/traces',
      () => clock.ms,
    );
    // As @opentelemetry/core's error handler reports an export that failed.
    const failure = JSON.stringify({ stack: 'Error: connect ECONNREFUSED\n    at …', message: 'connect ECONNREFUSED' });
    log.error(failure);
    clock.ms = 30_000;
    log.error(failure);
    log.warn('Dropped 10 spans because maxQueueSize reached');
    log.info('not for the operator');
    log.debug('nor this');
    clock.ms = 61_000;
    log.warn('Dropped 10 spans because maxQueueSize reached');
    expect(lines.map(({ message }) => message)).toEqual([
      'tracing to http://collector:4318/v1/traces: connect ECONNREFUSED (spans may be lost meanwhile; checks are not affected)',
      'tracing to http://collector:4318/v1/traces: Dropped 10 spans because maxQueueSize reached (spans may be lost meanwhile; checks are not affected)',
    ]);
    expect(lines[0]?.details).toEqual({ tracing: 'http://collector:4318/v1/traces', detail: failure });
    expect(lines[1]?.details).toMatchObject({ leftOut: 2 });
  });
});
