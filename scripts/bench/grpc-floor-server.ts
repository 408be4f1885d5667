// A floor of the grpc bench suite as a process (see grpc-floors.ts): `grpc-floor-server.ts
// grpc-js|http2` listens on a free loopback port, prints {"port": N} once ready, and answers
// every ShouldRateLimit call with the same constant response, deciding nothing.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { CONSTANT_RESPONSE, FLOORS, type Floor } from './grpc-floors.js';
import { grpcFrame, rateLimitMessages } from './lean-grpc.js';

const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));

async function grpcJsFloor(): Promise<{ port: number; close: () => void }> {
  // memgate's server's options (src/grpc/server.ts): the same decoding and encoding work per call.
  const definition = await protoLoader.load('envoy/service/ratelimit/v3/rls.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
  });
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 1024 * 1024 });
  server.addService(definition['envoy.service.ratelimit.v3.RateLimitService'] as grpc.ServiceDefinition, {
    ShouldRateLimit: (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      callback(null, CONSTANT_RESPONSE);
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => {
      if (error) reject(error);
      else resolve(bound);
    });
  });
  return {
    port,
    close: () => {
      server.forceShutdown();
    },
  };
}

async function http2Floor(): Promise<{ port: number; close: () => void }> {
  const { response } = rateLimitMessages();
  const body = grpcFrame(response.encode(response.fromObject(CONSTANT_RESPONSE)).finish());
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
      stream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.close();
    },
  };
}

const floor = process.argv[2] as Floor | undefined;
if (floor === undefined || !FLOORS.includes(floor)) {
  process.stderr.write(`usage: grpc-floor-server.ts ${FLOORS.join('|')}\n`);
  process.exit(2);
}
const server = floor === 'grpc-js' ? await grpcJsFloor() : await http2Floor();
process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
process.once('SIGTERM', () => {
  server.close();
  process.exit(0);
});
