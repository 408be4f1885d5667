import { createHash, timingSafeEqual } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULTS } from '../../config/defaults.js';
import { PolicyError } from '../../config/policies.js';
import type { Limiter } from '../../counting/limiter.js';
import type { ReloadCarried } from '../../shared/contract.js';
import { sendError } from '../errors.js';
import { createFailureThrottle } from '../failure-throttle.js';
import { adminRefundRoute, adminReloadRoute, adminResetRoute } from '../schemas.js';

export interface AdminOptions {
  /** The bearer token every admin request must carry. */
  readonly token: string;
  /** Loads the policy file again and starts using it; rejects (PolicyError) and changes nothing when it is invalid. */
  readonly reload: () => Promise<{ source: string; events: string[]; carried?: ReloadCarried[] }>;
  /** The clock of the failed-authentication count, in milliseconds since the epoch; tests drive it. */
  readonly now?: () => number;
}

export interface AdminRouteOptions extends AdminOptions {
  /** Whether the instance is shutting down: a reload then loads nothing, and says so. */
  readonly draining: () => boolean;
}

/**
 * /admin/reset forgets a feature's counts on every instance; /admin/refund takes back what
 * one check counted; /admin/reload loads the
 * policy file again without a restart. Both need `Authorization: Bearer <token>`.
 * An address that fails to give it `adminFailureLimit` times in a window gets 429 for
 * every admin request until its failures leave the window: guessing the token is slow,
 * and a lock that let the right token through would tell a guesser when it had won.
 */
export function registerAdminRoutes(
  app: FastifyInstance,
  limiter: Limiter,
  { token, reload, now, draining }: AdminRouteOptions,
  log: FastifyBaseLogger,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  // Compare digests, so the comparison takes the same time whatever the guess.
  const expected = digest(token);
  const failures = createFailureThrottle({
    limit: DEFAULTS.adminFailureLimit,
    windowSeconds: DEFAULTS.adminFailureWindowSeconds,
    ...(now ? { now } : {}),
  });
  app.addHook('onClose', () => failures.close());
  const tooMany = (reply: FastifyReply, retryAfter: number) =>
    sendError(
      reply.header('retry-after', String(retryAfter)),
      'too_many_failures',
      `too many failed admin authentications from this address; retry in ${retryAfter} s`,
    );

  /**
   * Whom a failed authentication counts against: the connection's own address, or the
   * client behind a proxy the gateway section lists by address. A hop count
   * (`trustedProxies: 1`) trusts whoever connects, so a guesser connecting directly would
   * name a new address in X-Forwarded-For with each guess.
   */
  const guesser = (request: FastifyRequest): string => {
    const connected = request.socket.remoteAddress ?? request.ip;
    const gateway = limiter.policies.gateway;
    const listed = gateway !== undefined && Array.isArray(gateway.trustedProxies) && gateway.trusts(connected, 0);
    return listed ? request.ip : connected;
  };

  // On request, before the body is read: an unauthenticated request gets nothing parsed.
  const authorize = async (request: FastifyRequest, reply: FastifyReply) => {
    const address = guesser(request);
    const wait = await failures.retryAfter(address);
    if (wait !== undefined) return tooMany(reply, wait);
    const given = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (given !== undefined && timingSafeEqual(digest(given), expected)) return;
    const failure = await failures.fail(address);
    if (!failure.counted) return tooMany(reply, failure.retryAfter);
    const { limit, windowSeconds } = failures;
    log.warn(
      { address, failures: failure.failures, limit },
      `admin authentication failed from ${address}: ${failure.failures} of ${limit} in ${windowSeconds} s`,
    );
    if (failure.failures >= limit) {
      log.warn(
        { address, failures: failure.failures, limit },
        `admin requests from ${address} now get 429 until its failures fall below ${limit} in ${windowSeconds} s`,
      );
    }
    return sendError(
      reply.header('www-authenticate', 'Bearer'),
      'unauthorized',
      'an admin request needs Authorization: Bearer <MEMGATE_ADMIN_TOKEN>',
    );
  };

  typed.post('/admin/reset', { onRequest: authorize, schema: adminResetRoute }, async (request) => {
    const { event, feature } = request.body;
    await limiter.reset({ event, feature });
    log.info({ event }, 'admin reset a feature');
    return { reset: true as const, event };
  });

  typed.post('/admin/refund', { onRequest: authorize, schema: adminRefundRoute }, async (request) => {
    const { event } = request.body;
    const refunded = await limiter.refund(request.body);
    return { refunded, event };
  });

  app.post('/admin/reload', { onRequest: authorize, schema: adminReloadRoute }, async (request, reply) => {
    const address = request.ip;
    const refuse = () => {
      log.warn({ address }, `admin reload from ${address} refused: the instance is shutting down`);
      return sendError(reply, 'draining', DRAINING_RELOAD);
    };
    if (draining()) return refuse();
    let loaded;
    try {
      loaded = await reload();
    } catch (error) {
      // The answer tells the caller; the log tells whoever runs memgate, who may not be the caller.
      if (error instanceof PolicyError) {
        const { source, problems } = error;
        log.warn(
          { address, source, problems },
          `admin reload from ${address} refused, the policies in use stay: ${source} is invalid: ${problems.join('; ')}`,
        );
      }
      throw error;
    }
    // A stop began meanwhile: the reloader put nothing in use.
    if (draining()) return refuse();
    log.info({ address, ...loaded }, `admin reload from ${address}: now using ${loaded.source}`);
    return { reloaded: true, ...loaded };
  });
}

const DRAINING_RELOAD = 'memgate is shutting down: reloads are refused; reload the instances that keep serving';

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
