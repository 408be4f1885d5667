// gRPC's wire conventions over HTTP/2 that a unary server needs (grpc/grpc's
// doc/PROTOCOL-HTTP2.md): the 5-byte message prefix, the status codes, grpc-timeout and the
// percent-encoded grpc-message. The codec of the messages themselves is proto-loader's, but for
// ShouldRateLimit's answers (response-encoder.ts).

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
  /** Not one whole message: `code` is the status gRPC's protocol gives it. */
  | { readonly kind: 'malformed'; readonly code: GrpcStatusCode; readonly reason: string };

/**
 * Collects one prefixed message from a request body's chunks into a buffer of its own (a chunk is
 * a slice of the socket's read buffer, which holding would keep whole). `push` returns the outcome
 * as soon as it is known (a prefix over the limit after 5 bytes), `end` when the body is over.
 */
export class MessageReader {
  private readonly prefix = Buffer.alloc(PREFIX_BYTES);
  private prefixFilled = 0;
  private message: Buffer | undefined;
  private filled = 0;

  constructor(private readonly maxBytes: number) {}

  /** A chunk of the body; an outcome when one is known before the end. */
  push(chunk: Buffer): ReadMessage | undefined {
    let offset = 0;
    if (!this.message) {
      offset = chunk.copy(this.prefix, this.prefixFilled, 0, PREFIX_BYTES - this.prefixFilled);
      this.prefixFilled += offset;
      if (this.prefixFilled < PREFIX_BYTES) return undefined;
      const flag = this.prefix[0] as number;
      if (flag > 1)
        return {
          kind: 'malformed',
          code: GRPC_STATUS.INTERNAL,
          reason: `the message's compressed flag is ${flag}, not 0 or 1`,
        };
      const length = this.prefix.readUInt32BE(1);
      if (length > this.maxBytes) return { kind: 'too-large', length };
      this.message = Buffer.allocUnsafe(length);
    }
    if (this.filled + chunk.length - offset > this.message.length)
      return {
        kind: 'malformed',
        code: GRPC_STATUS.INVALID_ARGUMENT,
        reason: 'a unary call carries one message; this one carried more',
      };
    this.filled += chunk.copy(this.message, this.filled, offset);
    return undefined;
  }

  /** The body is over. */
  end(): ReadMessage {
    if (!this.message || this.filled < this.message.length)
      return {
        kind: 'malformed',
        code: GRPC_STATUS.INVALID_ARGUMENT,
        reason: 'the request ended before its message did',
      };
    return { kind: 'message', bytes: this.message, compressed: this.prefix[0] === 1 };
  }
}

/** The longest delay a Node timer keeps (longer ones fire at once). */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/**
 * A grpc-timeout header (at most 8 digits and a unit) in milliseconds; undefined when absent, not
 * one (as gRPC servers treat a header they cannot read: no deadline), or longer than a timer holds.
 */
export function timeoutMs(header: string | string[] | undefined): number | undefined {
  if (typeof header !== 'string') return undefined;
  const match = /^(\d{1,8})([HMSmun])$/.exec(header);
  if (!match) return undefined;
  const ms = Number(match[1]) * (TIMEOUT_UNIT_MS[match[2] as string] as number);
  // Weeks away is no deadline for a call answered in milliseconds, and a timer cannot hold it.
  return ms > LONGEST_TIMER_MS ? undefined : ms;
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
