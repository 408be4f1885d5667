import type { FastifyInstance } from 'fastify';
import { DEFAULTS } from '../../config/defaults.js';
import type { Limiter } from '../../counting/limiter.js';
import { batchItemError, sendError } from '../errors.js';
import { decisionSender } from '../decision-sender.js';
import {
  leaseBatchRoute,
  leaseReturnRoute,
  leaseRoute,
  type LeaseBatchBody,
  type LeaseBody,
  type LeaseReturnBody,
} from '../schemas.js';

/**
 * /lease counts several units at once for a client to spend itself (200 with the lease, or
 * 429 with the denial, as /check's); /lease/return takes back what it did not spend;
 * /lease/batch does both for many leases in one request, each on its own.
 */
export function registerLeaseRoutes(app: FastifyInstance, limiter: Limiter): void {
  const send = decisionSender(limiter);
  app.post<{ Body: LeaseBody }>('/lease', { schema: leaseRoute }, async (request, reply) =>
    send(reply, request.body.event, await limiter.lease(request.body)),
  );
  app.post<{ Body: LeaseReturnBody }>('/lease/return', { schema: leaseReturnRoute }, async (request) =>
    limiter.returnLease(request.body),
  );
  app.post<{ Body: LeaseBatchBody }>(
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
      // Returns first: the units they free are there for the takes.
      const returned = await Promise.all(giveBack.map((item) => limiter.returnLease(item).catch(batchItemError)));
      const taken = await Promise.all(take.map((item) => limiter.lease(item).catch(batchItemError)));
      return { returned, taken };
    },
  );
}
