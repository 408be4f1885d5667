/**
 * Whether memgate is worth asking: after a request that got no answer (or a 5xx), checks
 * are answered by `onError` at once for `backoffMs`; then one request probes, and the
 * others keep answering at once until it comes back.
 */
export interface Reachability {
  /** Whether a request may go now; true makes the caller the probe when memgate was down. */
  mayAsk(): boolean;
  /** memgate answered. */
  answered(): void;
  /** memgate could not be reached, or was overloaded. */
  failed(): void;
}

export function createReachability({ backoffMs, now }: { backoffMs: number; now: () => number }): Reachability {
  let failedAt: number | undefined;
  let probing = false;
  return {
    mayAsk() {
      if (failedAt === undefined || backoffMs === 0) return true;
      if (probing || now() - failedAt < backoffMs) return false;
      probing = true;
      return true;
    },
    answered() {
      failedAt = undefined;
      probing = false;
    },
    failed() {
      failedAt = now();
      probing = false;
    },
  };
}
