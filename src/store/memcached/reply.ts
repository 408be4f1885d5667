export const HEADER_BYTES = 24;
const EMPTY = Buffer.alloc(0);

/**
 * One reply of a Memcached server, read in place from the bytes the socket delivered: the
 * header's fields, and the key and value where they lie. A connection reuses one Reply for
 * every reply it reads, so its fields hold only while the exchange's onReply runs: copy what
 * must outlive it (key(), value()).
 */
export class Reply {
  opcode = 0;
  status = 0;
  opaque = 0;
  keyLength = 0;
  private buffer: Buffer = EMPTY;
  private start = 0;
  private keyStart = 0;
  private valueStart = 0;
  private end = 0;

  /** Reads the header of the reply at `offset`, whose whole body `buffer` holds. */
  readFrom(buffer: Buffer, offset: number): void {
    this.buffer = buffer;
    this.start = offset;
    this.opcode = buffer[offset + 1] ?? 0;
    this.keyLength = buffer.readUInt16BE(offset + 2);
    const extrasLength = buffer[offset + 4] ?? 0;
    this.status = buffer.readUInt16BE(offset + 6);
    this.end = offset + HEADER_BYTES + buffer.readUInt32BE(offset + 8);
    this.opaque = buffer.readUInt32BE(offset + 12);
    this.keyStart = offset + HEADER_BYTES + extrasLength;
    this.valueStart = this.keyStart + this.keyLength;
  }

  /** Lets go of the bytes read, which a socket's chunk holds. */
  release(): void {
    this.buffer = EMPTY;
  }

  /**
   * The item's CAS unique (header bytes 16..23): what a GET read, or a store made. 0 when
   * there is none, as from a server started with -C, which keeps none.
   */
  cas(): bigint {
    return this.buffer.readBigUInt64BE(this.start + 16);
  }

  /** The key, as text. */
  key(): string {
    return this.buffer.toString('latin1', this.keyStart, this.valueStart);
  }

  /** Whether the key is these bytes (a read's key as the request wrote it), without making a string. */
  keyIs(bytes: Buffer, start: number, length: number): boolean {
    return (
      length === this.keyLength &&
      this.buffer.compare(bytes, start, start + length, this.keyStart, this.valueStart) === 0
    );
  }

  /** The value as text (a statistic, an error message). */
  text(): string {
    return this.buffer.toString('latin1', this.valueStart, this.end);
  }

  /** The value an INCREMENT or DECREMENT answers: 8 bytes, big-endian. */
  arithmeticValue(): number {
    return this.buffer.readUInt32BE(this.valueStart) * 2 ** 32 + this.buffer.readUInt32BE(this.valueStart + 4);
  }

  /**
   * The value a GET answers for a counter: the decimal text INCREMENT keeps, which a
   * DECREMENT that shortens the number may leave padded with trailing spaces. NaN when it is
   * not such a text (a key memgate did not write).
   */
  counterText(): number {
    let value = 0;
    let digits = 0;
    let i = this.valueStart;
    for (; i < this.end; i++) {
      const byte = this.buffer[i] ?? 0;
      if (byte < 0x30 || byte > 0x39) break;
      value = value * 10 + (byte - 0x30);
      digits++;
    }
    for (; i < this.end; i++) if (this.buffer[i] !== 0x20) return Number.NaN;
    return digits > 0 ? value : Number.NaN;
  }
}
