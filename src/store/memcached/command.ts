import { Utils } from 'memjs';
import { StoreUnavailableError } from '../counter-store.js';
import type { ServerConnection } from './connection.js';
import { Status } from './protocol.js';

const SET = 0x01;
const DELETE = 0x04;

/** Memcached reads expirations above 30 days as absolute Unix times. */
const MAX_RELATIVE_EXPIRATION = 30 * 86_400;

/**
 * SET of a counter (flags 0, the decimal text INCREMENT also reads) or DELETE of a key:
 * one request, one reply, within the connection's deadline. Rare (an admin's reset), so
 * not batched.
 */
export function setCounter(connection: ServerConnection, key: string, value: number, ttlSeconds: number, nowMs: number): Promise<void> {
  const extras = Buffer.alloc(8);
  extras.writeUInt32BE(ttlSeconds > MAX_RELATIVE_EXPIRATION ? Math.floor(nowMs / 1000) + ttlSeconds : ttlSeconds, 4);
  return command(connection, (opaque) => Utils.makeRequestBuffer(SET, key, extras, String(value), opaque), [Status.ok]);
}

export function deleteKey(connection: ServerConnection, key: string): Promise<void> {
  return command(connection, (opaque) => Utils.makeRequestBuffer(DELETE, key, '', '', opaque), [Status.ok, Status.keyNotFound]);
}

function command(connection: ServerConnection, request: (opaque: number) => Buffer, accepted: readonly number[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const opaque = connection.nextOpaque();
    connection.send({
      opaque,
      bytes: request(opaque),
      quiet: false,
      onReply: (response) => {
        const { status } = response.header;
        if (accepted.includes(status)) resolve();
        else reject(new StoreUnavailableError(`memcached ${connection.label} refused: ${response.val.toString('utf8')} (status ${status})`));
        return true;
      },
      onLate: reject,
      onFail: reject,
    });
  });
}
