// A limiter whose policies can be replaced while it serves: the snapshot in force (a limiter of
// one policy version) is swapped in one step, and every call goes to the snapshot in force when
// it starts. A request of several calls takes current() once.
import type { CheckRequest } from './resolve.js';
import type { Limiter } from './limiter.js';

export interface ReloadableLimiter extends Limiter {
  /** Puts `next` in force: the calls that start from now on are decided under its policies. */
  replace(next: Limiter): void;
}

/**
 * Wraps a limiter so an admin can load new policies without a restart. A call in flight
 * finishes on the snapshot it started on; the next one uses the new policies. The new
 * snapshot starts with empty caches, so it reads whole windows once.
 */
export function reloadable(initial: Limiter): ReloadableLimiter {
  let inForce = initial;
  return {
    current: () => inForce,
    get version() {
      return inForce.version;
    },
    get envoy() {
      return inForce.envoy;
    },
    get policies() {
      return inForce.policies;
    },
    get plans() {
      return inForce.plans;
    },
    get cacheUsage() {
      return inForce.cacheUsage;
    },
    check: (request) => inForce.check(request),
    settle: (request) => inForce.settle(request),
    checkTogether: (checks) => inForce.checkTogether(checks),
    peek: (request: CheckRequest) => inForce.peek(request),
    reset: (request: Omit<CheckRequest, 'cost'>) => inForce.reset(request),
    refund: (request) => inForce.refund(request),
    lease: (request) => inForce.lease(request),
    returnLease: (request) => inForce.returnLease(request),
    gate: (request) => inForce.gate(request),
    release: (request) => inForce.release(request),
    // Every snapshot it held shares one store: closing the one in force closes it.
    close: () => inForce.close(),
    replace(next: Limiter) {
      inForce = next;
    },
  };
}
