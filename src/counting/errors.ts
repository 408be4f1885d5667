/** Why a check was refused before anything was counted. */
export type InputErrorCode =
  | 'invalid_event'
  | 'unknown_event'
  | 'invalid_feature'
  | 'feature_too_long'
  | 'invalid_cost'
  | 'cost_exceeds_limit';

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
