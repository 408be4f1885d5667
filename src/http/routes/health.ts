import type { FastifyInstance } from 'fastify';
import type { CounterStore } from '../../store/counter-store.js';
import { errorResponse, statusResponse } from '../schemas.js';

/** /healthz: the process answers. /readyz: the counter store answers too. */
export function registerHealthRoutes(app: FastifyInstance, store: CounterStore): void {
  app.get('/healthz', { schema: { response: { 200: statusResponse } } }, () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { response: { 200: statusResponse, 503: errorResponse } } }, async () => {
    await store.ping();
    return { status: 'ready', store: store.kind };
  });
}
