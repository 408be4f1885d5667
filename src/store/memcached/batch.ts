import type { Response } from 'memjs';
import { StoreUnavailableError } from '../counter-store.js';
import type { Exchange, ServerConnection } from './connection.js';
import {
  counterFromIncrement,
  counterFromText,
  encodeBatch,
  Opcode,
  Status,
  type ArithmeticRequest,
} from './protocol.js';

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

/** How a batch is sent. The store keeps one object of each kind: batches are the hot path. */
export interface BatchOptions {
  /**
   * When this call fails or is too late, take back every increment the server applied,
   * whenever its reply comes: the caller decided without the store and did not admit the
   * request. Without it such increments stay counted, as for a request admitted anyway.
   */
  readonly undoIfAbandoned: boolean;
  /** Write even while the server is down: for taking increments back. */
  readonly evenWhenDown: boolean;
  /** Told of increments taken back after their call was abandoned, and of any failure to. */
  readonly onUndo: ((undone: number, error?: unknown) => void) | undefined;
}

export const PLAIN_BATCH: BatchOptions = { undoIfAbandoned: false, evenWhenDown: false, onUndo: undefined };

/**
 * Sends arithmetic requests, then quiet gets, then a no-op to one server in one write, and
 * gathers the replies; the no-op's reply closes the batch (replies come in order).
 * Rejects with StoreUnavailableError when the server is down, fails, or stays silent past
 * the connection's deadline. `now` (Unix milliseconds) is asked only for an absolute
 * expiration, a TTL over 30 days.
 */
export function runBatch(
  connection: ServerConnection,
  arithmetic: readonly ArithmeticRequest[],
  reads: readonly string[],
  options: BatchOptions = PLAIN_BATCH,
  now: () => number = Date.now,
): Promise<BatchReplies> {
  return new Promise((resolve, reject) => {
    connection.send(new Batch(connection, arithmetic, reads, options, now, resolve, reject), options);
  });
}

/** One batch's exchange with its server: one object, so a check allocates little. */
class Batch implements Exchange {
  readonly opaque: number;
  readonly bytes: Buffer;
  readonly quiet = true;
  private readonly arithmeticValues: (number | undefined)[];
  private readonly readValues: number[];
  /** Quiet gets answer only hits, in the order asked: the next read a reply can be for. */
  private readCursor = 0;
  private arithmeticReplies = 0;
  private readonly raced: number[] = [];
  private failure: StoreUnavailableError | undefined;
  /** The caller has its rejection and decided without this call. */
  private abandoned = false;
  /** Increments the server applied, while they may still have to be taken back. */
  private readonly applied: ArithmeticRequest[] = [];

  constructor(
    private readonly connection: ServerConnection,
    private readonly arithmetic: readonly ArithmeticRequest[],
    private readonly reads: readonly string[],
    private readonly options: BatchOptions,
    now: () => number,
    private readonly resolve: (replies: BatchReplies) => void,
    private readonly reject: (error: StoreUnavailableError) => void,
  ) {
    this.opaque = connection.nextOpaque();
    this.bytes = encodeBatch(arithmetic, reads, this.opaque, now);
    this.arithmeticValues = new Array<number | undefined>(arithmetic.length);
    this.readValues = new Array<number>(reads.length).fill(0);
  }

  onReply(response: Response): boolean {
    const { opcode, status } = response.header;
    if (opcode === Opcode.noop) {
      if (this.abandoned) this.takeBackApplied();
      else if (this.failure) this.abandon(this.failure);
      else this.resolve({ arithmetic: this.arithmeticValues, read: this.readValues, raced: this.raced });
      return true;
    }
    if (opcode === Opcode.getKQ) {
      this.readReply(response);
      return false;
    }
    // Arithmetic replies come back in the order the requests were sent.
    const index = this.arithmeticReplies++;
    const request = this.arithmetic[index];
    if (status === Status.ok) {
      this.arithmeticValues[index] = counterFromIncrement(response.val);
      if (this.options.undoIfAbandoned && request?.opcode === Opcode.increment) this.applied.push(request);
    } else if (status === Status.notStored && request?.opcode === Opcode.increment) {
      this.raced.push(index);
    } else if (!(status === Status.keyNotFound && request?.opcode === Opcode.decrement)) {
      this.failure ??= new StoreUnavailableError(
        `memcached ${this.connection.label} refused a counter update: ${response.val.toString('utf8')} (status ${status})`,
      );
    }
    return false;
  }

  onLate(error: StoreUnavailableError): void {
    this.abandon(error);
  }

  /** Replies seen before the connection failed were applied. */
  onFail(error: StoreUnavailableError): void {
    if (this.abandoned) this.takeBackApplied();
    else this.abandon(error);
  }

  private readReply(response: Response): void {
    const key = response.key.toString('utf8');
    const { reads } = this;
    while (this.readCursor < reads.length && reads[this.readCursor] !== key) this.readCursor++;
    const value = counterFromText(response.val);
    if (this.readCursor === reads.length || Number.isNaN(value)) {
      this.failure ??= new StoreUnavailableError(
        `memcached ${this.connection.label} returned a value that is not a counter`,
      );
      return;
    }
    this.readValues[this.readCursor++] = value;
  }

  private abandon(error: StoreUnavailableError): void {
    if (this.abandoned) return;
    this.abandoned = true;
    this.reject(error);
    this.takeBackApplied();
  }

  private takeBackApplied(): void {
    if (this.applied.length === 0) return;
    const decrements = this.applied
      .splice(0)
      .map(({ key, delta }) => ({ opcode: Opcode.decrement, key, delta }) as const);
    const { onUndo } = this.options;
    runBatch(this.connection, decrements, [], TAKING_BACK).then(
      () => onUndo?.(decrements.length),
      (error: unknown) => onUndo?.(0, error),
    );
  }
}

const TAKING_BACK: BatchOptions = { undoIfAbandoned: false, evenWhenDown: true, onUndo: undefined };
