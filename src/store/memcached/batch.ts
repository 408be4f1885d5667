import type { Response, Server } from 'memjs';
import { StoreUnavailableError } from '../counter-store.js';
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

/** memjs keeps a handler marked quiet registered until a reply with an empty body (our no-op). */
type QuietHandler = ((response: Response) => void) & { quiet?: boolean };

const swallowLateReplies: QuietHandler = Object.assign(() => undefined, { quiet: true });

/**
 * Sends arithmetic requests, then quiet gets, then a no-op to one server in one write, and
 * gathers the replies. memjs owns the connection (connect, reconnect, SASL, framing, and
 * dispatch by opaque); this adds pipelining and a deadline, since memjs can leave a request
 * pending forever when the server closes the connection without an error.
 */
export function runBatch(
  server: Server,
  opaque: number,
  arithmetic: readonly ArithmeticRequest[],
  reads: readonly string[],
  deadlineMs: number,
  coalesce = true,
): Promise<BatchReplies> {
  return new Promise((resolve, reject) => {
    const address = `${server.host}:${server.port}`;
    const arithmeticValues = new Array<number | undefined>(arithmetic.length);
    const readValues = new Array<number>(reads.length).fill(0);
    const readIndex = new Map<string, number>();
    reads.forEach((key, i) => readIndex.set(key, i));
    const raced: number[] = [];
    let arithmeticReplies = 0;
    let failure: StoreUnavailableError | undefined;
    let settled = false;

    const settle = (error?: StoreUnavailableError): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) {
        // The no-op may still come; let memjs match it so its own timeout bookkeeping stays in step.
        server.onResponse(opaque, swallowLateReplies);
        server.onError(opaque, () => undefined);
        reject(error);
      } else {
        resolve({ arithmetic: arithmeticValues, read: readValues, raced });
      }
    };

    const timer = setTimeout(() => {
      settle(new StoreUnavailableError(`memcached ${address} did not answer within ${deadlineMs} ms`));
    }, deadlineMs);

    const onReply: QuietHandler = (response) => {
      const { opcode, status } = response.header;
      if (opcode === Opcode.noop) {
        settle(failure);
      } else if (opcode === Opcode.getKQ) {
        const index = readIndex.get(response.key.toString('utf8'));
        const value = counterFromText(response.val);
        if (index === undefined || Number.isNaN(value)) {
          failure ??= new StoreUnavailableError(`memcached ${address} returned a value that is not a counter`);
        } else {
          readValues[index] = value;
        }
      } else {
        // Arithmetic replies come back in the order the requests were sent.
        const index = arithmeticReplies++;
        if (status === Status.ok) {
          arithmeticValues[index] = counterFromIncrement(response.val);
        } else if (status === Status.notStored && arithmetic[index]?.opcode === Opcode.increment) {
          raced.push(index);
        } else if (!(status === Status.keyNotFound && arithmetic[index]?.opcode === Opcode.decrement)) {
          failure ??= new StoreUnavailableError(`memcached ${address} refused a counter update: ${response.val.toString('utf8')} (status ${status})`);
        }
      }
    };
    onReply.quiet = true;

    server.onResponse(opaque, onReply);
    server.onError(opaque, (error: unknown) => {
      const reason = error instanceof Error ? error.message : String(error);
      settle(new StoreUnavailableError(`memcached ${address}: ${reason}`, { cause: error }));
    });
    if (coalesce) holdWritesForThisTurn(server);
    server.write(encodeBatch(arithmetic, reads, opaque, Date.now()));
  });
}

const holding = new WeakSet<Server>();

/**
 * Corks a connected server's socket until the event loop's check phase, so the batches of
 * every check started in this turn (all the HTTP requests one poll delivered) leave in one
 * writev instead of one system call each: under load, socket writes were the server's
 * largest cost. A batch waits at most for the rest of the current turn.
 */
function holdWritesForThisTurn(server: Server): void {
  if (!server.connected || holding.has(server)) return;
  server.sock(false, (socket) => {
    socket.cork();
    holding.add(server);
    setImmediate(() => {
      holding.delete(server);
      socket.uncork();
    });
  });
}
