/**
 * memgate/client: `createClient` and its types. Imports no `node:` module, fastify nor
 * memjs at load (undici is loaded on the first request, in Node only): see docs/client.md.
 */
export { createClient } from './client.js';
export type {
  CheckOptions,
  ClientDecision,
  ClientOptions,
  ClientStats,
  MemgateClient,
  RefundOptions,
  ReserveOptions,
  Settled,
} from './client.js';
export type { Decision, LimitStatus, Reservation } from '../shared/decision.js';
export { MemgateClientError } from './errors.js';
