import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shouldRateLimitCodec } from '../../test/helpers/rls-codec.js';
import { REQUEST_LIMITS } from './messages.js';
import { requestDecoder } from './server.js';
import { requestProblem } from './wire-scan.js';

const method = shouldRateLimitCodec;
const encode = (request: object): Buffer => method.requestSerialize(request);

interface Entry {
  key: string;
  value: string;
}
const request = (descriptors: Entry[][], domain = 'edge') =>
  encode({
    domain,
    descriptors: descriptors.map((entries) => ({
      entries,
      hitsAddend: { value: 3 },
      limit: { requestsPerUnit: 5, unit: 'MINUTE' },
    })),
    hitsAddend: 2,
  });

/** A message with one text field's bytes as given, built by hand as protobuf lays it out. */
function withBytes(where: 'domain' | 'key' | 'value', bytes: Buffer): Buffer {
  const field = (number: number, body: Buffer) => Buffer.concat([Buffer.from([(number << 3) | 2, body.length]), body]);
  const text = (name: typeof where, fallback: string) => (name === where ? bytes : Buffer.from(fallback));
  const entry = Buffer.concat([field(1, text('key', 'user')), field(2, text('value', 'jo'))]);
  return Buffer.concat([field(1, text('domain', 'edge')), field(2, field(1, entry))]);
}

describe('requestProblem, before a RateLimitRequest is decoded', () => {
  it('lets through every request within the limits, whatever its text (fast-check)', () => {
    const text = (maxLength: number) =>
      fc.string({ unit: 'grapheme', maxLength }).filter((s) => Buffer.byteLength(s) <= maxLength);
    const entry = fc.record({ key: text(64), value: text(256) });
    fc.assert(
      fc.property(
        fc.array(fc.array(entry, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 16 }),
        text(64),
        (descriptors, domain) => {
          expect(requestProblem(request(descriptors, domain))).toBeUndefined();
        },
      ),
    );
  });

  it('counts descriptors beyond the limit without reading them', () => {
    const many = Array.from({ length: 9000 }, () => [{ key: 'a', value: '' }]);
    expect(requestProblem(request(many))).toBe(`9000 descriptors; at most ${REQUEST_LIMITS.descriptors} are allowed`);
    const atLimit = Array.from({ length: REQUEST_LIMITS.descriptors }, () => [{ key: 'a', value: 'b' }]);
    expect(requestProblem(request(atLimit))).toBeUndefined();
  });

  it('counts the entries of a descriptor, naming it', () => {
    const entries = Array.from({ length: REQUEST_LIMITS.entriesPerDescriptor + 1 }, (_, i) => ({
      key: `k${i}`,
      value: 'v',
    }));
    expect(requestProblem(request([[{ key: 'a', value: 'b' }], entries]))).toBe(
      `descriptors[1] has ${REQUEST_LIMITS.entriesPerDescriptor + 1} entries; at most ${REQUEST_LIMITS.entriesPerDescriptor} are allowed`,
    );
  });

  it('measures text in the bytes sent: a value of 1024 two-byte characters is 2048 bytes', () => {
    expect(requestProblem(request([[{ key: 'k', value: 'é'.repeat(512) }]]))).toBeUndefined();
    expect(requestProblem(request([[{ key: 'k', value: 'é'.repeat(513) }]]))).toBe(
      `descriptors[0].entries[0].value is 1026 bytes; at most ${REQUEST_LIMITS.valueBytes} are allowed`,
    );
    expect(requestProblem(request([[{ key: 'k'.repeat(257), value: 'v' }]]))).toMatch(
      /^descriptors\[0\]\.entries\[0\]\.key is 257 bytes/,
    );
    expect(requestProblem(request([[{ key: 'k', value: 'v' }]], 'd'.repeat(257)))).toMatch(/^domain is 257 bytes/);
  });

  it('names the text field whose bytes are not UTF-8', () => {
    const latin1 = Buffer.from([0x4a, 0x6f, 0x73, 0xe9]);
    expect(requestProblem(withBytes('value', latin1))).toBe(
      'descriptors[0].entries[0].value is not valid UTF-8, as protobuf strings must be',
    );
    expect(requestProblem(withBytes('key', latin1))).toBe(
      'descriptors[0].entries[0].key is not valid UTF-8, as protobuf strings must be',
    );
    expect(requestProblem(withBytes('domain', latin1))).toBe('domain is not valid UTF-8, as protobuf strings must be');
    // An encoded surrogate (ED A0 80) is not UTF-8 either.
    expect(requestProblem(withBytes('value', Buffer.from([0xed, 0xa0, 0x80])))).toMatch(/value is not valid UTF-8/);
    expect(requestProblem(withBytes('value', Buffer.from('Jos\ufffd')))).toBeUndefined();
  });

  it('leaves bytes that are not a message to the decoder', () => {
    expect(requestProblem(Buffer.from([0x0f, 0x01]))).toBeUndefined();
    expect(requestProblem(Buffer.from([0x12, 0x7f, 0x0a]))).toBeUndefined();
  });
});

describe('the server decodes only what the scan lets through', () => {
  it('refuses 7,000 descriptors, or a value not UTF-8, without decoding a byte', () => {
    let decoded = 0;
    const counting = {
      requestDeserialize: (bytes: Buffer) => {
        decoded++;
        return method.requestDeserialize(bytes);
      },
    };
    const scanned = { requestDeserialize: requestDecoder(counting, requestProblem) };
    const many = Array.from({ length: 7000 }, () => [{ key: 'a', value: '' }]);
    expect(scanned.requestDeserialize(request(many))).toEqual({
      problem: `7000 descriptors; at most ${REQUEST_LIMITS.descriptors} are allowed`,
    });
    expect(scanned.requestDeserialize(withBytes('value', Buffer.from([0xe9])))).toHaveProperty('problem');
    expect(decoded).toBe(0);
    expect(scanned.requestDeserialize(request([[{ key: 'a', value: 'b' }]]))).toMatchObject({ domain: 'edge' });
    expect(decoded).toBe(1);
  });
});
