/**
 * The memgate client an integration asks: one the application made (and closes), or one
 * the integration makes from a URL (and closes when it is shut down).
 */
import { createClient, type ClientDecision, type ClientOptions } from '../client/index.js';

export type { ClientDecision, ClientOptions };

/** What the integrations use of memgate/client's client: any object with these methods will do. */
export interface MemgateClientLike {
  check(event: string, feature: string, options?: { cost?: number }): Promise<ClientDecision>;
  peek(event: string, feature: string, options?: { cost?: number }): Promise<ClientDecision>;
  reset(event: string, feature: string): Promise<unknown>;
  refund(event: string, feature: string, options: { cost?: number; at: number }): Promise<unknown>;
  close(): Promise<void>;
}

/** Where an integration's client comes from: `client`, or `url` with other createClient options. */
export interface ClientSource {
  /** A client the application made, and closes itself. */
  readonly client?: MemgateClientLike | undefined;
  /** memgate's address, for a client the integration makes and closes. */
  readonly url?: string | URL | undefined;
  /** createClient's other options (timeoutMs, onError, adminToken, ...) for that client. */
  readonly clientOptions?: Omit<ClientOptions, 'url'> | undefined;
}

export interface OpenedClient {
  readonly client: MemgateClientLike;
  /** Made here, so closed here. */
  readonly owned: boolean;
}

const METHODS = ['check', 'peek', 'reset', 'refund', 'close'] as const;

/** The client `source` names; `who` names the integration in the one-line error. */
export function openClient({ client, url, clientOptions }: ClientSource, who: string): OpenedClient {
  if (client !== undefined) {
    if (url !== undefined || clientOptions !== undefined) {
      throw new TypeError(`${who}: pass either client or url (with clientOptions), not both`);
    }
    const missing = METHODS.find(
      (method) => typeof (client as unknown as Record<string, unknown>)[method] !== 'function',
    );
    if (missing)
      throw new TypeError(`${who}: client has no ${missing}() method; make it with memgate/client's createClient`);
    return { client, owned: false };
  }
  if (!(url instanceof URL) && (typeof url !== 'string' || url === '')) {
    throw new TypeError(`${who}: pass client (made by memgate/client's createClient) or url (memgate's address)`);
  }
  return { client: createClient({ ...clientOptions, url }), owned: true };
}

/**
 * A check memgate refused (an unknown event, a feature it cannot take) or a closed client:
 * the application's configuration, never the end user's request, so the error carries no
 * HTTP status of its own (express and fastify would answer memgate's 400 to the end user)
 * and keeps the client's error as its cause.
 */
export function checkRefused(who: string, event: string, error: unknown): Error {
  const reason = error instanceof Error ? error.message : String(error);
  return new Error(`${who}: the check of event "${event}" failed: ${reason}`, { cause: error });
}

/**
 * checkRefused for fastify, whose default error handler answers an error's message to the
 * end user: that message would name memgate's events and its policy's (memgate's own error
 * lists the known events). So the message says only that the check failed, and the detail is
 * the cause, which fastify's logger prints with it.
 */
export function checkRefusedQuietly(who: string, event: string, error: unknown): Error {
  return new Error('the rate limit could not be checked', { cause: checkRefused(who, event, error) });
}
