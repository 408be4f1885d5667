// `npm run load -- --grpc`'s own flags, read into what run-grpc-load.ts takes. Each reader
// throws a UsageError whose message is the one line the command prints.
import { UsageError } from '../../src/commands/command-line.js';
import type { DescriptorTemplate } from './run-grpc-load.js';

/** `host:port`, `[v6 address]:port`: where memgate's MEMGATE_GRPC_PORT listens. */
export function grpcAddress(text: string): string {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/.exec(text);
  const port = Number(match?.[2] ?? 0);
  if (!match || port < 1 || port > 65535)
    throw new UsageError(`--grpc must be host:port, e.g. 127.0.0.1:8081 (got ${JSON.stringify(text)})`);
  return text;
}

/**
 * One --descriptor: `key=value,key=value`, its entries in the order Envoy's actions would
 * produce them. A value is everything after the entry's first `=` (it may be empty, never hold
 * a comma); `%feature` in it becomes the --features spread's client.
 */
export function descriptorFlag(text: string): DescriptorTemplate {
  const refuse = (why: string): never => {
    throw new UsageError(
      `--descriptor is key=value[,key=value...], e.g. remote_address=%feature: ${why} (got ${JSON.stringify(text)})`,
    );
  };
  if (text === '') refuse('it is empty');
  return text.split(',').map((entry) => {
    const equals = entry.indexOf('=');
    if (equals === -1) refuse(`${JSON.stringify(entry)} has no =`);
    if (equals === 0) refuse(`${JSON.stringify(entry)} has no key`);
    return { key: entry.slice(0, equals), value: entry.slice(equals + 1) };
  });
}

/** A descriptor as the command line gave it, for the summary: `key=value,key=value`. */
export const descriptorText = (entries: DescriptorTemplate): string =>
  entries.map(({ key, value }) => `${key}=${value}`).join(',');
