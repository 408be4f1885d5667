// A lean load generator for Envoy's ShouldRateLimit, for the bench only: node:http2 directly,
// each request a gRPC frame encoded once per feature with protobufjs, each answer read for its
// grpc-status and its overall_code alone. It costs the bench process about what autocannon costs
// for /check, so the two protocols are compared on what memgate spends, not on their clients.
// `npm run load -- --grpc` keeps the full @grpc/grpc-js client (run-grpc-load.ts): a real
// client's behaviour matters there.
import http2 from 'node:http2';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { createHistogram } from 'node:perf_hooks';
import { status as grpcStatus } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import type { FeatureSpread } from '../lib/run-load.js';
import {
  CALL_DEADLINE_SECONDS,
  FEATURE_PLACEHOLDER,
  loadSummary,
  usesFeature,
  type DescriptorTemplate,
  type GrpcLoadSummary,
} from '../lib/run-grpc-load.js';

const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));
export const SHOULD_RATE_LIMIT_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

/** RateLimitResponse.Code's numbers: what overall_code holds on the wire. */
export const OVERALL_CODES: Readonly<Record<number, string>> = { 0: 'UNKNOWN', 1: 'OK', 2: 'OVER_LIMIT' };

/** The failure counted when the lean reading of overall_code and protobufjs's full decoding disagree. */
export const MISREAD = 'overall_code misread';

export interface RateLimitMessages {
  readonly request: protobuf.Type;
  readonly response: protobuf.Type;
}

let messages: RateLimitMessages | undefined;

/** RateLimitRequest and RateLimitResponse from the package's proto/, field names in camelCase as memgate's server reads them. */
export function rateLimitMessages(): RateLimitMessages {
  if (messages) return messages;
  const root = new protobuf.Root();
  // google/protobuf/*.proto are protobufjs's own; everything else is under proto/.
  root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  root.loadSync('envoy/service/ratelimit/v3/rls.proto', { keepCase: false });
  messages = {
    request: root.lookupType('envoy.service.ratelimit.v3.RateLimitRequest'),
    response: root.lookupType('envoy.service.ratelimit.v3.RateLimitResponse'),
  };
  return messages;
}

/** A gRPC length-prefixed message: not compressed, its length in 4 bytes big-endian, the message. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame.writeUInt8(0, 0);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

export interface LeanRequest {
  readonly domain: string;
  readonly descriptors: readonly DescriptorTemplate[];
  /** 1 by default, what Envoy's unset 0 means. */
  readonly hitsAddend?: number;
}

/** The request's frame for a feature (what %feature becomes), encoded once per feature. */
export function requestFrames(request: LeanRequest): (feature: string) => Buffer {
  const { request: type } = rateLimitMessages();
  const encode = (feature: string) =>
    grpcFrame(
      type
        .encode(
          type.fromObject({
            domain: request.domain,
            descriptors: request.descriptors.map((entries) => ({
              entries: entries.map(({ key, value }) => ({
                key,
                value: value.replaceAll(FEATURE_PLACEHOLDER, feature),
              })),
            })),
            hitsAddend: request.hitsAddend ?? 1,
          }),
        )
        .finish(),
    );
  if (!usesFeature(request.descriptors)) {
    const constant = encode('');
    return () => constant;
  }
  const frames = new Map<string, Buffer>();
  return (feature) => {
    let frame = frames.get(feature);
    if (!frame) frames.set(feature, (frame = encode(feature)));
    return frame;
  };
}

/**
 * overall_code (field 1, a varint) of a gRPC response frame, without decoding the rest: the
 * fields before it, if any, are skipped by their wire type. 0 (UNKNOWN) when the field is absent,
 * as proto3 leaves a default out; undefined when the frame is not a whole uncompressed message.
 */
