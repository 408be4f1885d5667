/**
 * Giving counts back (`decrement`) and forgetting a key (`resetKey`) are memgate's admin
 * routes, POST /admin/refund and /admin/reset: the client needs MEMGATE_ADMIN_TOKEN as its
 * `adminToken`. A call refused for want of it says so, naming the library option that
 * needs it, instead of a bare 401.
 */

/** Library options that give counts back through `decrement`. */
const NEEDS_REFUND = 'skipFailedRequests and skipSuccessfulRequests';

export function adminTokenMessage(who: string, operation: 'decrement' | 'resetKey'): string {
  const why = operation === 'decrement' ? `(${NEEDS_REFUND} give counts back through it)` : '';
  return `${who}: ${operation} calls memgate's admin API, so the client needs adminToken (memgate's MEMGATE_ADMIN_TOKEN) ${why}`.trimEnd();
}

/** True for the client's refusal of an admin call: no token configured, or memgate said 401. */
export function isMissingToken(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { status, code } = error as { status?: unknown; code?: unknown };
  return status === 401 || (typeof code === 'string' && /token|admin/i.test(code));
}

/** Runs an admin call, turning a refusal for want of a token into one clear error. */
export async function adminCall<T>(
  who: string,
  operation: 'decrement' | 'resetKey',
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isMissingToken(error)) throw new Error(adminTokenMessage(who, operation), { cause: error });
    throw error;
  }
}
