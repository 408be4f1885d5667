// Reads a RateLimitRequest's bytes for what memgate refuses before they are decoded: counts
// and lengths beyond REQUEST_LIMITS, and text that is not UTF-8. Decoding builds an object per
// descriptor and entry and a string per field (a 990 KB request of 110,000 descriptors took
// 190-250 ms), while this walk only reads lengths and skips. Text that is not UTF-8 cannot be
// told after decoding at all: proto-loader reads each bad byte as U+FFFD, so "Jos\xe9" and
// "Jos\xe8" would share one counter; envoyproxy/ratelimit's Go decoder refuses them.
// Field numbers as in proto/envoy/service/ratelimit/v3/rls.proto and ratelimit.proto.
import { isAscii, isUtf8 } from 'node:buffer';
import protobuf from 'protobufjs/minimal.js';
import { REQUEST_LIMITS } from './messages.js';

const LENGTH_DELIMITED = 2;
const REQUEST_DOMAIN = 1;
const REQUEST_DESCRIPTORS = 2;
const DESCRIPTOR_ENTRIES = 1;
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;

interface Span {
  readonly start: number;
  readonly end: number;
}

/**
 * Why the request is refused (INVALID_ARGUMENT, a one-line reason naming the field as
 * messages.ts does), or undefined when decoding it is worth the work. Bytes that are not a
 * protobuf message pass: the decoder refuses them as before.
 */
export function requestProblem(bytes: Uint8Array): string | undefined {
  try {
    return readRequest(bytes);
  } catch {
    return undefined;
  }
}

/** What the walk reads from: the bytes, one reader, and whether every byte is ASCII (Envoy's usual request). */
interface Walk {
  readonly bytes: Uint8Array;
  readonly reader: protobuf.Reader;
  readonly ascii: boolean;
}

function readRequest(bytes: Uint8Array): string | undefined {
  // One reader for the walk: each field list is read to its end before the next is begun.
  const walk: Walk = { bytes, reader: protobuf.Reader.create(bytes), ascii: isAscii(bytes) };
  let domain: Span | undefined;
  const descriptors: Span[] = [];
  let descriptorCount = 0;
  forEachField(walk.reader, { start: 0, end: bytes.length }, (field, span) => {
    if (field === REQUEST_DOMAIN) domain = span;
    // Counted all, kept only while within the limit: a flood of descriptors costs a count.
    else if (field === REQUEST_DESCRIPTORS && ++descriptorCount <= REQUEST_LIMITS.descriptors) descriptors.push(span);
  });
  const domainProblem = domain && textProblem(walk, domain, REQUEST_LIMITS.domainBytes, () => 'domain');
  if (domainProblem) return domainProblem;
  if (descriptorCount > REQUEST_LIMITS.descriptors) {
    return `${descriptorCount} descriptors; at most ${REQUEST_LIMITS.descriptors} are allowed`;
  }
  for (let d = 0; d < descriptors.length; d++) {
    const problem = descriptorProblem(walk, descriptors[d] as Span, d);
    if (problem) return problem;
  }
  return undefined;
}

function descriptorProblem(walk: Walk, descriptor: Span, d: number): string | undefined {
  const entries: Span[] = [];
  let entryCount = 0;
  forEachField(walk.reader, descriptor, (field, span) => {
    if (field === DESCRIPTOR_ENTRIES && ++entryCount <= REQUEST_LIMITS.entriesPerDescriptor) entries.push(span);
  });
  if (entryCount > REQUEST_LIMITS.entriesPerDescriptor) {
    return `descriptors[${d}] has ${entryCount} entries; at most ${REQUEST_LIMITS.entriesPerDescriptor} are allowed`;
  }
  for (let e = 0; e < entries.length; e++) {
    let problem: string | undefined;
    forEachField(walk.reader, entries[e] as Span, (field, span) => {
      if (problem) return;
      // Named only when refused: the names are strings built for the message.
      if (field === ENTRY_KEY)
        problem = textProblem(walk, span, REQUEST_LIMITS.keyBytes, () => `descriptors[${d}].entries[${e}].key`);
      else if (field === ENTRY_VALUE)
        problem = textProblem(walk, span, REQUEST_LIMITS.valueBytes, () => `descriptors[${d}].entries[${e}].value`);
    });
    if (problem) return problem;
  }
  return undefined;
}

function textProblem(walk: Walk, span: Span, maxBytes: number, field: () => string): string | undefined {
  const length = span.end - span.start;
  if (length > maxBytes) return `${field()} is ${length} bytes; at most ${maxBytes} are allowed`;
  if (!walk.ascii && !isUtf8(walk.bytes.subarray(span.start, span.end))) {
    return `${field()} is not valid UTF-8, as protobuf strings must be`;
  }
  return undefined;
}

/** Calls `visit` with each length-delimited field of the message in `span`; skips the others. */
function forEachField(reader: protobuf.Reader, span: Span, visit: (field: number, value: Span) => void): void {
  // The reader stops at the message's end: a field running past it is broken, as decoding says.
  reader.pos = span.start;
  reader.len = span.end;
  while (reader.pos < span.end) {
    const tag = reader.uint32();
    if ((tag & 7) !== LENGTH_DELIMITED) {
      reader.skipType(tag & 7);
      continue;
    }
    const length = reader.uint32();
    const start = reader.pos;
    reader.skip(length);
    visit(tag >>> 3, { start, end: start + length });
  }
}
