import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shouldRateLimitCodec } from '../../test/helpers/rls-codec.js';
import { framed, PREFIX_BYTES } from './framing.js';
import {
  responseToWire,
  type DescriptorStatus,
  type HeaderValue,
  type MetadataValue,
  type RateLimitResponse,
  type RateLimitUnit,
} from './messages.js';
import { framedResponse } from './response-encoder.js';

// The server's codec: proto-loader's, with its options (server.ts).
const method = shouldRateLimitCodec;
const serialize = (wire: object): Buffer => method.responseSerialize(wire);

/** The encoding the hand encoder replaces: responseToWire, proto-loader, framed. */
const before = (response: RateLimitResponse, descriptorCount: number) =>
  framed(serialize(responseToWire(response, descriptorCount)));
const encoded = (response: RateLimitResponse, descriptorCount: number) =>
  framedResponse(response, descriptorCount, serialize);

/** A framed message, checked for its prefix and decoded by proto-loader. */
function decoded(frame: Buffer): unknown {
  expect(frame[0]).toBe(0);
  expect(frame.readUInt32BE(1)).toBe(frame.length - PREFIX_BYTES);
  return method.responseDeserialize(frame.subarray(PREFIX_BYTES));
}

/** What either encoding does with a response: its bytes, or the message it throws. */
function outcome(encode: () => Buffer): { bytes: string } | { error: string } {
  try {
    return { bytes: encode().toString('hex') };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

const UNITS: readonly RateLimitUnit[] = ['SECOND', 'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'];

// Counts at each varint width's edges, uint32's end and beyond (sent as 0xffff_ffff).
const count = fc.oneof(
  fc.constantFrom(0, 1, 127, 128, 16_383, 16_384, 2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1, 2 ** 28, 2 ** 32 - 1, 2 ** 32),
  fc.nat(),
  fc.maxSafeNat(),
);
// Seconds as an int64 holds them: 0, past 32 bits, past 2^53 (whole doubles), at and past 2^63 (sent as 2^63 - 1).
const seconds = fc.oneof(
  fc.constantFrom(0, 1, 60, 3_600, 2 ** 32 - 1, 2 ** 32, 2 ** 35 + 7, 2 ** 53, 2 ** 62, 2 ** 63 - 1024, 2 ** 63, 1e20),
  fc.nat(),
  fc.maxSafeNat(),
);
// Text past 40 characters (where protobufjs changes how it writes UTF-8) and past 127 bytes (a two-byte length).
const text = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 8 }), fc.string({ unit: 'grapheme', maxLength: 120 }));
const header: fc.Arbitrary<HeaderValue> = fc.record({ key: text, value: text });
const headers = fc.array(header, { maxLength: 4 });
const code = fc.constantFrom('OK' as const, 'OVER_LIMIT' as const);

const status: fc.Arbitrary<DescriptorStatus> = fc.record(
  {
    code,
    currentLimit: fc.record({ name: text, requestsPerUnit: count, unit: fc.constantFrom(...UNITS) }),
    limitRemaining: count,
    durationUntilResetSeconds: seconds,
  },
  { requiredKeys: ['code', 'limitRemaining'] },
);
const metadata: fc.Arbitrary<Record<string, MetadataValue>> = fc.dictionary(
  fc.string({ maxLength: 6 }),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<MetadataValue>,
  { maxKeys: 3 },
);
const response: fc.Arbitrary<RateLimitResponse> = fc.record(
  {
    overallCode: code,
    statuses: fc.array(status, { maxLength: 6 }),
    responseHeadersToAdd: headers,
    requestHeadersToAdd: headers,
    dynamicMetadata: metadata,
    policyVersion: fc.string({ maxLength: 12 }),
    degraded: fc.boolean(),
  },
  { requiredKeys: ['overallCode', 'statuses'] },
);

