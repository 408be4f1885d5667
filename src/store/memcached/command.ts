import { StoreUnavailableError } from '../counter-store.js';
import type { ServerConnection } from './connection.js';
import { encodeRequest, expiration, Opcode, Status } from './protocol.js';

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
  return command(connection, (opaque) => encodeRequest(Opcode.set, key, extras, String(value), opaque), [Status.ok]);
}

export function deleteKey(connection: ServerConnection, key: string): Promise<void> {
  return command(connection, (opaque) => encodeRequest(Opcode.delete, key, Buffer.alloc(0), '', opaque), [
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
      onReply: (reply) => {
        const { status } = reply;
        if (accepted.includes(status)) resolve();
        else
          reject(
            new StoreUnavailableError(`memcached ${connection.label} refused: ${reply.text()} (status ${status})`),
          );
        return true;
      },
      onLate: reject,
      onFail: reject,
    });
  });
}
