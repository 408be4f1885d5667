/**
 * The Memcached binary protocol as memgate speaks it: every opcode it sends, and the batch
 * encoding that makes a whole batch one socket write. Layout: https://github.com/memcached/memcached/wiki/BinaryProtocolRevamped
 */
import type { CounterDecrement, CounterIncrement } from '../counter-store.js';
import { HEADER_BYTES } from './reply.js';

export const Opcode = {
  get: 0x00,
  set: 0x01,
  add: 0x02,
  delete: 0x04,
  increment: 0x05,
  decrement: 0x06,
  noop: 0x0a,
  getKQ: 0x0d,
  stat: 0x10,
  saslAuth: 0x21,
} as const;

export const Status = {
  ok: 0x0000,
  keyNotFound: 0x0001,
  /** A SET naming a CAS the item no longer has, or an ADD of a key that exists. */
  keyExists: 0x0002,
  /**
   * An increment's creation lost a race: another connection created the key at the same
   * moment. Some servers answer an ADD of an existing key with it too (1.6 says keyExists).
   */
  notStored: 0x0005,
  authError: 0x0020,
} as const;

const ARITHMETIC_EXTRAS_BYTES = 20;
const STORAGE_EXTRAS_BYTES = 8;
const REQUEST_MAGIC = 0x80;

/** Expiration telling DECREMENT to fail on a missing key instead of creating it. */
const NEVER_CREATE = 0xffffffff;

/** Memcached reads expirations above 30 days as absolute Unix times. */
const MAX_RELATIVE_EXPIRATION = 30 * 86_400;

/** A batch: increments, then decrements, then quiet gets of `reads`, then a no-op. */
export interface BatchRequest {
  readonly increments: readonly CounterIncrement[];
  readonly decrements: readonly CounterDecrement[];
  readonly reads: readonly string[];
}

/** How the increments of a batch set the expiration of the keys they create. */
export interface ExpirationOptions {
  /**
   * Up to this many seconds (whole, 0 for none) added at random to each created key's life, as
   * envoyproxy/ratelimit's EXPIRATION_JITTER_MAX_SECONDS does: keys made together expire apart.
   */
  readonly expirationJitterS: number;
}

const NO_JITTER: ExpirationOptions = { expirationJitterS: 0 };

/** A batch's bytes, and where each read's key lies in them (to match quiet replies by key without making strings). */
export interface EncodedBatch {
  readonly bytes: Buffer;
  readonly readKeyStarts: readonly number[];
  readonly readKeyLengths: readonly number[];
}

/**
 * Encodes a batch with one opaque. The server answers in order: one reply per increment and
 * decrement, one per read key that exists, then the no-op's reply, which closes the batch.
 */
export function encodeBatch(
  batch: BatchRequest,
  opaque: number,
  now: () => number,
  expirations: ExpirationOptions = NO_JITTER,
): EncodedBatch {
  const { increments, decrements, reads } = batch;
  const jitterS = expirations.expirationJitterS;
  let size = HEADER_BYTES;
  for (const op of increments) size += HEADER_BYTES + ARITHMETIC_EXTRAS_BYTES + Buffer.byteLength(op.key);
  for (const op of decrements) size += HEADER_BYTES + ARITHMETIC_EXTRAS_BYTES + Buffer.byteLength(op.key);
  for (const key of reads) size += HEADER_BYTES + Buffer.byteLength(key);
  // From Node's pool, not zeroed (a zeroed buffer is an allocation of its own for every
  // batch): every byte is written below, the header's zero fields too.
  const bytes = Buffer.allocUnsafe(size);
  let offset = 0;
  // A missing key is created holding the delta itself: the first request counts once. The
  // expiration is read only when the increment creates the key, so jitter lengthens a key's
  // life once, at its creation: keys made together (a second's buckets of many clients) then
  // expire apart instead of all at once. A longer life never changes a decision: memgate reads
  // only the buckets of its windows, and a record's hold is judged by the time in its id.
  for (const op of increments)
    offset = writeArithmetic(
      bytes,
      offset,
      Opcode.increment,
      op.key,
      op.delta,
      op.delta,
      expiration(jitterS === 0 ? op.ttlSeconds : op.ttlSeconds + Math.floor(Math.random() * jitterS), now),
      opaque,
    );
  for (const op of decrements)
    offset = writeArithmetic(bytes, offset, Opcode.decrement, op.key, op.delta, 0, NEVER_CREATE, opaque);
  const readKeyStarts: number[] = [];
  const readKeyLengths: number[] = [];
  for (const key of reads) {
    const keyBytes = Buffer.byteLength(key);
    writeHeader(bytes, offset, Opcode.getKQ, keyBytes, 0, opaque);
    readKeyStarts.push(offset + HEADER_BYTES);
    readKeyLengths.push(keyBytes);
    putKey(bytes, key, keyBytes, offset + HEADER_BYTES);
    offset += HEADER_BYTES + keyBytes;
  }
  writeHeader(bytes, offset, Opcode.noop, 0, 0, opaque);
  return { bytes, readKeyStarts, readKeyLengths };
}

