import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { UsageHistory } from '../../usage/usage-history.js';
import { sendError } from '../errors.js';
import { usageEventsRoute, usageRoute, usageTopRoute } from '../schemas.js';

/**
 * /usage: request counts over time, from the usage store and this instance's counts not
 * yet written; /usage/top: the heaviest clients of a range; /usage/events: what has data.
 * Without usage history (MEMGATE_USAGE_DB=off, no graphite-web) each answers 404 usage_off.
 */
export function registerUsageRoutes(fastify: FastifyInstance, usage: UsageHistory | undefined): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const off = 'usage history is off: MEMGATE_USAGE_DB=off and no MEMGATE_GRAPHITE_WEB to read it from';
  app.get('/usage', { schema: usageRoute }, async (request, reply) =>
    usage ? usage.series(request.query) : sendError(reply, 'usage_off', off),
  );
  app.get('/usage/top', { schema: usageTopRoute }, async (request, reply) =>
    usage ? usage.top(request.query) : sendError(reply, 'usage_off', off),
  );
  app.get('/usage/events', { schema: usageEventsRoute }, async (_request, reply) =>
    usage ? { events: await usage.events(), retention: usage.retention } : sendError(reply, 'usage_off', off),
  );
}
