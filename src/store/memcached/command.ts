import { StoreUnavailableError, type StoreVersion, type VersionedValue } from '../counter-store.js';
import type { ServerConnection } from './connection.js';
import { encodeRequest, Opcode, Status, storageExtras } from './protocol.js';
import type { Reply } from './reply.js';

const NO_EXTRAS = Buffer.alloc(0);
const MISSING: VersionedValue = { value: undefined, version: undefined };

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
  const extras = storageExtras(ttlSeconds, () => nowMs);
  return command(
    connection,
    (opaque) => encodeRequest(Opcode.set, key, extras, String(value), opaque),
    (reply) => (reply.status === Status.ok ? undefined : refused(connection, reply)),
  );
}

export function deleteKey(connection: ServerConnection, key: string): Promise<void> {
  return command(
    connection,
    (opaque) => encodeRequest(Opcode.delete, key, NO_EXTRAS, '', opaque),
    (reply) =>
      reply.status === Status.ok || reply.status === Status.keyNotFound ? undefined : refused(connection, reply),
  );
}

/**
 * GET of a counter with its CAS unique, for a later swapCounter. A server started with -C
 * keeps no CAS uniques (every item reads 0) and then ignores the CAS of a SET: a swap would
 * overwrite whatever others wrote, so such a server is refused here rather than trusted.
 */
export function readVersioned(connection: ServerConnection, key: string): Promise<VersionedValue> {
  return command(
    connection,
    (opaque) => encodeRequest(Opcode.get, key, NO_EXTRAS, '', opaque),
    (reply) => {
      if (reply.status === Status.keyNotFound) return MISSING;
      if (reply.status !== Status.ok) return refused(connection, reply);
      const value = reply.counterText();
      if (Number.isNaN(value))
        return new StoreUnavailableError(`memcached ${connection.label} returned a value that is not a counter`);
      const version = reply.cas();
      if (version === 0n)
        return new StoreUnavailableError(
          `memcached ${connection.label} keeps no CAS uniques (started with -C?): compare-and-swap cannot be exact`,
        );
      return { value, version };
    },
  );
}

/**
 * Stores a counter only over the item of CAS unique `expected` (SET naming it), or only when
 * the key is missing (ADD, `expected` undefined); true when stored. Memcached answers a SET
 * whose item is gone (expired, deleted, evicted) KEY_NOT_FOUND, and one whose item another
 * write replaced KEY_EXISTS: either way another writer got there first.
 */
export function swapCounter(
  connection: ServerConnection,
  key: string,
  value: number,
  ttlSeconds: number,
  expected: StoreVersion | undefined,
  now: () => number,
): Promise<boolean> {
  const extras = storageExtras(ttlSeconds, now);
  const opcode = expected === undefined ? Opcode.add : Opcode.set;
  return command(
    connection,
    (opaque) => encodeRequest(opcode, key, extras, String(value), opaque, expected),
    (reply) => {
      switch (reply.status) {
        case Status.ok:
          return true;
        case Status.keyExists:
        case Status.keyNotFound:
        case Status.notStored:
          return false;
        default:
          return refused(connection, reply);
      }
    },
  );
}

/**
 * DELETE of a key only over the item of CAS unique `expected`: true when deleted. Memcached
 * answers KEY_EXISTS when another write replaced the item, KEY_NOT_FOUND when it is gone.
 */
export function removeCounter(connection: ServerConnection, key: string, expected: StoreVersion): Promise<boolean> {
  return command(
    connection,
    (opaque) => encodeRequest(Opcode.delete, key, NO_EXTRAS, '', opaque, expected),
    (reply) => {
      switch (reply.status) {
        case Status.ok:
          return true;
        case Status.keyExists:
        case Status.keyNotFound:
          return false;
        default:
          return refused(connection, reply);
      }
    },
  );
}

/**
 * One request, one reply, within the connection's deadline; fails at once while the server
 * is down. `answer` reads the reply while it is valid (see Reply), and returns the result
 * or the error to reject with.
 */
function command<T>(
  connection: ServerConnection,
  request: (opaque: number) => Buffer,
  answer: (reply: Reply) => T | StoreUnavailableError,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const opaque = connection.nextOpaque();
    connection.send({
      opaque,
      bytes: request(opaque),
      onReply: (reply) => {
        const answered = answer(reply);
        if (answered instanceof StoreUnavailableError) reject(answered);
        else resolve(answered);
        return true;
      },
      onLate: reject,
      onFail: reject,
    });
  });
}

function refused(connection: ServerConnection, reply: Reply): StoreUnavailableError {
  return new StoreUnavailableError(`memcached ${connection.label} refused: ${reply.text()} (status ${reply.status})`);
}
