import { Utils } from 'memjs';
import { StoreUnavailableError } from '../counter-store.js';
import type { ServerConnection } from './connection.js';
import { expiration, Opcode, Status } from './protocol.js';

/**
 * SET of a counter (flags 0, the decimal text INCREMENT also reads) or DELETE of a key:
 * one request, one reply, within the connection's deadline. Rare (an admin's reset), so
 * not batched.
 */
export function setCounter(
  connection: ServerConnection,
  key: string,
  value: number,
  ttlSeconds: number,
  nowMs: number,
): Promise<void> {
  const extras = Buffer.alloc(8);
  extras.writeUInt32BE(
    expiration(ttlSeconds, () => nowMs),
    4,
  );
  return command(connection, (opaque) => Utils.makeRequestBuffer(Opcode.set, key, extras, String(value), opaque), [
    Status.ok,
  ]);
}

export function deleteKey(connection: ServerConnection, key: string): Promise<void> {
  return command(connection, (opaque) => Utils.makeRequestBuffer(Opcode.delete, key, '', '', opaque), [
    Status.ok,
    Status.keyNotFound,
  ]);
}

function command(
  connection: ServerConnection,
  request: (opaque: number) => Buffer,
  accepted: readonly number[],
): Promise<void> {
  return new Promise((resolve, reject) => {
    const opaque = connection.nextOpaque();
    connection.send({
      opaque,
      bytes: request(opaque),
      quiet: false,
      onReply: (response) => {
        const { status } = response.header;
        if (accepted.includes(status)) resolve();
        else
          reject(
            new StoreUnavailableError(
              `memcached ${connection.label} refused: ${response.val.toString('utf8')} (status ${status})`,
            ),
          );
        return true;
      },
      onLate: reject,
      onFail: reject,
    });
  });
}
