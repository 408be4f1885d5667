// ShouldRateLimit's answer, envoy.service.ratelimit.v3.RateLimitResponse, written by hand from
// memgate's RateLimitResponse straight into the framed message gRPC sends: its 5-byte prefix
// (framing.ts), then the message, in one buffer of exactly its size. The sizes are measured
// first, then the bytes written; no wire-shaped object is built. It writes, byte for byte, what
// responseToWire's object encoded by proto-loader (protobufjs) and framed() did, at a fraction of
// the CPU: fields in field-number order, and every scalar the object sets written even when it is
// proto3's default (protobufjs writes a set 0 or '': `limit_remaining: 0`, Duration's `nanos: 0`).
//
// The fields (proto/envoy/service/ratelimit/v3/rls.proto, proto/envoy/config/core/v3/base.proto):
//   RateLimitResponse: 1 overall_code (Code), 2 statuses (DescriptorStatus, repeated),
//     3 response_headers_to_add, 4 request_headers_to_add (HeaderValue, repeated),
//     6 dynamic_metadata (google.protobuf.Struct)
//   DescriptorStatus: 1 code (Code), 2 current_limit (RateLimit), 3 limit_remaining (uint32),
//     4 duration_until_reset (google.protobuf.Duration: 1 seconds int64, 2 nanos int32)
//   RateLimit: 1 requests_per_unit (uint32), 2 unit (Unit), 3 name (string)
//   HeaderValue: 1 key, 2 value (strings; 3 raw_value memgate never sets)
// dynamic_metadata, a Struct of any JSON, is rare (a reservation's id, or upstream's description of
// the call when asked for): a response that carries it is encoded the old way, whole.
import { framed, PREFIX_BYTES } from './framing.js';
import {
  checkResponse,
  hasDynamicMetadata,
  responseToWire,
  uint32,
  type CurrentLimit,
  type DescriptorStatus,
  type HeaderValue,
  type RateLimitCode,
  type RateLimitResponse,
  type RateLimitUnit,
  type WireResponse,
} from './messages.js';

/** proto-loader's encoder of the message (its method's responseSerialize), for a response with dynamic metadata. */
export type ResponseSerializer = (wire: WireResponse) => Uint8Array;

const NONE: readonly HeaderValue[] = [];

/** RateLimitResponse.Code's numbers. */
const CODE: Readonly<Record<RateLimitCode, number>> = { OK: 1, OVER_LIMIT: 2 };

/** RateLimitResponse.RateLimit.Unit's numbers: WEEK came last, as 7. */
const UNIT: Readonly<Record<RateLimitUnit, number>> = {
  SECOND: 1,
  MINUTE: 2,
  HOUR: 3,
  DAY: 4,
  MONTH: 5,
  YEAR: 6,
  WEEK: 7,
};

// Each field's key, one byte: its number << 3 | its wire type (0 a varint, 2 length-delimited).
const RESPONSE_OVERALL_CODE = (1 << 3) | 0;
const RESPONSE_STATUS = (2 << 3) | 2;
const RESPONSE_RESPONSE_HEADER = (3 << 3) | 2;
const RESPONSE_REQUEST_HEADER = (4 << 3) | 2;
const STATUS_CODE = (1 << 3) | 0;
const STATUS_CURRENT_LIMIT = (2 << 3) | 2;
const STATUS_LIMIT_REMAINING = (3 << 3) | 0;
const STATUS_DURATION_UNTIL_RESET = (4 << 3) | 2;
const LIMIT_REQUESTS_PER_UNIT = (1 << 3) | 0;
const LIMIT_UNIT = (2 << 3) | 0;
const LIMIT_NAME = (3 << 3) | 2;
const DURATION_SECONDS = (1 << 3) | 0;
const DURATION_NANOS = (2 << 3) | 0;
const HEADER_KEY = (1 << 3) | 2;
const HEADER_VALUE = (2 << 3) | 2;

/** Duration's `nanos: 0`, as protobufjs writes the 0 responseToWire sets: its key and a 0. */
const NANOS_BYTES = 2;

/**
 * The framed answer to ShouldRateLimit: the prefix, then the message. Throws what responseToWire
 * throws (checkResponse) for a response that does not fit `descriptorCount` or the protocol.
 */
