import type { InputErrorCode } from '../config/error-codes.js';

/** Why a check was refused before anything was counted: codes of memgate's one table of error codes. */
export type { InputErrorCode };

/** A request the limiter cannot decide; thrown before any counter is touched. */
export class LimiterInputError extends Error {
  constructor(
    readonly code: InputErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'LimiterInputError';
  }
}
