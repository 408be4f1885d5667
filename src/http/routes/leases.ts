import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { DEFAULTS } from '../../config/defaults.js';
import type { Limiter } from '../../counting/limiter.js';
import { batchItemError, sendError } from '../errors.js';
import { decisionSender } from '../decision-sender.js';
import { leaseBatchRoute, leaseReturnRoute, leaseRoute } from '../schemas.js';

/**
 * /lease counts several units at once for a client to spend itself (200 with the lease, or
 * 429 with the denial, as /check's); /lease/return takes back what it did not spend;
 * /lease/batch does both for many leases in one request, each on its own.
 */
export function registerLeaseRoutes(fastify: FastifyInstance, limiter: Limiter): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const send = decisionSender();
  app.post('/lease', { schema: leaseRoute }, async (request, reply) => {
    const snapshot = limiter.current();
    return send(reply, snapshot, request.body.event, await snapshot.lease(request.body));
  });
  app.post('/lease/return', { schema: leaseReturnRoute }, async (request) => limiter.returnLease(request.body));
  app.post(
    '/lease/batch',
    { schema: leaseBatchRoute, bodyLimit: DEFAULTS.batchBodyLimitBytes },
    async (request, reply) => {
      const { take = [], return: giveBack = [] } = request.body;
      const items = take.length + giveBack.length;
      if (items === 0 || items > DEFAULTS.batchMaxChecks)
        return sendError(
          reply,
          'invalid_request',
          `a lease batch holds 1 to ${DEFAULTS.batchMaxChecks} takes and returns together (it holds ${items})`,
        );
      // Returns first: the units they free are there for the takes. All under one snapshot of the policies.
      const snapshot = limiter.current();
      const returned = await Promise.all(giveBack.map((item) => snapshot.returnLease(item).catch(batchItemError)));
      const taken = await Promise.all(take.map((item) => snapshot.lease(item).catch(batchItemError)));
      return { returned, taken };
    },
  );
}
