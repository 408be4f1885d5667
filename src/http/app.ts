import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import { pino } from 'pino';
import { AJV_CODE_OPTIONS, DEFAULTS } from '../config/defaults.js';
import type { Limiter } from '../counting/limiter.js';
import type { CounterStore } from '../store/counter-store.js';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import underPressure from '@fastify/under-pressure';
import { createDrain, type Drain } from './drain.js';
import type { httpsOptions } from './tls.js';
import { createErrorHandler, errorBody, handleClientError, handleNotFound } from './errors.js';
import type { Metrics } from './metrics.js';
import { registerJsonBodyParser } from './json-body.js';
import { openapiOptions } from './openapi.js';
import { registerResponseCheck } from './response-check.js';
import { registerAdminRoutes, type AdminOptions } from './routes/admin.js';
import { registerDashboardRoutes } from './routes/dashboard.js';
import { registerDecisionRoutes } from './routes/decisions.js';
import { isGateUrl, refuse, registerGatewayRoutes } from './routes/gateway.js';
import { registerHealthRoutes } from './routes/health.js';
import { registerLeaseRoutes } from './routes/leases.js';
import { registerPolicyRoutes } from './routes/policies.js';
import { registerUsageRoutes } from './routes/usage.js';
import { routeSpans, UNTRACED } from './route-spans.js';
import type { Tracer } from '@opentelemetry/api';
import type { UsageHistory } from '../usage/usage-history.js';

export interface AppOptions {
  readonly limiter: Limiter;
  readonly store: CounterStore;
  /** Where memgate logs errors and admin actions (a pino logger); silent when absent. */
  readonly logger?: FastifyBaseLogger;
  /** Turns on /admin/reset and /admin/reload; without it they do not exist. */
  readonly admin?: AdminOptions;
  /**
   * Shed /check and /peek with 503 while the event loop lags more than this. Default 0, never:
   * shedding is the service's choice (MEMGATE_MAX_EVENT_LOOP_DELAY_MS), not an embedding's or a test's.
   */
  readonly maxEventLoopDelayMs?: number;
  /** Serves GET /metrics when given. */
  readonly metrics?: Metrics;
  /** Once it has begun, /readyz answers 503 and every response closes its connection. */
  readonly drain?: Drain;
  /** Serves /usage and its dashboard; without it they answer 404 usage_off. */
  readonly usage?: UsageHistory;
  /** The version of the policies in use, shown by /policies and /readyz (the service's reloader). */
  readonly policyVersion?: () => string;
  /**
   * Checks every answer against its route's response schema before it is sent (a mismatch
   * answers 500): for tests and development, as it costs a validation per answer. Default false.
   */
  readonly validateResponses?: boolean;
  /** Serve HTTPS with these options (MEMGATE_TLS_*: http/tls.ts); plain HTTP when unset. */
  readonly https?: ReturnType<typeof httpsOptions> | undefined;
  /** A span per request of /check, /peek and /gate (tracing/tracing.ts); none when unset. */
  readonly tracer?: Tracer | undefined;
}

