// A floor of the grpc bench suite as a process (see grpc-floors.ts). Plain JavaScript, as memgate
// runs compiled in the same suite: under tsx the floor would pay a loader memgate does not.
//   grpc-floor-server.mjs grpc-js RESPONSE_JSON   @grpc/grpc-js, memgate's proto-loader options
//   grpc-floor-server.mjs http2 FRAME_BASE64      node:http2 answering gRPC by hand
//   grpc-floor-server.mjs connect RESPONSE_JSON   @connectrpc/connect-node on node:http2, protobuf-es messages
// It listens on a free loopback port, prints {"port": N} once ready, and answers every
// ShouldRateLimit call with the same response, deciding nothing.
import { Buffer } from 'node:buffer';
import http2 from 'node:http2';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fromJson } from '@bufbuild/protobuf';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { RateLimitResponseSchema, RateLimitService } from './connect-floor/envoy/service/ratelimit/v3/rls_pb.js';

const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));

async function grpcJsFloor(response) {
  // memgate's server's options (src/grpc/server.ts): the same decoding and encoding work per call.
  const definition = await protoLoader.load('envoy/service/ratelimit/v3/rls.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
  });
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 1024 * 1024 });
  server.addService(definition['envoy.service.ratelimit.v3.RateLimitService'], {
    ShouldRateLimit: (_call, callback) => {
      callback(null, response);
    },
  });
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => {
      if (error) reject(error);
      else resolve(bound);
    });
  });
  return { port, close: () => server.forceShutdown() };
}

async function http2Floor(frame) {
  const head = { ':status': 200, 'content-type': 'application/grpc' };
  const trailers = { 'grpc-status': '0' };
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('error', () => undefined);
    // The request is read to its end, as a gRPC server must, and not decoded.
    stream.resume();
    stream.on('end', () => {
      stream.respond(head, { waitForTrailers: true });
      stream.once('wantTrailers', () => {
        stream.sendTrailers(trailers);
      });
      stream.end(frame);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: server.address().port, close: () => server.close() };
}

async function connectFloor(response) {
  // protobuf-es reads proto3's JSON, where a Duration is a string of seconds.
  const json = {
    ...response,
    statuses: response.statuses.map(({ durationUntilReset, ...status }) => ({
      ...status,
      durationUntilReset: `${durationUntilReset.seconds}s`,
    })),
  };
  // connect-node encodes the answer per call, as memgate would.
  const message = fromJson(RateLimitResponseSchema, json);
  const handler = connectNodeAdapter({
    grpc: true,
    grpcWeb: false,
    connect: false,
    readMaxBytes: 1024 * 1024,
    routes(router) {
      router.service(RateLimitService, { shouldRateLimit: () => message });
    },
  });
  const server = http2.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: server.address().port, close: () => server.close() };
}

const FLOORS = {
  'grpc-js': (response) => grpcJsFloor(JSON.parse(response)),
  http2: (response) => http2Floor(Buffer.from(response, 'base64')),
  connect: (response) => connectFloor(JSON.parse(response)),
};
const [floor, response] = process.argv.slice(2);
if (!Object.hasOwn(FLOORS, floor ?? '') || !response) {
  process.stderr.write(
    'usage: grpc-floor-server.mjs grpc-js RESPONSE_JSON | http2 FRAME_BASE64 | connect RESPONSE_JSON\n',
  );
  process.exit(2);
}
const server = await FLOORS[floor](response);
process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
process.once('SIGTERM', () => {
  server.close();
  process.exit(0);
});
