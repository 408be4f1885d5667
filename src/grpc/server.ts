// The gRPC server: Envoy's envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit and the
// standard grpc.health.v1.Health/Check. It checks requests and hands them to `decide`, which owns
// every decision; it never crashes on a request and never lets a rejection go unhandled.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import {
  InvalidRateLimitRequestError,
  REQUEST_LIMITS,
  requestFromWire,
  responseToWire,
  type RateLimitRequest,
  type RateLimitResponse,
  type WireResponse,
} from './messages.js';
import { requestProblem } from './wire-scan.js';
import { clientNameInterceptors, serverCredentials } from './tls.js';
import type { ListenerCertificates } from '../listener-certificates.js';

/** The service Envoy calls, as the health service names it. */
export const RATE_LIMIT_SERVICE = 'envoy.service.ratelimit.v3.RateLimitService';
const HEALTH_SERVICE = 'grpc.health.v1.Health';

/** The package's proto/ folder: two levels up from src/grpc/ under tsx and from dist/grpc/ once built. */
const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));

/** What the server logs through; a pino logger is one. */
export interface GrpcLog {
  error(details: object, message: string): void;
}

export interface GrpcServerOptions {
  /** 0 picks a free port; `GrpcServer.port` says which. */
  readonly port: number;
  readonly host: string;
  /** Decides a checked request. A rejection is logged and answered INTERNAL, without its message. */
  readonly decide: (request: RateLimitRequest) => Promise<RateLimitResponse>;
  readonly log: GrpcLog;
  /** The health service's answer: SERVING when true. Always serving when absent. */
  readonly serving?: () => boolean | Promise<boolean>;
  readonly maxMessageBytes?: number;
  /** Told of each ShouldRateLimit answered INTERNAL (upstream's call.should_rate_limit.service_error). */
  readonly onInternalError?: () => void;
  /** TLS on the listener: its certificates, and the client name required; in clear when unset. */
  readonly tls?: { readonly certificates: ListenerCertificates; readonly clientSan?: string | undefined } | undefined;
}

export interface GrpcServer {
  readonly port: number;
  /**
   * Refuses new calls, answers NOT_SERVING to health checks, and lets calls in flight finish for up
   * to `deadlineMs`; then cuts what is left. `forced` says whether it had to.
   */
  close(options: { readonly deadlineMs: number }): Promise<{ readonly forced: boolean }>;
}

type Callback<T> = grpc.sendUnaryData<T>;

export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  const definition = await protoLoader.load(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], {
    includeDirs: [PROTO_DIR],
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
  });
  const server = new grpc.Server({
    'grpc.max_receive_message_length': options.maxMessageBytes ?? REQUEST_LIMITS.messageBytes,
    interceptors: clientNameInterceptors(options.tls?.clientSan),
  });
  let closing = false;

  server.addService(withRequestScanned(definition[RATE_LIMIT_SERVICE] as grpc.ServiceDefinition), {
    ShouldRateLimit: (call: grpc.ServerUnaryCall<unknown, WireResponse>, callback: Callback<WireResponse>) => {
      answer({ method: 'ShouldRateLimit', callback, log: options.log, onInternal: options.onInternalError }, () =>
        shouldRateLimit(call, options),
      );
    },
  });
  server.addService(definition[HEALTH_SERVICE] as grpc.ServiceDefinition, {
    Check: (call: grpc.ServerUnaryCall<{ service: string }, object>, callback: Callback<object>) => {
      answer({ method: 'Health/Check', callback, log: options.log }, () =>
        healthCheck(call.request.service, async () => !closing && (await isServing(options))),
      );
    },
  });

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      hostPort(options.host, options.port),
      serverCredentials(options.tls?.certificates),
      (error, bound) => {
        if (error) reject(error);
        else resolve(bound);
      },
    );
  });

  let closed: Promise<{ forced: boolean }> | undefined;
  return {
    port,
    close: ({ deadlineMs }) => {
      closing = true;
      closed ??= new Promise((resolve) => {
        const deadline = setTimeout(() => {
          server.forceShutdown();
          resolve({ forced: true });
        }, deadlineMs);
        server.tryShutdown(() => {
          clearTimeout(deadline);
          resolve({ forced: false });
        });
      });
      return closed;
    },
  };
}

