import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Limiter } from '../../counting/limiter.js';
import { errorBody } from '../errors.js';
import { errorResponses, resetBody, resetResponse, reloadResponse, type ResetBody } from '../schemas.js';

export interface AdminOptions {
  /** The bearer token every admin request must carry. */
  readonly token: string;
  /** Loads the policy file again and starts using it; rejects (PolicyError) and changes nothing when it is invalid. */
  readonly reload: () => Promise<{ source: string; events: string[] }>;
}

/**
 * /admin/reset forgets a feature's counts on every instance; /admin/reload loads the
 * policy file again without a restart. Both need `Authorization: Bearer <token>`.
 */
export function registerAdminRoutes(app: FastifyInstance, limiter: Limiter, { token, reload }: AdminOptions): void {
  // Compare digests, so the comparison takes the same time whatever the guess.
  const expected = digest(token);
  const authorize = async (request: FastifyRequest, reply: FastifyReply) => {
    const header = request.headers.authorization ?? '';
    const given = /^Bearer (.+)$/.exec(header)?.[1];
    if (given === undefined || !timingSafeEqual(digest(given), expected)) {
      return reply.code(401).header('www-authenticate', 'Bearer').send(errorBody('unauthorized', 'an admin request needs Authorization: Bearer <MEMGATE_ADMIN_TOKEN>'));
    }
  };

  app.post<{ Body: ResetBody }>(
    '/admin/reset',
    { preHandler: authorize, schema: { body: resetBody, response: { 200: resetResponse, ...errorResponses } } },
    async (request) => {
      const { event, feature } = request.body;
      await limiter.reset({ event, feature });
      request.log.info({ event }, 'admin reset a feature');
      return { reset: true, event };
    },
  );

  app.post('/admin/reload', { preHandler: authorize, schema: { response: { 200: reloadResponse, ...errorResponses } } }, async (request) => {
    const loaded = await reload();
    request.log.info(loaded, 'admin reloaded the policies');
    return { reloaded: true, ...loaded };
  });
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
