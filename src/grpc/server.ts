// The gRPC server: Envoy's envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit and the
// standard grpc.health.v1.Health/Check, unary calls served on node:http2's stream API with
// proto-loader's codecs, but for ShouldRateLimit's answers, which response-encoder.ts writes
// (framing.ts has gRPC's wire conventions). @grpc/grpc-js served them until issue 39: it cost a
// call twice node:http2's own CPU (docs/performance.md, the grpc suite). It checks requests and
// hands them to `decide`, which owns every decision; it never crashes on a request and never lets
// a rejection go unhandled.
import http2, { type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { gunzipSync, inflateSync } from 'node:zlib';
import * as protoLoader from '@grpc/proto-loader';
import { DEFAULTS } from '../config/defaults.js';
import { serveRenewedCertificates } from '../http/tls.js';
import {
  InvalidRateLimitRequestError,
  REQUEST_LIMITS,
  requestFromWire,
  type RateLimitRequest,
  type RateLimitResponse,
} from './messages.js';
import {
  encodedMessage,
  framed,
  GRPC_STATUS,
  MessageReader,
  timeoutMs,
  type GrpcStatusCode,
  type ReadMessage,
} from './framing.js';
import { framedResponse, type ResponseSerializer } from './response-encoder.js';
import { requestProblem } from './wire-scan.js';
import { missingClientName, secureServerOptions } from './tls.js';
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
  /**
   * Decides a checked request; `headers` are the call's (its metadata: a traceparent, say). A
   * rejection is logged and answered INTERNAL, without its message.
   */
  readonly decide: (request: RateLimitRequest, headers: IncomingHttpHeaders) => Promise<RateLimitResponse>;
  readonly log: GrpcLog;
  /** The health service's answer: SERVING when true. Always serving when absent. */
  readonly serving?: () => boolean | Promise<boolean>;
  readonly maxMessageBytes?: number;
  /** Told of each ShouldRateLimit answered INTERNAL (upstream's call.should_rate_limit.service_error). */
  readonly onInternalError?: () => void;
  /** TLS on the listener: its certificates, and the client name required; in clear when unset. */
  readonly tls?: { readonly certificates: ListenerCertificates; readonly clientSan?: string | undefined } | undefined;
  /** How long a connection may stay silent before it is pinged; unanswered for `keepaliveTimeoutMs`, it is closed. */
  readonly keepaliveMs?: number;
  readonly keepaliveTimeoutMs?: number;
  /** How long a call's message may take to arrive once its headers have. */
  readonly readTimeoutMs?: number;
}

export interface GrpcServer {
  readonly port: number;
  /**
   * Refuses new calls, answers NOT_SERVING to health checks, and lets calls in flight finish for up
   * to `deadlineMs`; then cuts what is left. `forced` says whether it had to.
   */
  close(options: { readonly deadlineMs: number }): Promise<{ readonly forced: boolean }>;
}

/** The header naming the policy version a call was decided under (docs/envoy.md). */
export const POLICY_VERSION_HEADER = 'memgate-policy-version';

/** A method's answer: its message as sent, behind gRPC's prefix (framing.ts), and headers to send before it. */
interface Reply {
  readonly body: Buffer;
  readonly headers?: Readonly<Record<string, string>>;
}

interface UnaryMethod {
  readonly name: string;
  /** The request's bytes as the handler reads them; throws a refusal. */
  readonly decode: (bytes: Buffer) => unknown;
  /** Answers the request, its message encoded: a throw or a rejection is answered as `answer` says. */
  readonly handle: (request: unknown, headers: IncomingHttpHeaders) => Reply | Promise<Reply>;
  /** Told of each call answered INTERNAL. */
  readonly onInternal?: (() => void) | undefined;
}

type Codec = Pick<protoLoader.MethodDefinition<unknown, unknown>, 'requestDeserialize' | 'responseSerialize'>;
/** What a decoder needs of a method: its request deserializer. */
type RequestCodec = Pick<Codec, 'requestDeserialize'>;

/** Decoding failed: the bytes are not the method's message. */
class UndecodableError extends Error {}

