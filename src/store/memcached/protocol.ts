/**
 * The Memcached binary protocol as memgate speaks it: every opcode it sends, and the batch
 * encoding that makes a whole batch one socket write. Layout: https://github.com/memcached/memcached/wiki/BinaryProtocolRevamped
 */
export const Opcode = {
  set: 0x01,
  delete: 0x04,
  increment: 0x05,
  decrement: 0x06,
  noop: 0x0a,
  getKQ: 0x0d,
  stat: 0x10,
} as const;

export const Status = {
  ok: 0x0000,
  keyNotFound: 0x0001,
  /** An increment's creation lost a race: another connection created the key at the same moment. */
  notStored: 0x0005,
} as const;

const HEADER_BYTES = 24;
const ARITHMETIC_EXTRAS_BYTES = 20;
const REQUEST_MAGIC = 0x80;

/** Expiration telling DECREMENT to fail on a missing key instead of creating it. */
const NEVER_CREATE = 0xffffffff;

/** Memcached reads expirations above 30 days as absolute Unix times. */
const MAX_RELATIVE_EXPIRATION = 30 * 86_400;

export interface ArithmeticRequest {
  readonly opcode: typeof Opcode.increment | typeof Opcode.decrement;
  readonly key: string;
  readonly delta: number;
  /** Seconds to live when the increment creates the key; ignored for decrements. */
  readonly ttlSeconds?: number;
}

/**
 * Encodes increments/decrements, then quiet gets of `reads`, then a no-op, all with one
 * opaque. The server answers in order: one reply per arithmetic request, one per read key
 * that exists, then the no-op's reply, which closes the batch.
 */
export function encodeBatch(
  arithmetic: readonly ArithmeticRequest[],
  reads: readonly string[],
  opaque: number,
  now: () => number,
): Buffer {
  let size = HEADER_BYTES;
  for (const op of arithmetic) size += HEADER_BYTES + ARITHMETIC_EXTRAS_BYTES + Buffer.byteLength(op.key);
  for (const key of reads) size += HEADER_BYTES + Buffer.byteLength(key);
  const buffer = Buffer.alloc(size);
  let offset = 0;
  for (const op of arithmetic) {
    const keyBytes = Buffer.byteLength(op.key);
    writeHeader(buffer, offset, op.opcode, keyBytes, ARITHMETIC_EXTRAS_BYTES, opaque);
    const extras = offset + HEADER_BYTES;
    buffer.writeBigUInt64BE(BigInt(op.delta), extras);
    // A missing key is created holding the delta itself: the first request counts once.
    buffer.writeBigUInt64BE(BigInt(op.opcode === Opcode.increment ? op.delta : 0), extras + 8);
    buffer.writeUInt32BE(
      op.opcode === Opcode.increment ? expiration(op.ttlSeconds ?? 0, now) : NEVER_CREATE,
      extras + 16,
    );
    buffer.write(op.key, extras + ARITHMETIC_EXTRAS_BYTES, 'utf8');
    offset += HEADER_BYTES + ARITHMETIC_EXTRAS_BYTES + keyBytes;
  }
  for (const key of reads) {
    const keyBytes = Buffer.byteLength(key);
    writeHeader(buffer, offset, Opcode.getKQ, keyBytes, 0, opaque);
    buffer.write(key, offset + HEADER_BYTES, 'utf8');
    offset += HEADER_BYTES + keyBytes;
  }
  writeHeader(buffer, offset, Opcode.noop, 0, 0, opaque);
  return buffer;
}

function writeHeader(
  buffer: Buffer,
  offset: number,
  opcode: number,
  keyBytes: number,
  extrasBytes: number,
  opaque: number,
): void {
  buffer.writeUInt8(REQUEST_MAGIC, offset);
  buffer.writeUInt8(opcode, offset + 1);
  buffer.writeUInt16BE(keyBytes, offset + 2);
  buffer.writeUInt8(extrasBytes, offset + 4);
  buffer.writeUInt32BE(keyBytes + extrasBytes, offset + 8);
  buffer.writeUInt32BE(opaque, offset + 12);
  // Data type, vbucket and CAS stay zero (Buffer.alloc).
}

/** Memcached's expiration field: relative seconds, or the Unix time (by `now`) when longer than 30 days. */
export function expiration(ttlSeconds: number, now: () => number): number {
  return ttlSeconds > MAX_RELATIVE_EXPIRATION ? Math.floor(now() / 1000) + ttlSeconds : ttlSeconds;
}

/**
 * A counter's value: INCREMENT answers 8 bytes; a GET answers the decimal text it stores,
 * which a decrement that shortens the number may leave padded with trailing spaces.
 */
export function counterFromIncrement(value: Buffer): number {
  return Number(value.readBigUInt64BE(0));
}

export function counterFromText(value: Buffer): number {
  const text = value.toString('latin1');
  return /^[0-9]+ *$/.test(text) ? Number(text.trimEnd()) : Number.NaN;
}
