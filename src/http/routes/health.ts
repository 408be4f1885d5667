import type { FastifyInstance } from 'fastify';
import type { CounterStore } from '../../store/counter-store.js';
import type { Drain } from '../drain.js';
import { errorBody } from '../errors.js';
import { readinessResponse, statusResponse } from '../schemas.js';

/**
 * /healthz: the process answers. /readyz: every counter server answers too; each is
 * listed with whether it is up, and a 503 names those that are not. While the service
 * drains, /readyz answers 503 at once, without asking the store, so that load balancers
 * send no more; /healthz still answers 200, so that nothing kills the draining process.
 */
export function registerHealthRoutes(app: FastifyInstance, store: CounterStore, drain: Drain): void {
  app.get('/healthz', { schema: { response: { 200: statusResponse } } }, () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { response: { 200: readinessResponse, 503: readinessResponse } } }, async (_request, reply) => {
    if (drain.draining) {
      return reply.code(503).send({ status: 'draining', store: store.kind, ...errorBody('draining', 'memgate is shutting down: send requests to another instance') });
    }
    const servers = await store.health();
    const down = servers.filter((server) => !server.up);
    if (down.length === 0) return { status: 'ready', store: store.kind, servers };
    const message = down.map((server) => `${server.server}: ${server.error ?? 'down'}`).join('; ');
    return reply.code(503).header('retry-after', '1').send({ status: 'unavailable', store: store.kind, servers, ...errorBody('store_unavailable', message) });
  });
}
