import type { EnvoyConfig, EnvoyDescriptor, EnvoyDomain } from './envoy-model.js';
import { ENVOY_EVENT_PREFIX, envoyEventName } from './envoy-match.js';
import { NAME_PATTERN } from './policy-schema.js';
import { PolicySet, type EventPolicy } from './policies.js';

/** One limit of an Envoy configuration, with the event memgate decides it under. */
export interface EnvoyLimitEvent {
  readonly domain: string;
  /** Composite keys from the domain down to the descriptor: `['tenant_acme', 'route']`. */
  readonly path: readonly string[];
  readonly descriptor: EnvoyDescriptor;
  readonly policy: EventPolicy;
}

const LIMIT_NAME = new RegExp(NAME_PATTERN);

/**
 * Every descriptor of the configuration with a limit, as a memgate event of one limit (see
 * envoyEventName), taking reservations when its rate_limit has a `reservations` section. A limit
 * of 0 requests is an event too, whose every check can never pass (the limiter decides and
 * reports it, counting nothing); unlimited descriptors count nothing and need none.
 */
export function envoyLimitEvents(config: EnvoyConfig): EnvoyLimitEvent[] {
  const found: EnvoyLimitEvent[] = [];
  const walk = (domain: EnvoyDomain, descriptors: Iterable<EnvoyDescriptor>) => {
    for (const descriptor of descriptors) {
      const limit = descriptor.rateLimit;
      if (limit && !limit.unlimited) {
        const event = envoyEventName(domain.domain, descriptor.path);
        // The limit's name is in RateLimit headers, so it must be safe there; the event's is.
        const name = limit.name !== undefined && LIMIT_NAME.test(limit.name) ? limit.name : event.slice(ENVOY_EVENT_PREFIX.length);
        found.push({
          domain: domain.domain,
          path: descriptor.path,
          descriptor,
          policy: {
            event,
            algorithm: limit.algorithm,
            edge: 'whole',
            onStoreError: limit.onStoreError,
            ...(limit.reservations ? { reservations: limit.reservations } : {}),
            limits: [
              {
                name,
                limit: limit.requestsPerUnit,
                window: limit.window,
                granularity: limit.granularity,
                ...(limit.calendar ? { calendar: limit.calendar } : {}),
              },
            ],
          },
        });
      }
      walk(domain, descriptor.children.byKey.values());
    }
  };
  for (const domain of config.domains.values()) walk(domain, domain.descriptors.byKey.values());
  return found;
}

/** The limits of the configuration that count: all but those of 0 requests, which deny without counting. */
export function countedEnvoyLimits(config: EnvoyConfig): EnvoyLimitEvent[] {
  return envoyLimitEvents(config).filter((limit) => limit.descriptor.rateLimit?.requestsPerUnit !== 0);
}

/**
 * memgate's policies and an Envoy configuration's limits as one policy set, counted by one
 * limiter: the Envoy limits' events are named apart (`envoy:…`), so neither can reach the
 * other's counters.
 */
export function withEnvoyLimits(policies: PolicySet, envoy: EnvoyConfig | undefined): PolicySet {
  if (!envoy) return policies;
  const events = [...policies.events.values(), ...envoyLimitEvents(envoy).map((limit) => limit.policy)];
  return new PolicySet(events, policies.source, policies.gateway);
}
