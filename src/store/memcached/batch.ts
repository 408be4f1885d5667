import type { Response } from 'memjs';
import { StoreUnavailableError } from '../counter-store.js';
import type { ServerConnection } from './connection.js';
import { counterFromIncrement, counterFromText, encodeBatch, Opcode, Status, type ArithmeticRequest } from './protocol.js';

export interface BatchReplies {
  /** Each arithmetic request's new value; undefined for a decrement of a missing key. */
  readonly arithmetic: readonly (number | undefined)[];
  /** Each read key's value; 0 when missing. */
  readonly read: readonly number[];
  /**
   * Indexes of increments memcached answered NOT_STORED: two connections creating one key at
   * once make the slower one fail. The key exists then, so sending them again succeeds.
   */
  readonly raced: readonly number[];
}

export interface BatchOptions {
  /**
   * When this call fails or is too late, take back every increment the server applied,
   * whenever its reply comes: the caller decided without the store and did not admit the
   * request. Without it such increments stay counted, as for a request admitted anyway.
   */
  readonly undoIfAbandoned?: boolean;
  /** Write even while the server is down: for taking increments back. */
  readonly evenWhenDown?: boolean;
  /** Unix time in milliseconds, asked only for absolute expirations (TTLs over 30 days). */
  readonly now?: () => number;
  /** Told of increments taken back after their call was abandoned, and of any failure to. */
  readonly onUndo?: (undone: number, error?: unknown) => void;
}

/**
 * Sends arithmetic requests, then quiet gets, then a no-op to one server in one write, and
 * gathers the replies; the no-op's reply closes the batch (replies come in order).
 * Rejects with StoreUnavailableError when the server is down, fails, or stays silent past
 * the connection's deadline.
 */
export function runBatch(
  connection: ServerConnection,
  arithmetic: readonly ArithmeticRequest[],
  reads: readonly string[],
  options: BatchOptions = {},
): Promise<BatchReplies> {
  return new Promise((resolve, reject) => {
    const opaque = connection.nextOpaque();
    const address = connection.label;
    const arithmeticValues = new Array<number | undefined>(arithmetic.length);
    const readValues = new Array<number>(reads.length).fill(0);
    const readIndex = new Map<string, number>();
    reads.forEach((key, i) => readIndex.set(key, i));
    const raced: number[] = [];
    let arithmeticReplies = 0;
    let failure: StoreUnavailableError | undefined;
    /** The caller has its rejection and decided without this call. */
    let abandoned = false;
    /** Increments the server applied, while they may still have to be taken back. */
    const applied: ArithmeticRequest[] = [];

    const takeBackApplied = (): void => {
      if (applied.length === 0) return;
      const decrements = applied.splice(0).map(({ key, delta }) => ({ opcode: Opcode.decrement, key, delta }) as const);
      runBatch(connection, decrements, [], { evenWhenDown: true }).then(
        () => options.onUndo?.(decrements.length),
        (error: unknown) => options.onUndo?.(0, error),
      );
    };
    const abandon = (error: StoreUnavailableError): void => {
      if (abandoned) return;
      abandoned = true;
      reject(error);
      takeBackApplied();
    };

    const onReply = (response: Response): boolean => {
      const { opcode, status } = response.header;
      if (opcode === Opcode.noop) {
        if (abandoned) takeBackApplied();
        else if (failure) abandon(failure);
        else resolve({ arithmetic: arithmeticValues, read: readValues, raced });
        return true;
      }
      if (opcode === Opcode.getKQ) {
        const index = readIndex.get(response.key.toString('utf8'));
        const value = counterFromText(response.val);
        if (index === undefined || Number.isNaN(value)) {
          failure ??= new StoreUnavailableError(`memcached ${address} returned a value that is not a counter`);
        } else {
          readValues[index] = value;
        }
        return false;
      }
      // Arithmetic replies come back in the order the requests were sent.
      const index = arithmeticReplies++;
      const request = arithmetic[index];
      if (status === Status.ok) {
        arithmeticValues[index] = counterFromIncrement(response.val);
        if (options.undoIfAbandoned && request?.opcode === Opcode.increment) applied.push(request);
      } else if (status === Status.notStored && request?.opcode === Opcode.increment) {
        raced.push(index);
      } else if (!(status === Status.keyNotFound && request?.opcode === Opcode.decrement)) {
        failure ??= new StoreUnavailableError(`memcached ${address} refused a counter update: ${response.val.toString('utf8')} (status ${status})`);
      }
      return false;
    };

    connection.send(
      {
        opaque,
        bytes: encodeBatch(arithmetic, reads, opaque, options.now ?? Date.now),
        quiet: true,
        onReply,
        onLate: abandon,
        // Replies seen before the connection failed were applied.
        onFail: (error) => {
          if (abandoned) takeBackApplied();
          else abandon(error);
        },
      },
      { evenWhenDown: options.evenWhenDown ?? false },
    );
  });
}
