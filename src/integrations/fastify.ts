/**
 * memgate/fastify: a fastify plugin that asks memgate about each request through
 * memgate/client (an onRequest hook), passes memgate's RateLimit headers on, and answers a
 * denial itself with a 429 whose body is memgate's decision.
 *
 *     await app.register(memgatePlugin, { client, feature: (req) => req.headers['x-user'] });
 *     app.post('/login', handler);                                   // event "login"
 *     app.post('/x', { config: { memgate: { event: 'export' } } }, h); // named in the route
 *
 * Registered like fastify-plugin's plugins (its hook applies to the routes of the
 * registering context, not only its children) without loading fastify-plugin. The event
 * defaults to the route's `config.memgate.event`, else its path (eventFromRoute); a
 * request no route matched (a 404) is not checked. The decision is `request.memgate`.
 */
import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
import { checkOf, decisionBody, decisionHeaders, DENIED_STATUS, type RequestCheckOptions } from './decision-reply.js';
import { checkRefusedQuietly, openClient, type ClientDecision, type ClientSource } from './memgate-client.js';
import { eventFromRoute } from './route-event.js';

export { eventFromRoute };

const WHO = 'memgate/fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** memgate/fastify: the event this route checks, or `false` to check none. */
    memgate?: { event?: string } | false;
  }
  interface FastifyRequest {
    /** memgate/fastify: the decision on this request, once checked. */
    memgate?: ClientDecision;
  }
}

export interface MemgateFastifyOptions extends ClientSource, RequestCheckOptions<FastifyRequest> {}

const plugin: FastifyPluginCallback<MemgateFastifyOptions> = (app, options, done) => {
  const { client, owned } = openClient(options, WHO);
  const check = checkOf<FastifyRequest>(WHO, options, {
    event: (request) => {
      const { config, url } = request.routeOptions;
      return (config.memgate === false ? undefined : config.memgate?.event) ?? eventFromRoute(url ?? '/');
    },
    feature: (request) => request.ip,
  });
  if (owned) app.addHook('onClose', () => client.close());
  // A second registration (in a child context, for other routes) finds it already there.
  if (!app.hasRequestDecorator('memgate')) app.decorateRequest('memgate', undefined);
  app.addHook('onRequest', async (request, reply) => {
    const { config, url } = request.routeOptions;
    if (url === undefined || config.memgate === false) return;
    const event = check.event(request);
    const cost = check.cost(request);
    const decision = await client
      .check(event, check.feature(request), cost === undefined ? undefined : { cost })
      .catch((error: unknown) => {
        throw checkRefusedQuietly(WHO, event, error);
      });
    request.memgate = decision;
    void reply.headers(decisionHeaders(decision));
    if (!decision.allowed) return reply.code(DENIED_STATUS).send(decisionBody(decision));
  });
  done();
};

// What fastify-plugin sets: the hook belongs to the registering context, so it guards the
// routes registered beside the plugin.
Object.assign(plugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'memgate',
});

export const memgatePlugin = plugin;
export default plugin;