export function overallCodeOf(frame: Buffer): number | undefined {
  if (frame.length < 5 || frame[0] !== 0) return undefined;
  const end = 5 + frame.readUInt32BE(1);
  if (end !== frame.length) return undefined;
  let at = 5;
  const varint = (): number | undefined => {
    let value = 0;
    for (let shift = 0; at < end && shift < 35; shift += 7) {
      const byte = frame[at++] as number;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    return undefined;
  };
  while (at < end) {
    const tag = varint();
    if (tag === undefined) return undefined;
    const wireType = tag & 7;
    if (tag >>> 3 === 1 && wireType === 0) return varint();
    if (wireType === 0) {
      if (varint() === undefined) return undefined;
    } else if (wireType === 2) {
      const length = varint();
      if (length === undefined) return undefined;
      at += length;
    } else if (wireType === 1) at += 8;
    else if (wireType === 5) at += 4;
    else return undefined;
  }
  return at === end ? 0 : undefined;
}

/** overall_code as protobufjs decodes the whole response: what the lean reading is checked against. */
export function decodedOverallCode(frame: Buffer): number {
  const { response } = rateLimitMessages();
  const decoded = response.decode(frame.subarray(5)) as unknown as { overallCode: number };
  return decoded.overallCode;
}

export interface LeanGrpcLoadOptions extends LeanRequest {
  /** The gRPC server, `host:port`. */
  readonly address: string;
  /** Calls in flight at once. */
  readonly connections: number;
  /** HTTP/2 sessions (connections) the calls are spread over, round robin. */
  readonly sessions: number;
  /** Seconds to run, unless `requests` is given. */
  readonly duration?: number;
  readonly requests?: number;
  readonly nextFeature: FeatureSpread;
  /** Every this many answers, one is decoded whole with protobufjs to check the lean reading (default 1,000; 1: all). */
  readonly verifyEvery?: number;
}

const connect = (address: string) =>
  new Promise<http2.ClientHttp2Session>((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    session.once('error', reject);
    session.once('connect', () => {
      session.off('error', reject);
      // Failures after connecting show up on the streams; this keeps them from being thrown.
      session.on('error', () => undefined);
      resolve(session);
    });
  });

/** Drives ShouldRateLimit with `connections` calls in flight, as runGrpcLoad does, at a fraction of its CPU. */
export async function runLeanGrpcLoad(options: LeanGrpcLoadOptions): Promise<GrpcLoadSummary> {
  const nextFrame = requestFrames(options);
  const verifyEvery = options.verifyEvery ?? 1000;
  const sessions = await Promise.all(Array.from({ length: options.sessions }, () => connect(options.address)));
  const headers = {
    ':method': 'POST',
    ':path': SHOULD_RATE_LIMIT_PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
    // What a grpc-js deadline sends; Envoy's filter sends its timeout the same way.
    'grpc-timeout': `${CALL_DEADLINE_SECONDS}S`,
  };
  const histogram = createHistogram();
  const codes: Record<string, number> = {};
  const failures: Record<string, number> = {};
  const failureDetails: Record<string, string> = {};
  const counted = { started: 0, answered: 0, failed: 0 };
  const fail = (kind: string, details: string) => {
    failures[kind] = (failures[kind] ?? 0) + 1;
    failureDetails[kind] ??= details;
    counted.failed++;
  };
  const started = performance.now();
  const endsAt = options.requests === undefined ? started + (options.duration ?? 10) * 1000 : Infinity;
  const more = () => (options.requests === undefined ? performance.now() < endsAt : counted.started < options.requests);

  const call = (session: http2.ClientHttp2Session) =>
    new Promise<void>((resolve) => {
      const sent = performance.now();
      const stream = session.request(headers);
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let message: string | undefined;
      let streamError: string | undefined;
      // A call that fails at once gets its status in the headers (gRPC's trailers-only answer).
      const read = (fields: http2.IncomingHttpHeaders) => {
        const value = fields['grpc-status'];
        if (typeof value === 'string') status = value;
        const text = fields['grpc-message'];
        if (typeof text === 'string') message = decodeURIComponent(text);
      };
      stream.on('response', read);
      stream.on('trailers', read);
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', (error: NodeJS.ErrnoException) => {
        streamError = error.code ?? error.message;
      });
      stream.setTimeout(CALL_DEADLINE_SECONDS * 1000, () => {
        streamError = 'DEADLINE_EXCEEDED';
        stream.close(http2.constants.NGHTTP2_CANCEL);
      });
      stream.on('close', () => {
        // Whole microseconds: the histogram takes integers of at least 1.
        histogram.record(Math.max(1, Math.round((performance.now() - sent) * 1000)));
        if (streamError !== undefined) fail(streamError, streamError);
        else if (status !== '0') {
          const name = status === undefined ? 'no grpc-status' : (grpcStatus[Number(status)] ?? status);
          fail(name, message ?? '');
        } else {
          const frame = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
          const code = overallCodeOf(frame);
          if (code === undefined || (counted.answered % verifyEvery === 0 && decodedOverallCode(frame) !== code)) {
            fail(MISREAD, `${frame.length} bytes: ${frame.subarray(0, 32).toString('hex')}`);
          } else {
            const name = OVERALL_CODES[code] ?? String(code);
            codes[name] = (codes[name] ?? 0) + 1;
            counted.answered++;
          }
        }
        resolve();
      });
      stream.end(nextFrame(options.nextFeature()));
    });

  const worker = async (index: number) => {
    const session = sessions[index % sessions.length] as http2.ClientHttp2Session;
    while (more()) {
      counted.started++;
      await call(session);
    }
  };
  try {
    await Promise.all(Array.from({ length: options.connections }, (_, i) => worker(i)));
  } finally {
    for (const session of sessions) session.close();
  }
  return loadSummary({ started, histogram, codes, counted, failures, failureDetails });
}