export function framedResponse(
  response: RateLimitResponse,
  descriptorCount: number,
  serialize: ResponseSerializer,
): Buffer {
  if (hasDynamicMetadata(response)) return framed(serialize(responseToWire(response, descriptorCount)));
  checkResponse(response, descriptorCount);
  const messageBytes = measure(response);
  const frame = Buffer.allocUnsafe(PREFIX_BYTES + messageBytes);
  frame[0] = 0;
  frame.writeUInt32BE(messageBytes, 1);
  lengthsRead = 0;
  const end = writeResponse(frame, PREFIX_BYTES, response);
  if (end !== frame.length) throw new Error(`the response took ${end} bytes of the ${frame.length} measured`);
  return frame;
}

// The lengths the writing needs ahead of what it writes (a nested message's, a string's UTF-8
// bytes), recorded by `measure` in the order the writing reads them. One array for every call,
// which only grows: an encoding is synchronous, so one at a time.
const lengths: number[] = [];
let lengthsKept = 0;
let lengthsRead = 0;

/** Records a length to come, filled in once known; its slot. */
function reserve(): number {
  lengths[lengthsKept] = 0;
  return lengthsKept++;
}
const keep = (length: number) => {
  lengths[lengthsKept++] = length;
};
const nextLength = () => lengths[lengthsRead++] as number;

/** The message's bytes, each nested length recorded in `lengths`. */
function measure(response: RateLimitResponse): number {
  lengthsKept = 0;
  let bytes = 1 + varintBytes(CODE[response.overallCode]);
  for (const status of response.statuses) bytes += 1 + delimitedBytes(measureStatus(status));
  for (const header of response.responseHeadersToAdd ?? NONE) bytes += 1 + delimitedBytes(measureHeader(header));
  for (const header of response.requestHeadersToAdd ?? NONE) bytes += 1 + delimitedBytes(measureHeader(header));
  return bytes;
}

function measureStatus(status: DescriptorStatus): number {
  const slot = reserve();
  let bytes = 1 + varintBytes(CODE[status.code]);
  if (status.currentLimit) bytes += 1 + delimitedBytes(measureLimit(status.currentLimit));
  bytes += 1 + varintBytes(uint32(status.limitRemaining));
  const seconds = status.durationUntilResetSeconds;
  if (seconds !== undefined) bytes += 1 + delimitedBytes(durationBytes(seconds));
  lengths[slot] = bytes;
  return bytes;
}

function measureLimit(limit: CurrentLimit): number {
  const slot = reserve();
  const nameBytes = utf8Bytes(limit.name);
  keep(nameBytes);
  const bytes =
    1 + varintBytes(uint32(limit.requestsPerUnit)) + 1 + varintBytes(UNIT[limit.unit]) + 1 + delimitedBytes(nameBytes);
  lengths[slot] = bytes;
  return bytes;
}

function measureHeader(header: HeaderValue): number {
  const keyBytes = utf8Bytes(header.key);
  const valueBytes = utf8Bytes(header.value);
  keep(keyBytes);
  keep(valueBytes);
  return 1 + delimitedBytes(keyBytes) + 1 + delimitedBytes(valueBytes);
}

const durationBytes = (seconds: number) => 1 + int64Bytes(seconds) + NANOS_BYTES;

/** A length-delimited field's value: its length's varint, then the bytes. */
const delimitedBytes = (bytes: number) => varintBytes(bytes) + bytes;

/** A uint32's varint: 7 bits a byte. */
const varintBytes = (value: number) =>
  value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x20_0000 ? 3 : value < 0x1000_0000 ? 4 : 5;

// The writers take the offset to write at and return the offset after what they wrote.

function writeResponse(buffer: Buffer, at: number, response: RateLimitResponse): number {
  buffer[at++] = RESPONSE_OVERALL_CODE;
  at = writeVarint(buffer, at, CODE[response.overallCode]);
  for (const status of response.statuses) {
    buffer[at++] = RESPONSE_STATUS;
    at = writeStatus(buffer, at, status);
  }
  for (const header of response.responseHeadersToAdd ?? NONE) {
    buffer[at++] = RESPONSE_RESPONSE_HEADER;
    at = writeHeader(buffer, at, header);
  }
  for (const header of response.requestHeadersToAdd ?? NONE) {
    buffer[at++] = RESPONSE_REQUEST_HEADER;
    at = writeHeader(buffer, at, header);
  }
  return at;
}

