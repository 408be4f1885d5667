// What memgate answers about a check, as the service, the library and memgate/client all
// give it: shared so that the client package (src/shared/ is what it takes of the server)
// needs nothing else.

export interface LimitStatus {
  readonly name: string;
  readonly limit: number;
  /** Window length in seconds. */
  readonly window: number;
  /** Cost still admissible in the window now, after this decision counted what it did. */
  readonly remaining: number;
  /** Whole seconds until some of the counted cost leaves the window (0 when nothing is counted). */
  readonly resetSeconds: number;
}

export interface Decision {
  readonly allowed: boolean;
  /** The enforced limits, in the order of the policy file; empty when `degraded`, as no count is known. */
  readonly limits: readonly LimitStatus[];
  /**
   * The limits in `mode: shadow`, decided and counted as if enforced but never refusing: what
   * enforcing them would show. Absent when the event has none; never in the RateLimit headers.
   */
  readonly shadowLimits?: readonly LimitStatus[];
  /** Names of the shadow limits that would have refused this request. */
  readonly shadowDenied?: readonly string[];
  /** On a deny: whole seconds until enough cost leaves every exceeded window for this request to pass. */
  readonly retryAfter?: number;
  /** The store could not answer: the event's `onStoreError` rule decided, not the counts. */
  readonly degraded?: true;
  /**
   * An allow or deny list of the policy holds the client: allowed without counting, or
   * refused for good (no `retryAfter`: waiting does not help). `limits` is empty.
   */
  readonly listed?: 'allow' | 'deny';
  /** The reservation a check with `reserve` made, when it was allowed: settle it with the actual cost. */
  readonly reservation?: Reservation;
}

/** A cost reserved by a check (`reserve: N`), to settle within its life with what the request actually cost. */
export interface Reservation {
  /** Names the reservation in its settle; only its holder knows it. */
  readonly id: string;
  /** The cost counted: what was reserved. */
  readonly units: number;
  /** Seconds its holder has to settle it; after them (and a grace of 2 s) it stays counted as reserved. */
  readonly seconds: number;
  /** When its life ends, in milliseconds since the epoch on memgate's clock. */
  readonly expiresAt: number;
}