/**
 * The service with ShouldRateLimit's decoder reading the bytes first (wire-scan.ts): a request
 * beyond the limits, or with text that is not UTF-8, is not decoded but answered by its
 * `problem`, which requestFromWire refuses.
 */
export function withRequestScanned(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const method = service.ShouldRateLimit as grpc.MethodDefinition<unknown, unknown>;
  const requestDeserialize = (bytes: Buffer): unknown => {
    const problem = requestProblem(bytes);
    return problem === undefined ? method.requestDeserialize(bytes) : { problem };
  };
  return { ...service, ShouldRateLimit: { ...method, requestDeserialize } };
}

/** The header naming the policy version a call was decided under (docs/envoy.md). */
export const POLICY_VERSION_HEADER = 'memgate-policy-version';

async function shouldRateLimit(
  call: grpc.ServerUnaryCall<unknown, WireResponse>,
  options: GrpcServerOptions,
): Promise<WireResponse> {
  const request = requestFromWire(call.request);
  const response = await options.decide(request);
  const wire = responseToWire(response, request.descriptors.length);
  if (response.policyVersion !== undefined) {
    const metadata = new grpc.Metadata();
    metadata.set(POLICY_VERSION_HEADER, response.policyVersion);
    call.sendMetadata(metadata);
  }
  return wire;
}

/**
 * The names health is asked for: the server's as a whole (""), the rate limit service's full
 * name, and `ratelimit`, the name envoyproxy/ratelimit registers (what its users' Envoy
 * clusters health-check).
 */
const HEALTH_NAMES = new Set(['', RATE_LIMIT_SERVICE, 'ratelimit']);

async function healthCheck(service: string, serving: () => Promise<boolean>): Promise<object> {
  if (!HEALTH_NAMES.has(service)) {
    throw new GrpcStatusError(grpc.status.NOT_FOUND, `unknown service ${JSON.stringify(service.slice(0, 128))}`);
  }
  return { status: (await serving()) ? 'SERVING' : 'NOT_SERVING' };
}

async function isServing(options: GrpcServerOptions): Promise<boolean> {
  try {
    return (await options.serving?.()) ?? true;
  } catch (error) {
    options.log.error(
      { err: error },
      'the gRPC health check could not tell whether memgate serves; answering NOT_SERVING',
    );
    return false;
  }
}

class GrpcStatusError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Answers a call with what `work` resolves to. Refusals carry their message; anything else is
 * memgate's fault, logged here and answered INTERNAL with nothing of its message, which Envoy
 * handles as it handles an unreachable service (its failure_mode_deny).
 */
function answer<T>(
  {
    method,
    callback,
    log,
    onInternal,
  }: { method: string; callback: Callback<T>; log: GrpcLog; onInternal?: (() => void) | undefined },
  work: () => T | Promise<T>,
): void {
  Promise.resolve()
    .then(work)
    .then(
      (reply) => {
        callback(null, reply);
      },
      (error: unknown) => {
        if (error instanceof InvalidRateLimitRequestError) {
          callback({ code: grpc.status.INVALID_ARGUMENT, details: error.message });
        } else if (error instanceof GrpcStatusError) {
          callback({ code: error.code, details: error.message });
        } else {
          log.error({ err: error }, `gRPC ${method} failed`);
          onInternal?.();
          callback({ code: grpc.status.INTERNAL, details: `memgate could not answer ${method}; its log says why` });
        }
      },
    )
    .catch((error: unknown) => {
      log.error({ err: error }, `the answer to gRPC ${method} could not be sent`);
    });
}

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
