// The lean generator's bytes against the two decoders memgate could be read by: protobufjs and
// @grpc/proto-loader with memgate's own options followed by memgate's requestFromWire; and its
// one-varint reading of overall_code against a full decode of responses memgate encodes.
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { requestFromWire, responseToWire, type RateLimitResponse } from '../../src/grpc/messages.js';
import { shouldRateLimitCodec } from '../../test/helpers/rls-codec.js';
import { decodedOverallCode, grpcFrame, overallCodeOf, rateLimitMessages, requestFrames } from './lean-grpc.js';

const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));
// What memgate's gRPC server loads (src/grpc/server.ts).
const shouldRateLimit = shouldRateLimitCodec;

/** The frame's message, after checking its 5-byte prefix: not compressed, the right length. */
function messageOf(frame: Buffer): Buffer {
  expect(frame[0]).toBe(0);
  expect(frame.readUInt32BE(1)).toBe(frame.length - 5);
  return frame.subarray(5);
}

describe('the lean generator’s requests', () => {
  const frameFor = requestFrames({
    domain: 'bench',
    descriptors: [
      [{ key: 'client', value: '%feature' }],
      [
        { key: 'tenant', value: 'acme' },
        { key: 'route', value: '/api/%feature' },
      ],
    ],
  });

  it('decode with protobufjs, read from the .proto afresh, to the intended request', () => {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => `${PROTO_DIR}${target}`;
    root.loadSync('envoy/service/ratelimit/v3/rls.proto', { keepCase: true });
    const type = root.lookupType('envoy.service.ratelimit.v3.RateLimitRequest');
    expect(type.toObject(type.decode(messageOf(frameFor('client-42'))))).toEqual({
      domain: 'bench',
      descriptors: [
        { entries: [{ key: 'client', value: 'client-42' }] },
        {
          entries: [
            { key: 'tenant', value: 'acme' },
            { key: 'route', value: '/api/client-42' },
          ],
        },
      ],
      hits_addend: 1,
    });
  });

  it('decode with proto-loader as memgate’s server does, and memgate’s requestFromWire reads them as intended', () => {
    const decoded = shouldRateLimit.requestDeserialize(messageOf(frameFor('client-7')));
    expect(requestFromWire(decoded)).toEqual({
      domain: 'bench',
      descriptors: [
        { entries: [{ key: 'client', value: 'client-7' }] },
        {
          entries: [
            { key: 'tenant', value: 'acme' },
            { key: 'route', value: '/api/client-7' },
          ],
        },
      ],
      hitsAddend: 1,
    });
  });

  it('are encoded once per feature, and differ between features', () => {
    expect(frameFor('client-1')).toBe(frameFor('client-1'));
    expect(frameFor('client-2').equals(frameFor('client-1'))).toBe(false);
    const constant = requestFrames({ domain: 'bench', descriptors: [[{ key: 'path', value: '/' }]], hitsAddend: 3 });
    expect(constant('a')).toBe(constant('b'));
    expect(requestFromWire(shouldRateLimit.requestDeserialize(messageOf(constant('a'))))).toMatchObject({
      hitsAddend: 3,
    });
  });
});

/** A response as memgate's server encodes it: responseToWire, then proto-loader's serializer. */
const memgateFrame = (response: RateLimitResponse) =>
  grpcFrame(shouldRateLimit.responseSerialize(responseToWire(response, response.statuses.length)));

const OK: RateLimitResponse = {
  overallCode: 'OK',
  statuses: [
    {
      code: 'OK',
      currentLimit: { name: 'per-client', requestsPerUnit: 100, unit: 'MINUTE' },
      limitRemaining: 99,
      durationUntilResetSeconds: 43,
    },
  ],
  responseHeadersToAdd: [
    { key: 'ratelimit-policy', value: '"per-client";q=100;w=60' },
    { key: 'ratelimit', value: '"per-client";r=99;t=43' },
  ],
};
const OVER_LIMIT: RateLimitResponse = {
  overallCode: 'OVER_LIMIT',
  statuses: [
    { code: 'OK', currentLimit: { name: 'wide', requestsPerUnit: 1000, unit: 'HOUR' }, limitRemaining: 900 },
    {
      code: 'OVER_LIMIT',
      currentLimit: { name: 'tight', requestsPerUnit: 1, unit: 'SECOND' },
      limitRemaining: 0,
      durationUntilResetSeconds: 1,
    },
  ],
  responseHeadersToAdd: [
    { key: 'ratelimit-policy', value: '"wide";q=1000;w=3600, "tight";q=1;w=1' },
    { key: 'ratelimit', value: '"tight";r=0;t=1' },
    { key: 'retry-after', value: '1' },
  ],
};

describe('the lean reading of overall_code', () => {
  it.each([
    ['OK', OK, 1],
    ['OVER_LIMIT', OVER_LIMIT, 2],
  ])('agrees with a full decode of memgate’s %s response', (_name, response, code) => {
    const frame = memgateFrame(response);
    expect(decodedOverallCode(frame)).toBe(code);
    expect(overallCodeOf(frame)).toBe(code);
  });

  it('finds the field after others, as a decoder must when an encoder puts it last', () => {
    // Protobuf messages concatenated are merged: statuses and headers first, overall_code last.
    const { response } = rateLimitMessages();
    const { statuses, responseHeadersToAdd } = responseToWire(OVER_LIMIT, 2);
    const rest = response.encode(response.fromObject({ statuses, responseHeadersToAdd })).finish();
    const code = response.encode(response.fromObject({ overallCode: 'OVER_LIMIT' })).finish();
    const frame = grpcFrame(Buffer.concat([rest, code]));
    expect(rest[0]).not.toBe(0x08);
    expect(decodedOverallCode(frame)).toBe(2);
    expect(overallCodeOf(frame)).toBe(2);
  });

  it('reads an absent overall_code as UNKNOWN (0), as proto3 decodes it', () => {
    const frame = grpcFrame(Buffer.alloc(0));
    expect(decodedOverallCode(frame)).toBe(0);
    expect(overallCodeOf(frame)).toBe(0);
  });

  it('refuses a frame it cannot read whole: compressed, cut short, or with bytes beyond its length', () => {
    const frame = memgateFrame(OK);
    const compressed = Buffer.from(frame);
    compressed[0] = 1;
    expect(overallCodeOf(compressed)).toBeUndefined();
    expect(overallCodeOf(frame.subarray(0, frame.length - 1))).toBeUndefined();
    expect(overallCodeOf(Buffer.concat([frame, Buffer.from([0])]))).toBeUndefined();
    expect(overallCodeOf(frame.subarray(0, 3))).toBeUndefined();
  });
});