/** The HTTP face of a limiter. Builds the app without listening, so tests can inject. */
export function buildApp({
  limiter,
  store,
  logger,
  admin,
  metrics,
  usage,
  maxEventLoopDelayMs = 0,
  drain = createDrain(),
  policyVersion,
  validateResponses = false,
  https,
  tracer,
}: AppOptions): FastifyInstance {
  // memgate logs through its own logger, never fastify's: given one, fastify makes a child
  // logger and listens for the end of every response, to log requests memgate does not
  // log (a third of what a repeated denial costs beyond an empty route).
  const log = logger ?? pino({ enabled: false });
  const handleError = createErrorHandler(log);
  // Typed as the HTTP server's instance either way: every route and hook is the same over TLS.
  const app = Fastify({
    ...(https ? { https } : {}),
    logger: false,
    // A /check request is a few hundred bytes; anything near the limit is not one.
    bodyLimit: DEFAULTS.bodyLimitBytes,
    // A slow sender cannot hold a connection forever.
    requestTimeout: DEFAULTS.requestTimeoutMs,
    // Strict types: a number is not a feature, and no unknown field passes silently.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, code: AJV_CODE_OPTIONS } },
    clientErrorHandler: handleClientError,
    // A path that is not valid percent-encoding, answered in memgate's error shape (for
    // /gate, in the status its gateway hands on to the client).
    frameworkErrors: (error, request, reply) => {
      const gateway = limiter.policies.gateway;
      if (gateway && isGateUrl(request.url)) return void refuse(reply, gateway, 'invalid_uri', error.message);
      void (reply as FastifyReply).code(400).send(errorBody('invalid_request', error.message));
    },
    // /gate's client address: the address before the trusted proxies in X-Forwarded-For.
    // Read at each request, so it follows /admin/reload; compiled once per policy file.
    trustProxy: (address: string, hop: number) => limiter.policies.gateway?.trusts(address, hop) ?? false,
    // While app.close() runs, still serve requests on connections already open (the store
    // stays open until the app has closed) rather than answer fastify's own 503 body.
    return503OnClosing: false,
  });
  // Only JSON bodies: anything else is a 415, not a string the schema then refuses.
  if (validateResponses) registerResponseCheck(app);
  app.removeContentTypeParser('text/plain');
  registerJsonBodyParser(app);
  // app.close() without a drain first: close each keep-alive connection once its last
  // response is out, or server.close() would wait for clients to hang up.
  app.addHook('preClose', (done) => {
    app.server.keepAliveTimeout = 1;
    done();
  });
  // OpenAPI from every route's JSON schema, served at /docs (and /docs/json).
  void app.register(swagger, openapiOptions);
  void app.register(swaggerUi, { routePrefix: '/docs' });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);
  // The lag sampled over the first periods after listening holds the start's own work
  // (plugins, schemas, files opened): a fresh instance on a busy host would shed its first
  // checks for it. Lag counts from two whole periods after the server listens (at once when
  // it never listens, as under inject).
  let shedsFrom = 0;
  app.addHook('onListen', (done) => {
    shedsFrom = performance.now() + 2 * DEFAULTS.eventLoopSampleMs;
    done();
  });
  // Decisions in a scope of their own, so only they are shed when the process is overloaded:
  // health and admin routes keep answering.
  void app.register(async (decisions) => {
    if (maxEventLoopDelayMs > 0) {
      // @fastify/under-pressure samples the lag in a scope of its own, with no routes: its
      // onRequest hook would build a route-options object and run fastify's hook chain for
      // every check. Each decision route asks it first instead (a boolean it keeps).
      let overloaded = (): boolean => false;
      let lagMs = (): number => 0;
      await decisions.register(async (probe) => {
        await probe.register(underPressure, {
          maxEventLoopDelay: maxEventLoopDelayMs,
          sampleInterval: DEFAULTS.eventLoopSampleMs,
        });
        overloaded = () => probe.isUnderPressure();
        lagMs = () => probe.memoryUsage().eventLoopDelay;
      });
      decisions.addHook('onRoute', (route) => {
        const handler = route.handler;
        route.handler = function shedWhenOverloaded(request, reply) {
          if (!overloaded() || performance.now() < shedsFrom) return handler.call(this, request, reply);
          return reply
            .code(503)
            .header('retry-after', '1')
            .send(
              errorBody(
                'overloaded',
                `memgate is overloaded (event loop ${Math.round(lagMs())} ms behind); retry shortly`,
              ),
            );
        };
      });
    }
    const spans = tracer ? routeSpans(tracer) : UNTRACED;
    registerDecisionRoutes(decisions, limiter, { spans });
    registerLeaseRoutes(decisions, limiter);
    registerGatewayRoutes(decisions, limiter, handleError, { spans });
  });
  // Registered as a plugin, after swagger, so the OpenAPI document lists them too.
  void app.register((routes, _options, done) => {
    registerHealthRoutes(routes, { store, drain, policyVersion });
    registerPolicyRoutes(routes, limiter, policyVersion);
    registerUsageRoutes(routes, usage);
    registerDashboardRoutes(routes);
    if (admin) registerAdminRoutes(routes, limiter, { ...admin, draining: () => drain.draining }, log);
    metrics?.register(routes);
    done();
  });
  return app;
}
