import type { FastifyInstance } from 'fastify';
import type { Limiter } from '../../counting/limiter.js';
import { policySizing } from '../../counting/sizing.js';
import { policiesResponse } from '../schemas.js';

/** /policies: the loaded policies and what each costs Memcached, to size a cluster. */
export function registerPolicyRoutes(app: FastifyInstance, limiter: Limiter): void {
  const body = policySizing(limiter.policies, limiter.plans);
  app.get('/policies', { schema: { response: { 200: policiesResponse } } }, () => body);
}