class GrpcStatusError extends Error {
  constructor(
    readonly code: GrpcStatusCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A method's decoder, with `scan` reading the bytes first: what it finds wrong is not decoded but
 * handed on as `{ problem }`, for the handler to refuse.
 */
export const requestDecoder =
  (codec: RequestCodec, scan?: (bytes: Buffer) => string | undefined) =>
  (bytes: Buffer): unknown => {
    const problem = scan?.(bytes);
    if (problem !== undefined) return { problem };
    try {
      return codec.requestDeserialize(bytes);
    } catch (error) {
      throw new UndecodableError(`the request is not the method's message: ${(error as Error).message}`);
    }
  };

export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  const definition = await protoLoader.load(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], {
    includeDirs: [PROTO_DIR],
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
  });
  const codecOf = (service: string, method: string) =>
    (definition[service] as Record<string, protoLoader.MethodDefinition<unknown, unknown>>)[method] as Codec;
  const rls = codecOf(RATE_LIMIT_SERVICE, 'ShouldRateLimit');
  const health = codecOf(HEALTH_SERVICE, 'Check');
  let closing = false;

  const methods = new Map<string, UnaryMethod>([
    [
      `/${RATE_LIMIT_SERVICE}/ShouldRateLimit`,
      {
        name: 'ShouldRateLimit',
        // The bytes are read first (wire-scan.ts): a request beyond the limits, or with text that
        // is not UTF-8, is not decoded but answered by its `problem`, which requestFromWire refuses.
        decode: requestDecoder(rls, requestProblem),
        // The answer is written by response-encoder.ts, which falls back to proto-loader's encoder
        // for the rare answer with dynamic metadata.
        handle: (request, headers) => shouldRateLimit(request, headers, options, rls.responseSerialize),
        onInternal: options.onInternalError,
      },
    ],
    [
      `/${HEALTH_SERVICE}/Check`,
      {
        name: 'Health/Check',
        decode: requestDecoder(health),
        handle: async (request) => {
          const message = await healthCheck(
            (request as { service: string }).service,
            async () => !closing && (await isServing(options)),
          );
          return { body: framed(health.responseSerialize(message)) };
        },
      },
    ],
  ]);

  const certificates = options.tls?.certificates;
  let stopRenewing: (() => void) | undefined;
  // Bounds a peer's streams and header lists, where Node's defaults would let one hold 2^32 streams.
  const settings = { maxConcurrentStreams: DEFAULTS.grpcMaxConcurrentStreams };
  const limits = { settings, maxHeaderListPairs: 128, maxSessionMemory: 10 };
  let server: http2.Http2Server | http2.Http2SecureServer = http2.createServer(limits);
  if (certificates) {
    const secure = http2.createSecureServer({ ...secureServerOptions(certificates), ...limits });
    stopRenewing = serveRenewedCertificates(secure, certificates);
    server = secure;
  }
  const call: CallContext = {
    methods,
    log: options.log,
    maxMessageBytes: options.maxMessageBytes ?? REQUEST_LIMITS.messageBytes,
    clientSan: options.tls?.clientSan,
    readTimeoutMs: options.readTimeoutMs ?? DEFAULTS.grpcReadTimeoutMs,
  };
  server.on('stream', (stream, headers) => {
    try {
      serveCall(call, stream, headers);
    } catch (error) {
      // A fault of memgate's own: the call is dropped, the process and the connection stay.
      options.log.error({ err: error }, 'a gRPC call could not be served');
      stream.destroy();
    }
  });
  const sessions = new Set<Http2Session>();
  const keepalive = {
    everyMs: options.keepaliveMs ?? DEFAULTS.grpcKeepaliveMs,
    timeoutMs: options.keepaliveTimeoutMs ?? DEFAULTS.grpcKeepaliveTimeoutMs,
  };
  // Every connection, for the drain's deadline: one still in its TLS handshake is no session yet.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('session', (session) => {
    sessions.add(session);
    // A connection that comes in while the server closes is told to go at once.
    if (closing) session.close();
    // A peer's broken connection is the peer's: the session closes and takes its streams.
    session.on('error', () => undefined);
    const stopPinging = keepPinging(session, keepalive);
    session.once('close', () => {
      stopPinging();
      sessions.delete(session);
    });
  });
  // A failed handshake or a connection that is not HTTP/2 concerns that client alone.
  server.on('sessionError', () => undefined);

  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve((server.address() as { port: number }).port);
    });
  });

  let closed: Promise<{ forced: boolean }> | undefined;
  return {
    port,
    close: ({ deadlineMs }) => {
      closing = true;
      closed ??= new Promise((resolve) => {
        stopRenewing?.();
        const deadline = setTimeout(() => {
          for (const session of sessions) session.destroy();
          for (const socket of sockets) socket.destroy();
          resolve({ forced: true });
        }, deadlineMs);
        server.close(() => {
          clearTimeout(deadline);
          resolve({ forced: false });
        });
        // GOAWAY on every connection: the calls it carries finish, new ones go elsewhere.
        for (const session of sessions) session.close();
      });
      return closed;
    },
  };
}

