import type { FastifyInstance } from 'fastify';
import type { Limiter } from '../../counting/limiter.js';
import { itemsPerFeature, TTL_MARGIN_SECONDS, type EventPlan } from '../../counting/plan.js';
import { policiesResponse } from '../schemas.js';

/** /policies: the loaded policies and what each costs Memcached, to size a cluster. */
export function registerPolicyRoutes(app: FastifyInstance, limiter: Limiter): void {
  const body = describePolicies(limiter);
  app.get('/policies', { schema: { response: { 200: policiesResponse } } }, () => body);
}

export function describePolicies(limiter: Limiter) {
  return {
    source: limiter.policies.source,
    events: [...limiter.plans.values()].map(describeEvent),
  };
}

function describeEvent(plan: EventPlan) {
  return {
    event: plan.event,
    algorithm: plan.algorithm,
    incrementsPerCheck: plan.levels.length,
    // Limits may share buckets, so this is an upper bound on the keys one check touches.
    keysPerCheck: { max: plan.limits.reduce((sum, limit) => sum + limit.keysPerCheck.max, 0) },
    itemsPerFeature: itemsPerFeature(plan.levels),
    limits: plan.limits.map((limit) => ({
      ...limit.policy,
      bucketSizes: limit.levels,
      keysPerCheck: limit.keysPerCheck,
      itemsPerFeature: itemsPerFeature(limit.levels.map((size) => ({ size, ttlSeconds: limit.retention(size) + TTL_MARGIN_SECONDS }))),
    })),
  };
}