function writeStatus(buffer: Buffer, at: number, status: DescriptorStatus): number {
  at = writeVarint(buffer, at, nextLength());
  buffer[at++] = STATUS_CODE;
  at = writeVarint(buffer, at, CODE[status.code]);
  const limit = status.currentLimit;
  if (limit) {
    buffer[at++] = STATUS_CURRENT_LIMIT;
    at = writeVarint(buffer, at, nextLength());
    buffer[at++] = LIMIT_REQUESTS_PER_UNIT;
    at = writeVarint(buffer, at, uint32(limit.requestsPerUnit));
    buffer[at++] = LIMIT_UNIT;
    at = writeVarint(buffer, at, UNIT[limit.unit]);
    buffer[at++] = LIMIT_NAME;
    at = writeString(buffer, at, limit.name, nextLength());
  }
  buffer[at++] = STATUS_LIMIT_REMAINING;
  at = writeVarint(buffer, at, uint32(status.limitRemaining));
  const seconds = status.durationUntilResetSeconds;
  if (seconds !== undefined) {
    buffer[at++] = STATUS_DURATION_UNTIL_RESET;
    at = writeVarint(buffer, at, durationBytes(seconds));
    buffer[at++] = DURATION_SECONDS;
    at = writeInt64(buffer, at, seconds);
    buffer[at++] = DURATION_NANOS;
    buffer[at++] = 0;
  }
  return at;
}

function writeHeader(buffer: Buffer, at: number, header: HeaderValue): number {
  const keyBytes = nextLength();
  const valueBytes = nextLength();
  at = writeVarint(buffer, at, 1 + delimitedBytes(keyBytes) + 1 + delimitedBytes(valueBytes));
  buffer[at++] = HEADER_KEY;
  at = writeString(buffer, at, header.key, keyBytes);
  buffer[at++] = HEADER_VALUE;
  return writeString(buffer, at, header.value, valueBytes);
}

// Names and headers are short ASCII, mostly: for those a loop in JavaScript is several times
// quicker than a call into Buffer's UTF-8 (as protobufjs found); the rest is Buffer's.
const SHORT = 64;

/** A string's UTF-8 bytes (a lone surrogate as U+FFFD's 3, as Buffer writes it). */
function utf8Bytes(text: string): number {
  if (text.length > SHORT) return Buffer.byteLength(text);
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return Buffer.byteLength(text);
  return text.length;
}

/** A string's length, then its `bytes` of UTF-8. */
function writeString(buffer: Buffer, at: number, text: string, bytes: number): number {
  at = writeVarint(buffer, at, bytes);
  // As many bytes as characters: ASCII.
  if (bytes === text.length && bytes <= SHORT) {
    for (let i = 0; i < bytes; i++) buffer[at++] = text.charCodeAt(i);
    return at;
  }
  return at + buffer.write(text, at, bytes, 'utf8');
}

/** A uint32 (at most 0xffff_ffff) as a varint. */
function writeVarint(buffer: Buffer, at: number, value: number): number {
  while (value > 0x7f) {
    buffer[at++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  buffer[at++] = value;
  return at;
}

// Duration's seconds are an int64. A checked count of seconds is a whole number >= 0; beyond
// 2^63 - 1 protobufjs (through long.js) sends 2^63 - 1, and so does this.
const INT64_MAX = 2 ** 63;
const INT64_MAX_VARINT = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);

/** A whole number >= 0 as an int64's varint. */
function int64Bytes(value: number): number {
  if (value <= 0xffff_ffff) return varintBytes(value);
  if (value >= INT64_MAX) return INT64_MAX_VARINT.length;
  let bytes = 1;
  // Dividing a whole double by 128 is exact: no bitwise operators, which hold 32 bits.
  for (; value >= 0x80; bytes++) value = Math.floor(value / 0x80);
  return bytes;
}

function writeInt64(buffer: Buffer, at: number, value: number): number {
  if (value <= 0xffff_ffff) return writeVarint(buffer, at, value);
  if (value >= INT64_MAX) return at + INT64_MAX_VARINT.copy(buffer, at);
  for (; value >= 0x80; value = Math.floor(value / 0x80)) buffer[at++] = (value % 0x80) | 0x80;
  buffer[at++] = value;
  return at;
}