describe('framedResponse, the hand-written encoder of ShouldRateLimit answers', () => {
  it('writes the bytes responseToWire, proto-loader and framed wrote, for every response (fast-check)', () => {
    fc.assert(
      fc.property(response, (answer) => {
        const bytes = encoded(answer, answer.statuses.length);
        expect(bytes.toString('hex')).toBe(before(answer, answer.statuses.length).toString('hex'));
        expect(decoded(bytes)).toEqual(decoded(before(answer, answer.statuses.length)));
      }),
      { numRuns: 2000 },
    );
  });

  it('writes the message Envoy reads: fields as rls.proto numbers them, policyVersion and degraded left out', () => {
    const answer: RateLimitResponse = {
      overallCode: 'OVER_LIMIT',
      statuses: [
        {
          code: 'OVER_LIMIT',
          currentLimit: { name: 'per-user ✓', requestsPerUnit: 100, unit: 'WEEK' },
          limitRemaining: 0,
          durationUntilResetSeconds: 2 ** 40,
        },
        { code: 'OK', limitRemaining: 2 ** 40 },
      ],
      responseHeadersToAdd: [{ key: 'x-ratelimit-limit', value: '100, 100;w=604800' }],
      requestHeadersToAdd: [{ key: 'x-über', value: '' }],
      policyVersion: 'v7',
      degraded: true,
    };
    expect(decoded(encoded(answer, 2))).toEqual({
      overallCode: 'OVER_LIMIT',
      statuses: [
        {
          code: 'OVER_LIMIT',
          currentLimit: { name: 'per-user ✓', requestsPerUnit: 100, unit: 'WEEK' },
          limitRemaining: 0,
          durationUntilReset: { seconds: 2 ** 40, nanos: 0 },
        },
        { code: 'OK', currentLimit: null, limitRemaining: 0xffff_ffff, durationUntilReset: null },
      ],
      responseHeadersToAdd: [{ key: 'x-ratelimit-limit', value: '100, 100;w=604800', rawValue: Buffer.alloc(0) }],
      requestHeadersToAdd: [{ key: 'x-über', value: '', rawValue: Buffer.alloc(0) }],
      dynamicMetadata: null,
    });
    // The smallest answer: OK for no descriptor (a response Envoy never asks for, but one the type allows).
    expect(encoded({ overallCode: 'OK', statuses: [] }, 0)).toEqual(Buffer.from([0, 0, 0, 0, 2, 0x08, 0x01]));
  });

  it('writes a message larger than one socket chunk, with lengths of several bytes', () => {
    const long = 'é'.repeat(40_000);
    const answer: RateLimitResponse = {
      overallCode: 'OK',
      statuses: [{ code: 'OK', currentLimit: { name: long, requestsPerUnit: 1, unit: 'SECOND' }, limitRemaining: 1 }],
      responseHeadersToAdd: [{ key: 'k', value: long }],
    };
    expect(encoded(answer, 1).equals(before(answer, 1))).toBe(true);
  });

  it('throws what responseToWire throws, for any response it refuses (fast-check)', () => {
    const bad = <T>(good: fc.Arbitrary<T>, ...wrong: unknown[]) =>
      fc.oneof({ arbitrary: good, weight: 4 }, { arbitrary: fc.constantFrom(...wrong) as fc.Arbitrary<T>, weight: 1 });
    const loose = fc.record(
      {
        overallCode: bad(code, 'UNKNOWN', 'ok', undefined),
        statuses: fc.array(
          fc.record(
            {
              code: bad(code, 'UNKNOWN', 0),
              currentLimit: fc.record({
                name: text,
                requestsPerUnit: bad(count, -1, 1.5, NaN, Infinity),
                unit: bad(fc.constantFrom(...UNITS), 'FORTNIGHT', 'UNKNOWN'),
              }),
              limitRemaining: bad(count, -1, 0.5, NaN),
              durationUntilResetSeconds: bad(seconds, -1, 1.5, Infinity, NaN),
            },
            { requiredKeys: ['code', 'limitRemaining'] },
          ),
          { maxLength: 3 },
        ),
        responseHeadersToAdd: headers,
        dynamicMetadata: metadata,
      },
      { requiredKeys: ['overallCode', 'statuses'] },
    ) as fc.Arbitrary<RateLimitResponse>;
    fc.assert(
      fc.property(loose, fc.integer({ min: -1, max: 1 }), (answer, off) => {
        const descriptors = answer.statuses.length + off;
        expect(outcome(() => encoded(answer, descriptors))).toEqual(outcome(() => before(answer, descriptors)));
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    [{ overallCode: 'NOPE', statuses: [] }, 0, 'overallCode "NOPE" is not OK or OVER_LIMIT'],
    [{ overallCode: 'OK', statuses: [] }, 2, '0 statuses for 2 descriptors'],
    [
      { overallCode: 'OK', statuses: [{ code: 'UNKNOWN', limitRemaining: 0 }] },
      1,
      'statuses[0].code "UNKNOWN" is not OK or OVER_LIMIT',
    ],
    [
      {
        overallCode: 'OK',
        statuses: [
          { code: 'OK', limitRemaining: 0 },
          { code: 'OK', currentLimit: { name: '', requestsPerUnit: 1, unit: 'FORTNIGHT' }, limitRemaining: 0 },
        ],
      },
      2,
      'statuses[1].currentLimit.unit "FORTNIGHT" is not a unit',
    ],
    [
      {
        overallCode: 'OK',
        statuses: [{ code: 'OK', currentLimit: { name: '', requestsPerUnit: -1, unit: 'DAY' }, limitRemaining: 0 }],
      },
      1,
      'statuses[0].currentLimit.requestsPerUnit -1 is not a count',
    ],
    [
      { overallCode: 'OK', statuses: [{ code: 'OK', limitRemaining: 2.5 }] },
      1,
      'statuses[0].limitRemaining 2.5 is not a count',
    ],
    [
      { overallCode: 'OK', statuses: [{ code: 'OK', limitRemaining: -1, durationUntilResetSeconds: 0.5 }] },
      1,
      'statuses[0].durationUntilResetSeconds 0.5 is not a whole number of seconds',
    ],
  ])('throws responseToWire’s message: %j for %i descriptors', (answer, descriptors, message) => {
    const response = answer as unknown as RateLimitResponse;
    expect(() => encoded(response, descriptors)).toThrow(new Error(message));
    expect(() => before(response, descriptors)).toThrow(new Error(message));
  });

  it('encodes a response with dynamic metadata the old way, and one with an empty Struct as one without', () => {
    const answer: RateLimitResponse = {
      overallCode: 'OK',
      statuses: [{ code: 'OK', limitRemaining: 3 }],
      dynamicMetadata: { reservation: 'r-1', descriptors: [{ key: 'user', n: 2, ok: true, none: null }] },
    };
    expect(encoded(answer, 1)).toEqual(before(answer, 1));
    expect((decoded(encoded(answer, 1)) as { dynamicMetadata: unknown }).dynamicMetadata).not.toBeNull();
    const empty = { ...answer, dynamicMetadata: {} };
    expect(encoded(empty, 1)).toEqual(encoded({ overallCode: 'OK', statuses: answer.statuses }, 1));
    expect(encoded(empty, 1)).toEqual(before(empty, 1));
  });
});
