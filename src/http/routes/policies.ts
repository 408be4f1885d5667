import type { FastifyInstance } from 'fastify';
import type { Limiter } from '../../counting/limiter.js';
import { policySizing } from '../../counting/sizing.js';
import { policiesRoute } from '../schemas.js';

/** /policies: the loaded policies and what each costs Memcached, to size a cluster. */
export function registerPolicyRoutes(app: FastifyInstance, limiter: Limiter, policyVersion?: () => string): void {
  // Computed once per loaded policy set (they may be reloaded).
  const bodies = new WeakMap<object, ReturnType<typeof policySizing>>();
  app.get('/policies', { schema: policiesRoute }, () => {
    let body = bodies.get(limiter.policies);
    // While a reload's transition lasts, its time until exact is of now.
    if (body?.events.some((event) => event.reload)) body = policySizing(limiter.policies, limiter.plans);
    if (!body) bodies.set(limiter.policies, (body = policySizing(limiter.policies, limiter.plans)));
    return policyVersion ? { version: policyVersion(), ...body } : body;
  });
}
