/**
 * memgate/express: an express middleware that asks memgate about each request through
 * memgate/client, passes memgate's RateLimit headers on, and answers a denial itself with
 * a 429 whose body is memgate's decision.
 *
 *     const limit = memgateLimit({ client, feature: (req) => req.body.email });
 *     app.post('/login', limit, handler);   // event "login", from the route
 *
 * Mounted on a route, the event defaults to its path (eventFromRoute); mounted with
 * app.use(), pass `event`, since no route has matched yet. The decision is left in
 * `res.locals.memgate` for the handler.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { checkOf, decisionBody, decisionHeaders, DENIED_STATUS, type RequestCheckOptions } from './decision-reply.js';
import { checkRefused, openClient, type ClientSource } from './memgate-client.js';
import { eventFromRoute } from './route-event.js';

export { eventFromRoute };

const WHO = 'memgate/express';

export interface MemgateExpressOptions extends ClientSource, RequestCheckOptions<Request> {}

/** The middleware, with `close()` for a client it made from `url`. */
export type MemgateMiddleware = RequestHandler & { close(): Promise<void> };

export function memgateLimit(options: MemgateExpressOptions): MemgateMiddleware {
  const { client, owned } = openClient(options, WHO);
  const check = checkOf<Request>(WHO, options, {
    event: (req) => {
      const route = req.route as { path?: unknown } | undefined;
      if (typeof route?.path !== 'string') {
        throw new Error(
          route
            ? `${WHO}: the route of ${req.method} ${req.path} has no path to name an event by (a regular expression or a list of paths); pass event`
            : `${WHO}: no route has matched ${req.method} ${req.path} yet; mount the middleware on a route, or pass event`,
        );
      }
      const { path } = route;
      return eventFromRoute(path);
    },
    feature: (req) => req.ip ?? '',
  });

  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    let cost: number | undefined;
    let event: string;
    let feature: string;
    try {
      event = check.event(req);
      feature = check.feature(req);
      cost = check.cost(req);
    } catch (error) {
      next(error);
      return;
    }
    client.check(event, feature, cost === undefined ? undefined : { cost }).then(
      (decision) => {
        res.set(decisionHeaders(decision));
        res.locals.memgate = decision;
        if (decision.allowed) next();
        else res.status(DENIED_STATUS).json(decisionBody(decision));
      },
      (error: unknown) => {
        next(checkRefused(WHO, event, error));
      },
    );
  };
  return Object.assign(middleware, { close: () => (owned ? client.close() : Promise.resolve()) });
}

export default memgateLimit;
