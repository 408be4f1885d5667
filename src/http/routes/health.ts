import type { FastifyInstance } from 'fastify';
import type { CounterStore } from '../../store/counter-store.js';
import { errorBody } from '../errors.js';
import { readinessResponse, statusResponse } from '../schemas.js';

/**
 * /healthz: the process answers. /readyz: every counter server answers too; each is
 * listed with whether it is up, and a 503 names those that are not.
 */
export function registerHealthRoutes(app: FastifyInstance, store: CounterStore): void {
  app.get('/healthz', { schema: { response: { 200: statusResponse } } }, () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { response: { 200: readinessResponse, 503: readinessResponse } } }, async (_request, reply) => {
    const servers = await store.health();
    const down = servers.filter((server) => !server.up);
    if (down.length === 0) return { status: 'ready', store: store.kind, servers };
    const message = down.map((server) => `${server.server}: ${server.error ?? 'down'}`).join('; ');
    return reply.code(503).header('retry-after', '1').send({ status: 'unavailable', store: store.kind, servers, ...errorBody('store_unavailable', message) });
  });
}
