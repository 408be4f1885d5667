import type { FastifyInstance } from 'fastify';
import type { Limiter } from '../../counting/limiter.js';
import { rateLimitHeaderWriter } from '../rate-limit-headers.js';
import { leaseReturnRoute, leaseRoute, type LeaseBody, type LeaseReturnBody } from '../schemas.js';

/**
 * /lease counts several units at once for a client to spend itself (200 with the lease, or
 * 429 with the denial, as /check's); /lease/return takes back what it did not spend.
 */
export function registerLeaseRoutes(app: FastifyInstance, limiter: Limiter): void {
  const setHeaders = rateLimitHeaderWriter(limiter);
  app.post<{ Body: LeaseBody }>('/lease', { schema: leaseRoute }, async (request, reply) => {
    const decision = await limiter.lease(request.body);
    setHeaders(reply.code(decision.allowed ? 200 : 429), request.body.event, decision);
    return decision;
  });
  app.post<{ Body: LeaseReturnBody }>('/lease/return', { schema: leaseReturnRoute }, async (request) =>
    limiter.returnLease(request.body),
  );
}