function writeArithmetic(
  bytes: Buffer,
  offset: number,
  opcode: number,
  key: string,
  delta: number,
  initial: number,
  expirationField: number,
  opaque: number,
): number {
  const keyBytes = Buffer.byteLength(key);
  writeHeader(bytes, offset, opcode, keyBytes, ARITHMETIC_EXTRAS_BYTES, opaque);
  const extras = offset + HEADER_BYTES;
  writeUInt64(bytes, delta, extras);
  writeUInt64(bytes, initial, extras + 8);
  putUInt32(bytes, checkedUInt32(expirationField, 'an expiration'), extras + 16);
  putKey(bytes, key, keyBytes, extras + ARITHMETIC_EXTRAS_BYTES);
  return extras + ARITHMETIC_EXTRAS_BYTES + keyBytes;
}

/** A whole number up to 2^53 as 8 big-endian bytes, without a BigInt. */
function writeUInt64(bytes: Buffer, value: number, offset: number): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`a counter delta must be a whole number >= 0 (got ${value})`);
  putUInt32(bytes, Math.floor(value / 2 ** 32), offset);
  putUInt32(bytes, value >>> 0, offset + 4);
}

// A check's batch is written byte by byte: with Buffer's checked writers (writeUInt32BE,
// write) encoding one increment and the no-op took about 580 ns on the bench machine, this
// way about 230. Each number is checked instead: a delta a whole number within 2^53, every
// 32-bit field within 32 bits, or a RangeError (Buffer's writers refused some of these and
// truncated fractions).

/** `value`, when it fits 32 bits unsigned; else a RangeError naming `what`. */
function checkedUInt32(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff)
    throw new RangeError(`${what} must fit 32 bits (got ${value})`);
  return value;
}

/** 4 big-endian bytes of a value within 32 bits (a Uint8Array keeps each store's low byte). */
function putUInt32(bytes: Buffer, value: number, offset: number): void {
  bytes[offset] = value >>> 24;
  bytes[offset + 1] = value >>> 16;
  bytes[offset + 2] = value >>> 8;
  bytes[offset + 3] = value;
}

/** A key of `keyBytes` UTF-8 bytes: as many as its characters when it is ASCII, the usual case. */
function putKey(bytes: Buffer, key: string, keyBytes: number, offset: number): void {
  if (keyBytes !== key.length) {
    // The buffer is not zeroed: a key must fill exactly the bytes counted for it.
    const written = bytes.write(key, offset, 'utf8');
    if (written !== keyBytes) throw new Error(`memcached key: wrote ${written} of its ${keyBytes} bytes`);
    return;
  }
  for (let i = 0; i < keyBytes; i++) bytes[offset + i] = key.charCodeAt(i);
}

/**
 * One request of any opcode: header, extras, key and value (a statistic, a GET, a SET, an
 * ADD, a DELETE, SASL). A SET with `cas` stores only over the item of that CAS unique; 0
 * (the default) is no condition.
 */
export function encodeRequest(
  opcode: number,
  key: string,
  extras: Buffer,
  value: string,
  opaque: number,
  cas = 0n,
): Buffer {
  const keyBytes = Buffer.byteLength(key);
  const valueBytes = Buffer.byteLength(value);
  const bytes = Buffer.alloc(HEADER_BYTES + extras.length + keyBytes + valueBytes);
  writeHeader(bytes, 0, opcode, keyBytes, extras.length, opaque, valueBytes);
  if (cas !== 0n) bytes.writeBigUInt64BE(cas, 16);
  extras.copy(bytes, HEADER_BYTES);
  bytes.write(key, HEADER_BYTES + extras.length, 'utf8');
  bytes.write(value, HEADER_BYTES + extras.length + keyBytes, 'utf8');
  return bytes;
}

function writeHeader(
  buffer: Buffer,
  offset: number,
  opcode: number,
  keyBytes: number,
  extrasBytes: number,
  opaque: number,
  valueBytes = 0,
): void {
  if (keyBytes > 0xffff) throw new RangeError(`a key must be at most 65,535 bytes (got ${keyBytes})`);
  buffer[offset] = REQUEST_MAGIC;
  buffer[offset + 1] = opcode;
  buffer[offset + 2] = keyBytes >>> 8;
  buffer[offset + 3] = keyBytes;
  buffer[offset + 4] = extrasBytes;
  // Data type and vbucket.
  buffer[offset + 5] = 0;
  buffer[offset + 6] = 0;
  buffer[offset + 7] = 0;
  putUInt32(buffer, checkedUInt32(keyBytes + extrasBytes + valueBytes, 'a request body'), offset + 8);
  putUInt32(buffer, checkedUInt32(opaque, 'an opaque'), offset + 12);
  // CAS: none (encodeRequest sets one after). Written, as a batch's buffer is not zeroed.
  putUInt32(buffer, 0, offset + 16);
  putUInt32(buffer, 0, offset + 20);
}

/**
 * The extras of a SET or ADD of a counter: flags 0 (the decimal text INCREMENT and GET-based
 * tools read) and the expiration.
 */
export function storageExtras(ttlSeconds: number, now: () => number): Buffer {
  const extras = Buffer.alloc(STORAGE_EXTRAS_BYTES);
  extras.writeUInt32BE(expiration(ttlSeconds, now), 4);
  return extras;
}

/** Memcached's expiration field: relative seconds, or the Unix time (by `now`) when longer than 30 days. */
export function expiration(ttlSeconds: number, now: () => number): number {
  return ttlSeconds > MAX_RELATIVE_EXPIRATION ? Math.floor(now() / 1000) + ttlSeconds : ttlSeconds;
}
