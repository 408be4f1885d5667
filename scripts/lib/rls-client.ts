// A grpc-js client of Envoy's rate limit service, speaking as Envoy's C++ filter does: the
// .proto's own field names, over a real socket. For the tests and the bench.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));
const definition = protoLoader.loadSync(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], {
  includeDirs: [PROTO_DIR],
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
});
/** grpc-js client classes of the two services, for tests that make their own calls. */
export const RateLimitClient = grpc.makeGenericClientConstructor(
  definition['envoy.service.ratelimit.v3.RateLimitService'] as grpc.ServiceDefinition,
  'RateLimitService',
);
export const HealthClient = grpc.makeGenericClientConstructor(
  definition['grpc.health.v1.Health'] as grpc.ServiceDefinition,
  'Health',
);

/** A descriptor as Envoy sends it: entries, and optionally its own hits_addend or a limit override. */
export interface WireDescriptorIn {
  entries: { key: string; value: string }[];
  hits_addend?: { value: number };
  limit?: { requests_per_unit: number; unit: string };
}

export interface WireRequestIn {
  domain: string;
  descriptors: WireDescriptorIn[];
  hits_addend?: number;
}

export interface WireStatusOut {
  code: 'OK' | 'OVER_LIMIT' | 'UNKNOWN';
  current_limit: { name: string; requests_per_unit: number; unit: string } | null;
  limit_remaining: number;
  duration_until_reset: { seconds: number; nanos: number } | null;
}

export interface WireResponseOut {
  overall_code: 'OK' | 'OVER_LIMIT' | 'UNKNOWN';
  statuses: WireStatusOut[];
  response_headers_to_add: { key: string; value: string }[];
}

export interface RlsClient {
  /** `headers`: the call's metadata (a `traceparent`, say). */
  shouldRateLimit(request: WireRequestIn, headers?: Readonly<Record<string, string>>): Promise<WireResponseOut>;
  /** The health service's status for `service` ("" for the whole server). */
  health(service?: string): Promise<string>;
  close(): void;
}

type Unary = (
  request: object,
  metadata: grpc.Metadata,
  callback: (error: grpc.ServiceError | null, reply: unknown) => void,
) => void;

/** In clear unless `credentials` say otherwise (grpc.credentials.createSsl for TLS). */
export function rlsClient(
  address: string,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
): RlsClient {
  const client = new RateLimitClient(address, credentials);
  const health = new HealthClient(address, credentials);
  const call = <T>(target: grpc.Client, method: string, request: object, headers: Record<string, string> = {}) =>
    new Promise<T>((resolve, reject) => {
      const metadata = new grpc.Metadata();
      for (const [key, value] of Object.entries(headers)) metadata.set(key, value);
      (target as unknown as Record<string, Unary>)[method]?.call(target, request, metadata, (error, reply) => {
        if (error) reject(error);
        else resolve(reply as T);
      });
    });
  return {
    shouldRateLimit: (request, headers) => call<WireResponseOut>(client, 'ShouldRateLimit', request, headers),
    health: async (service = '') => (await call<{ status: string }>(health, 'Check', { service })).status,
    close() {
      client.close();
      health.close();
    },
  };
}

/** The request Envoy's filter makes for one descriptor of `pairs`. */
export function oneDescriptor(domain: string, ...pairs: [string, string][]): WireRequestIn {
  return { domain, descriptors: [{ entries: pairs.map(([key, value]) => ({ key, value })) }] };
}
