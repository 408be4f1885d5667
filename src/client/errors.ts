/**
 * The one error memgate/client rejects with: the caller's bug (an option, an unknown
 * event, a bad feature) or an admin call that failed. Checks that cannot reach memgate
 * never reject: they answer by `onError` (see client.ts).
 */
export class MemgateClientError extends Error {
  override readonly name = 'MemgateClientError';
  /** memgate's error code (`unknown_event`, `invalid_cost`, …) or the client's own (`invalid_option`, `unreachable`, `client_closed`, …). */
  readonly code: string;
  /** The HTTP status memgate answered with; undefined when the client found the error itself. */
  readonly status: number | undefined;

  constructor(code: string, message: string, status?: number) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

/** memgate's error body, `{"error": {"code", "message"}}`, or undefined when `body` is not one. */
export function serverError(body: unknown): { code: string; message: string } | undefined {
  if (typeof body !== 'object' || body === null || !('error' in body)) return undefined;
  const { error } = body;
  if (typeof error !== 'object' || error === null) return undefined;
  const code = 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  const message = 'message' in error && typeof error.message === 'string' ? error.message : undefined;
  return code === undefined ? undefined : { code, message: message ?? code };
}
