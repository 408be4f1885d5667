import { Utils, type Response, type Server } from 'memjs';
import { StoreUnavailableError } from '../counter-store.js';
import { Status } from './protocol.js';

const SET = 0x01;
const DELETE = 0x04;

/** Memcached reads expirations above 30 days as absolute Unix times. */
const MAX_RELATIVE_EXPIRATION = 30 * 86_400;

/**
 * SET of a counter (flags 0, the decimal text INCREMENT also reads) or DELETE of a key:
 * one request, one reply, within the deadline. Rare (an admin's reset), so not batched.
 */
export function setCounter(server: Server, opaque: number, key: string, value: number, ttlSeconds: number, deadlineMs: number): Promise<void> {
  const extras = Buffer.alloc(8);
  extras.writeUInt32BE(ttlSeconds > MAX_RELATIVE_EXPIRATION ? Math.floor(Date.now() / 1000) + ttlSeconds : ttlSeconds, 4);
  return command(server, opaque, Utils.makeRequestBuffer(SET, key, extras, String(value), opaque), deadlineMs, [Status.ok]);
}

export function deleteKey(server: Server, opaque: number, key: string, deadlineMs: number): Promise<void> {
  return command(server, opaque, Utils.makeRequestBuffer(DELETE, key, '', '', opaque), deadlineMs, [Status.ok, Status.keyNotFound]);
}

function command(server: Server, opaque: number, request: Buffer, deadlineMs: number, accepted: readonly number[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const address = `${server.host}:${server.port}`;
    const timer = setTimeout(() => {
      server.onResponse(opaque, () => undefined);
      reject(new StoreUnavailableError(`memcached ${address} did not answer within ${deadlineMs} ms`));
    }, deadlineMs);
    server.onResponse(opaque, (response: Response) => {
      clearTimeout(timer);
      if (accepted.includes(response.header.status)) resolve();
      else reject(new StoreUnavailableError(`memcached ${address} refused: ${response.val.toString('utf8')} (status ${response.header.status})`));
    });
    server.onError(opaque, (error: unknown) => {
      clearTimeout(timer);
      reject(new StoreUnavailableError(`memcached ${address}: ${error instanceof Error ? error.message : String(error)}`, { cause: error }));
    });
    server.write(request);
  });
}