/**
 * Pings a connection silent for `everyMs` and closes it when the ping is not answered within
 * `timeoutMs` (grpc-go's server keepalive, upstream's, with its defaults: 2 h, 20 s).
 */
function keepPinging(session: Http2Session, { everyMs, timeoutMs }: { everyMs: number; timeoutMs: number }) {
  const timer = setInterval(() => {
    if (session.destroyed || session.closed) return;
    const unanswered = setTimeout(() => {
      session.destroy();
    }, timeoutMs).unref();
    const answered = () => {
      clearTimeout(unanswered);
    };
    try {
      // false: too many pings are unanswered already, and their timers will tell.
      if (!session.ping(answered)) answered();
    } catch {
      answered();
    }
  }, everyMs).unref();
  return () => {
    clearInterval(timer);
  };
}

interface CallContext {
  readonly methods: ReadonlyMap<string, UnaryMethod>;
  readonly log: GrpcLog;
  readonly maxMessageBytes: number;
  readonly clientSan: string | undefined;
  /** How long a call's message may take to arrive. */
  readonly readTimeoutMs: number;
}

const OK_TRAILERS = { 'grpc-status': '0' };
const ACCEPTED_ENCODINGS = 'identity,gzip,deflate';

/** Whether headers can still be sent on the stream: the peer may have reset or closed it meanwhile. */
const answerable = (stream: ServerHttp2Stream) => !stream.destroyed && !stream.closed && !stream.headersSent;

/** Sends the stream's headers, or drops a stream that can no longer take them; never throws. */
function respond(
  stream: ServerHttp2Stream,
  headers: http2.OutgoingHttpHeaders,
  options: http2.ServerStreamResponseOptions,
): boolean {
  if (!answerable(stream)) return false;
  try {
    stream.respond(headers, options);
    return true;
  } catch {
    stream.destroy();
    return false;
  }
}

/** Ends the stream with RST_STREAM(`code`) once what was sent is out; never throws. */
function closeStream(stream: ServerHttp2Stream, code: number): void {
  if (stream.destroyed || stream.closed) return;
  try {
    stream.close(code);
  } catch {
    stream.destroy();
  }
}

/** gRPC's content types: application/grpc, alone or with +proto and parameters. */
const isGrpc = (contentType: string | undefined) =>
  contentType !== undefined && /^application\/grpc(?:[+;]|$)/.test(contentType);

/** What each session's client certificate says of the required name: read once per connection. */
const clientNameChecks = new WeakMap<Http2Session, string | undefined>();

function missingName(stream: ServerHttp2Stream, wanted: string): string | undefined {
  const session = stream.session;
  if (!session) return 'the connection closed';
  if (!clientNameChecks.has(session))
    clientNameChecks.set(session, missingClientName(session.socket as TLSSocket, wanted));
  return clientNameChecks.get(session);
}

/**
 * One unary call on its stream: read, decoded, handled, answered once. A peer may reset the
 * stream at any point: every answer checks that it still can be sent, and a call answered
 * (or refused, or past its deadline) reads and decides nothing more.
 */
