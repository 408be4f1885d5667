import type { CheckRequest } from './check-request.js';
import type { Limiter } from './limiter.js';

/** A limiter whose policies can be replaced while it serves: checks go to the current one. */
export interface ReloadableLimiter extends Limiter {
  replace(next: Limiter): void;
}

/**
 * Wraps a limiter so an admin can load new policies without a restart. A check in flight
 * finishes on the limiter it started on; the next one uses the new policies. The new
 * limiter starts with empty caches, so it reads whole windows once.
 */
export function reloadable(initial: Limiter): ReloadableLimiter {
  let current = initial;
  return {
    get policies() {
      return current.policies;
    },
    get plans() {
      return current.plans;
    },
    get cacheUsage() {
      return current.cacheUsage;
    },
    check: (request) => current.check(request),
    settle: (request) => current.settle(request),
    checkTogether: (checks) => current.checkTogether(checks),
    peek: (request: CheckRequest) => current.peek(request),
    reset: (request: Omit<CheckRequest, 'cost'>) => current.reset(request),
    refund: (request) => current.refund(request),
    lease: (request) => current.lease(request),
    returnLease: (request) => current.returnLease(request),
    // Every limiter it held shares one store: closing the current one closes it.
    close: () => current.close(),
    replace(next: Limiter) {
      current = next;
    },
  };
}
