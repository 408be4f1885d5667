// Envoy's rate limit service as memgate serves it: the gRPC server (server.ts) deciding with
// envoy-decisions.ts, healthy while memgate is ready, as /readyz says.
import type { Logger } from 'pino';
import type { EnvoyConfig } from '../config/envoy-config.js';
import type { Limiter } from '../counting/limiter.js';
import type { CounterStore } from '../store/counter-store.js';
import { createEnvoyDecider } from './envoy-decisions.js';
import { startGrpcServer, type GrpcServer } from './server.js';

export interface RateLimitServiceOptions {
  readonly port: number;
  readonly host: string;
  readonly limiter: Pick<Limiter, 'checkTogether'>;
  /** The Envoy configuration in use, swapped with the limiter's policies on a reload. */
  readonly config: () => EnvoyConfig | undefined;
  /** For the health service: the counter servers must answer, as for /readyz. */
  readonly store: Pick<CounterStore, 'health'>;
  /** True once the service drains: health answers NOT_SERVING, so Envoy moves to other instances. */
  readonly draining: () => boolean;
  readonly onShadowOverLimit: (event: string) => void;
  readonly logger: Logger;
}

export async function startRateLimitService(options: RateLimitServiceOptions): Promise<GrpcServer> {
  const { logger } = options;
  const overridden = new Set<string>();
  return startGrpcServer({
    port: options.port,
    host: options.host,
    log: logger,
    decide: createEnvoyDecider({
      limiter: options.limiter,
      config: options.config,
      onShadowOverLimit: options.onShadowOverLimit,
      onLimitOverride: (domain) => {
        // Once per domain: every request of a route with the override carries it.
        if (overridden.has(domain)) return;
        overridden.add(domain);
        logger.info(
          { domain },
          `Envoy sends per-request limit overrides for domain "${domain}": each is applied in place of its descriptor's configured limit (see docs/envoy.md)`,
        );
      },
    }),
    serving: async () => !options.draining() && (await options.store.health()).every((server) => server.up),
  });
}
