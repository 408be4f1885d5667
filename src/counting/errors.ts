import type { InputErrorCode } from '../config/error-codes.js';

/** Why a check was refused before anything was counted: codes of memgate's one table of error codes. */
export type { InputErrorCode };

/**
 * A request the limiter cannot decide; thrown before any counter is touched. It carries no
 * stack: it is the client's fault, answered and never logged, and a batch of 100 refused
 * items spent a twelfth of its CPU capturing stacks nobody reads.
 */
export class LimiterInputError extends Error {
  constructor(
    readonly code: InputErrorCode,
    message: string,
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'LimiterInputError';
  }
}