function serveCall(context: CallContext, stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
  stream.on('error', () => undefined);
  let answered = false;
  // The call's deadline, and until its message is read the server's own wait for it (a peer that
  // sends part of a message and then nothing holds no stream longer); set once the call is known.
  let deadline: NodeJS.Timeout | undefined;
  let reading: NodeJS.Timeout | undefined;
  /** An answer without a message (gRPC's trailers-only), then RST_STREAM(`closeWith`) if given. */
  const refuse = (code: GrpcStatusCode, message: string, extra: Record<string, string> = {}, closeWith?: number) => {
    if (answered) return;
    answered = true;
    stop();
    respond(
      stream,
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(code),
        'grpc-message': encodedMessage(message),
        ...extra,
      },
      { endStream: true },
    );
    if (closeWith !== undefined) closeStream(stream, closeWith);
  };
  const reply = (body: Buffer, replyHeaders: Reply['headers']) => {
    if (answered) return;
    answered = true;
    stop();
    if (
      !respond(
        stream,
        { ':status': 200, 'content-type': 'application/grpc', ...replyHeaders },
        { waitForTrailers: true },
      )
    )
      return;
    stream.once('wantTrailers', () => {
      try {
        stream.sendTrailers(OK_TRAILERS);
      } catch {
        stream.destroy();
      }
    });
    stream.end(body);
  };

  if (headers[':method'] !== 'POST' || !isGrpc(headers['content-type'])) {
    // Not a gRPC call: HTTP's own answer, as gRPC's protocol asks.
    answered = true;
    if (respond(stream, { ':status': 415, 'content-type': 'text/plain' }, {}))
      stream.end('memgate serves gRPC here (POST with content-type application/grpc)\n');
    return;
  }
  const method = context.methods.get(headers[':path'] ?? '');
  if (!method) {
    refuse(
      GRPC_STATUS.UNIMPLEMENTED,
      `memgate serves no method ${String(headers[':path']).slice(0, 200)}`,
      {},
      http2.constants.NGHTTP2_NO_ERROR,
    );
    return;
  }
  if (context.clientSan !== undefined) {
    const missing = missingName(stream, context.clientSan);
    if (missing !== undefined) {
      refuse(GRPC_STATUS.UNAUTHENTICATED, missing, {}, http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
  }
  const waitMs = timeoutMs(headers['grpc-timeout']);
  if (waitMs !== undefined)
    deadline = setTimeout(() => {
      refuse(
        GRPC_STATUS.DEADLINE_EXCEEDED,
        `no answer within the call's deadline of ${waitMs} ms`,
        {},
        http2.constants.NGHTTP2_CANCEL,
      );
    }, waitMs);
  reading = setTimeout(() => {
    refuse(
      GRPC_STATUS.DEADLINE_EXCEEDED,
      `the request's message did not arrive within ${context.readTimeoutMs} ms`,
      {},
      http2.constants.NGHTTP2_CANCEL,
    );
  }, context.readTimeoutMs);
  function stop() {
    clearTimeout(deadline);
    clearTimeout(reading);
    reading = undefined;
    stream.off('data', onData);
  }
  stream.once('close', () => {
    answered = true;
    stop();
  });

  const reader = new MessageReader(context.maxMessageBytes);
  let read = false;
  const onOutcome = (outcome: ReadMessage) => {
    read = true;
    stream.off('data', onData);
    clearTimeout(reading);
    if (answered) return;
    if (outcome.kind === 'too-large') {
      // Refused on its prefix; the rest of the message is not read: RST_STREAM(NO_ERROR) asks the
      // sender to stop, and what is already on its way is dropped by HTTP/2 without being decoded.
      refuse(
        GRPC_STATUS.RESOURCE_EXHAUSTED,
        `the message is ${outcome.length} bytes; at most ${context.maxMessageBytes} are read`,
        {},
        http2.constants.NGHTTP2_NO_ERROR,
      );
      return;
    }
    if (outcome.kind === 'malformed') {
      refuse(outcome.code, outcome.reason, {}, http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
    let request: unknown;
    try {
      request = method.decode(
        outcome.compressed ? inflated(outcome.bytes, headers['grpc-encoding'], context.maxMessageBytes) : outcome.bytes,
      );
    } catch (error) {
      if (error instanceof GrpcStatusError)
        refuse(error.code, error.message, { 'grpc-accept-encoding': ACCEPTED_ENCODINGS });
      else refuse(GRPC_STATUS.INVALID_ARGUMENT, (error as Error).message);
      return;
    }
    answer(method, context.log, request, headers, { reply, refuse });
  };
  function onData(chunk: Buffer) {
    const outcome = reader.push(chunk);
    if (outcome) onOutcome(outcome);
  }
  stream.on('data', onData);
  stream.once('end', () => {
    if (!read) onOutcome(reader.end());
  });
}

/** A compressed message, uncompressed within the size limit; throws a GrpcStatusError. */
function inflated(bytes: Buffer, encoding: string | string[] | undefined, maxBytes: number): Buffer {
  const limit = { maxOutputLength: maxBytes };
  try {
    if (encoding === 'gzip') return gunzipSync(bytes, limit);
    if (encoding === 'deflate') return inflateSync(bytes, limit);
  } catch (error) {
    throw (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE'
      ? new GrpcStatusError(GRPC_STATUS.RESOURCE_EXHAUSTED, `the message uncompressed is over ${maxBytes} bytes`)
      : new GrpcStatusError(GRPC_STATUS.INTERNAL, `the message could not be uncompressed as ${String(encoding)}`);
  }
  // A message flagged compressed in no encoding, or identity, is the sender's fault (gRPC's
  // compression.md); an encoding memgate does not read is named with those it does.
  if (encoding === undefined || encoding === 'identity')
    throw new GrpcStatusError(GRPC_STATUS.INTERNAL, 'the message is flagged compressed, but grpc-encoding names none');
  throw new GrpcStatusError(
    GRPC_STATUS.UNIMPLEMENTED,
    `a compressed message in ${JSON.stringify(encoding)}: memgate reads ${ACCEPTED_ENCODINGS}`,
  );
}

async function shouldRateLimit(
  wire: unknown,
  headers: IncomingHttpHeaders,
  options: GrpcServerOptions,
  serialize: ResponseSerializer,
): Promise<Reply> {
  const request = requestFromWire(wire);
  const response = await options.decide(request, headers);
  const body = framedResponse(response, request.descriptors.length, serialize);
  return response.policyVersion === undefined
    ? { body }
    : { body, headers: { [POLICY_VERSION_HEADER]: response.policyVersion } };
}

/**
 * The names health is asked for: the server's as a whole (""), the rate limit service's full
 * name, and `ratelimit`, the name envoyproxy/ratelimit registers (what its users' Envoy
 * clusters health-check).
 */
const HEALTH_NAMES = new Set(['', RATE_LIMIT_SERVICE, 'ratelimit']);

async function healthCheck(service: string, serving: () => Promise<boolean>): Promise<object> {
  if (!HEALTH_NAMES.has(service)) {
    throw new GrpcStatusError(GRPC_STATUS.NOT_FOUND, `unknown service ${JSON.stringify(service.slice(0, 128))}`);
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

/**
 * Answers a call with what its method's handler resolves to. Refusals carry their message;
 * anything else is memgate's fault, logged here and answered INTERNAL with nothing of its
 * message, which Envoy handles as it handles an unreachable service (its failure_mode_deny).
 */
function answer(
  method: UnaryMethod,
  log: GrpcLog,
  request: unknown,
  headers: IncomingHttpHeaders,
  to: {
    reply: (body: Buffer, headers: Reply['headers']) => void;
    refuse: (code: GrpcStatusCode, message: string) => void;
  },
): void {
  Promise.resolve()
    .then(() => method.handle(request, headers))
    .then(
      ({ body, headers }) => {
        to.reply(body, headers);
      },
      (error: unknown) => {
        if (error instanceof InvalidRateLimitRequestError) {
          to.refuse(GRPC_STATUS.INVALID_ARGUMENT, error.message);
        } else if (error instanceof GrpcStatusError) {
          to.refuse(error.code, error.message);
        } else {
          log.error({ err: error }, `gRPC ${method.name} failed`);
          method.onInternal?.();
          to.refuse(GRPC_STATUS.INTERNAL, `memgate could not answer ${method.name}; its log says why`);
        }
      },
    )
    .catch((error: unknown) => {
      log.error({ err: error }, `the answer to gRPC ${method.name} could not be sent`);
    });
}
