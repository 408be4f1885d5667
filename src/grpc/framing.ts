// gRPC's wire conventions over HTTP/2 that a unary server needs (grpc/grpc's
// doc/PROTOCOL-HTTP2.md): the 5-byte message prefix, the status codes, grpc-timeout and the
// percent-encoded grpc-message. The codec of the messages themselves is proto-loader's.

/** gRPC's status codes, as its protocol numbers them (only those memgate sends or tests read). */
export const GRPC_STATUS = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcStatusCode = (typeof GRPC_STATUS)[keyof typeof GRPC_STATUS];

/** Bytes before each message: a compressed flag, then the length, big-endian. */
export const PREFIX_BYTES = 5;

/** `message` behind its prefix, uncompressed. */
export function framed(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(PREFIX_BYTES + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, PREFIX_BYTES);
  return frame;
}

/** What a unary call's request body turned out to be. */
export type ReadMessage =
  | { readonly kind: 'message'; readonly bytes: Buffer; readonly compressed: boolean }
  /** The prefix announced more than the limit: nothing more need be read. */
  | { readonly kind: 'too-large'; readonly length: number }
  /** The body ended without a whole message, or carried a second one. */
  | { readonly kind: 'malformed'; readonly reason: string };

/**
 * Collects one prefixed message from a request body's chunks. `push` returns the outcome as soon
 * as it is known (a prefix over the limit after 5 bytes), `end` when the body is over.
 */
export class MessageReader {
  private readonly chunks: Buffer[] = [];
  private received = 0;
  private announced: number | undefined;
  private compressed = false;

  constructor(private readonly maxBytes: number) {}

  /** A chunk of the body; an outcome when one is known before the end. */
  push(chunk: Buffer): ReadMessage | undefined {
    this.chunks.push(chunk);
    this.received += chunk.length;
    if (this.announced === undefined && this.received >= PREFIX_BYTES) {
      const head = this.chunks.length === 1 ? chunk : Buffer.concat(this.chunks);
      this.compressed = head[0] === 1;
      this.announced = head.readUInt32BE(1);
      if (this.announced > this.maxBytes) return { kind: 'too-large', length: this.announced };
    }
    if (this.announced !== undefined && this.received > PREFIX_BYTES + this.announced)
      return { kind: 'malformed', reason: 'a unary call carries one message; this one carried more' };
    return undefined;
  }

  /** The body is over. */
  end(): ReadMessage {
    if (this.announced === undefined || this.received < PREFIX_BYTES + this.announced)
      return { kind: 'malformed', reason: 'the request ended before its message did' };
    const body = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
    return { kind: 'message', bytes: body.subarray(PREFIX_BYTES), compressed: this.compressed };
  }
}

const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/**
 * A grpc-timeout header (at most 8 digits and a unit) in milliseconds; undefined when absent or
 * not one, as gRPC servers treat a header they cannot read (no deadline).
 */
export function timeoutMs(header: string | string[] | undefined): number | undefined {
  if (typeof header !== 'string') return undefined;
  const match = /^(\d{1,8})([HMSmun])$/.exec(header);
  if (!match) return undefined;
  return Number(match[1]) * (TIMEOUT_UNIT_MS[match[2] as string] as number);
}

/** grpc-message's encoding: UTF-8, with '%' and bytes outside printable ASCII as %XX. */
export function encodedMessage(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
