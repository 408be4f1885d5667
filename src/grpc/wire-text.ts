// Whether the text of a RateLimitRequest is UTF-8 as sent. proto3 strings must be, and
// envoyproxy/ratelimit's Go decoder refuses a request whose are not; @grpc/proto-loader instead
// decodes each bad byte as U+FFFD, so two different values ("Jos\xe9", "Jos\xe8") would become
// one counter. The request's bytes are read again here with the same field numbers as
// rls.proto, its text fields as `bytes`, so that each one can be checked as sent.
import { isAscii, isUtf8 } from 'node:buffer';
import * as protoLoader from '@grpc/proto-loader';
import type * as grpc from '@grpc/grpc-js';

/** RateLimitRequest's text fields as bytes: domain, and each descriptor's entries' key and value. */
const RAW_REQUEST = protoLoader.fromJSON(
  {
    nested: {
      memgate: {
        nested: {
          RawEntry: { fields: { key: { type: 'bytes', id: 1 }, value: { type: 'bytes', id: 2 } } },
          RawDescriptor: { fields: { entries: { rule: 'repeated', type: 'RawEntry', id: 1 } } },
          RawRequest: {
            fields: {
              domain: { type: 'bytes', id: 1 },
              descriptors: { rule: 'repeated', type: 'RawDescriptor', id: 2 },
            },
          },
          // proto-loader hands out decoders for methods only.
          Raw: { methods: { Read: { requestType: 'RawRequest', responseType: 'RawRequest', comment: '' } } },
        },
      },
    },
  },
  { defaults: true },
);

interface RawRequest {
  readonly domain: Buffer;
  readonly descriptors: readonly { readonly entries: readonly { readonly key: Buffer; readonly value: Buffer }[] }[];
}

const readRaw = (RAW_REQUEST['memgate.Raw'] as grpc.ServiceDefinition).Read?.requestDeserialize as (
  bytes: Buffer,
) => RawRequest;

/** The first text field of the request's bytes that is not UTF-8, as messages.ts names fields; undefined when all are. */
export function textNotUtf8(bytes: Buffer): string | undefined {
  // Envoy's usual request: every byte, hence every text field, ASCII. No need to read it again.
  if (isAscii(bytes)) return undefined;
  const raw = readRaw(bytes);
  if (!isUtf8(raw.domain)) return 'domain';
  for (const [d, descriptor] of raw.descriptors.entries()) {
    for (const [e, entry] of descriptor.entries.entries()) {
      const at = `descriptors[${d}].entries[${e}]`;
      if (!isUtf8(entry.key)) return `${at}.key`;
      if (!isUtf8(entry.value)) return `${at}.value`;
    }
  }
  return undefined;
}
