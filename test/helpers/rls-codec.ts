// ShouldRateLimit's codec as memgate's gRPC server loads it (src/grpc/server.ts: proto-loader with
// its options), for tests that encode or decode what the server reads and writes.
import { fileURLToPath } from 'node:url';
import type { MethodDefinition } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const definition = protoLoader.loadSync('envoy/service/ratelimit/v3/rls.proto', {
  includeDirs: [fileURLToPath(new URL('../../proto/', import.meta.url))],
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
});

/** RateLimitService/ShouldRateLimit's serializers and deserializers. */
export const shouldRateLimitCodec = (
  definition['envoy.service.ratelimit.v3.RateLimitService'] as unknown as Record<
    string,
    MethodDefinition<object, object>
  >
).ShouldRateLimit as MethodDefinition<object, object>;
