// The floors of the grpc bench suite: servers that answer every ShouldRateLimit call with the same
// constant response and decide nothing, each in its own process (grpc-floor-server.mjs), so that
// the bench can tell which part of gRPC's cost is the transport.
import { spawn } from 'node:child_process';
import { grpcFrame, rateLimitMessages } from './lean-grpc.js';

/** What memgate answers the bench's allowed call (one descriptor, a minute's limit), field names in camelCase. */
export const CONSTANT_RESPONSE = {
  overallCode: 'OK',
  statuses: [
    {
      code: 'OK',
      currentLimit: { name: 'client', requestsPerUnit: 1_000_000_000, unit: 'MINUTE' },
      limitRemaining: 999_999_999,
      durationUntilReset: { seconds: 60, nanos: 0 },
    },
  ],
  responseHeadersToAdd: [
    { key: 'ratelimit-policy', value: '"client";q=1000000000;w=60' },
    { key: 'ratelimit', value: '"client";r=999999999;t=60' },
  ],
  requestHeadersToAdd: [],
};

/**
 * grpc-js: @grpc/grpc-js and @grpc/proto-loader with memgate's own options, its transport until issue 39.
 * http2: node:http2 answering gRPC by hand with a pre-encoded frame, Node's HTTP/2 alone.
 * connect: @connectrpc/connect-node with protobuf-es's generated messages, a candidate transport.
 */
export const FLOORS = ['grpc-js', 'http2', 'connect'] as const;
export type Floor = (typeof FLOORS)[number];

export interface FloorServer {
  /** `127.0.0.1:port`. */
  readonly address: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** A floor's server process; resolves once it listens. */
export function startFloor(floor: Floor): Promise<FloorServer> {
  const { response } = rateLimitMessages();
  // grpc-js and connect encode the response themselves, per call; node:http2 sends these bytes as they are.
  const answer =
    floor === 'http2'
      ? grpcFrame(response.encode(response.fromObject(CONSTANT_RESPONSE)).finish()).toString('base64')
      : JSON.stringify(CONSTANT_RESPONSE);
  const child = spawn(process.execPath, ['scripts/bench/grpc-floor-server.mjs', floor, answer], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        done();
        return;
      }
      child.removeAllListeners('exit');
      child.once('exit', () => {
        done();
      });
      child.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      reject(new Error(`the ${floor} floor server exited with ${String(code)} before listening`));
    });
    child.stdout.once('data', (chunk: Buffer) => {
      const { port } = JSON.parse(chunk.toString()) as { port: number };
      resolve({ address: `127.0.0.1:${port}`, pid: child.pid ?? 0, stop });
    });
  });
}
