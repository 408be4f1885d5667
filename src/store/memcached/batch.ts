import { StoreUnavailableError, type CounterIncrement } from '../counter-store.js';
import type { Exchange, ServerConnection } from './connection.js';
import { encodeBatch, Opcode, Status, type BatchRequest, type ExpirationOptions } from './protocol.js';
import type { Reply } from './reply.js';

export interface BatchReplies {
  /** Each increment's new value; 0 for one that raced (see `raced`). */
  readonly incremented: number[];
  /** Each read key's value; 0 when missing. */
  readonly read: number[];
  /**
   * Indexes of increments memcached answered NOT_STORED: two connections creating one key at
   * once make the slower one fail. The key exists then, so sending them again succeeds.
   */
  readonly raced: number[];
}

/**
 * How a batch is sent, and how long the keys its increments create live beyond their TTL
 * (`expirationJitterS`, see encodeBatch). The store keeps one object of each kind: batches are the hot path.
 */
export interface BatchOptions extends ExpirationOptions {
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

export const PLAIN_BATCH: BatchOptions = {
  undoIfAbandoned: false,
  evenWhenDown: false,
  onUndo: undefined,
  expirationJitterS: 0,
};

/**
 * Sends increments, decrements, then quiet gets, then a no-op to one server in one write,
 * and gathers the replies; the no-op's reply closes the batch (replies come in order).
 * Rejects with StoreUnavailableError when the server is down, fails, or stays silent past
 * the connection's deadline. `now` (Unix milliseconds) is asked only for an absolute
 * expiration, a TTL over 30 days.
 */
export function runBatch(
  connection: ServerConnection,
  request: BatchRequest,
  options: BatchOptions = PLAIN_BATCH,
  now: () => number = Date.now,
): Promise<BatchReplies> {
  return new Promise((resolve, reject) => {
    connection.send(new Batch(connection, request, options, now, resolve, reject), options);
  });
}

/** One batch's exchange with its server: one object, so a check allocates little. */
class Batch implements Exchange {
  readonly opaque: number;
  readonly bytes: Buffer;
  private readonly readKeyStarts: readonly number[];
  private readonly readKeyLengths: readonly number[];
  private readonly replies: BatchReplies;
  /** Quiet gets answer only hits, in the order asked: the next read a reply can be for. */
  private readCursor = 0;
  private arithmeticReplies = 0;
  private failure: StoreUnavailableError | undefined;
  /** The caller has its rejection and decided without this call. */
  private abandoned = false;
  /** Increments the server applied, while they may still have to be taken back. */
  private readonly applied: CounterIncrement[] = [];

  constructor(
    private readonly connection: ServerConnection,
    private readonly request: BatchRequest,
    private readonly options: BatchOptions,
    now: () => number,
    private readonly resolve: (replies: BatchReplies) => void,
    private readonly reject: (error: StoreUnavailableError) => void,
  ) {
    this.opaque = connection.nextOpaque();
    const encoded = encodeBatch(request, this.opaque, now, options);
    this.bytes = encoded.bytes;
    this.readKeyStarts = encoded.readKeyStarts;
    this.readKeyLengths = encoded.readKeyLengths;
    this.replies = {
      incremented: new Array<number>(request.increments.length).fill(0),
      read: new Array<number>(request.reads.length).fill(0),
      raced: [],
    };
  }

  onReply(reply: Reply): boolean {
    const { opcode, status } = reply;
    if (opcode === Opcode.noop) {
      if (this.abandoned) this.takeBackApplied();
      else if (this.failure) this.abandon(this.failure);
      else this.resolve(this.replies);
      return true;
    }
    if (opcode === Opcode.getKQ) {
      this.readReply(reply);
      return false;
    }
    // Arithmetic replies come back in the order the requests were sent: increments, then decrements.
    const index = this.arithmeticReplies++;
    const increment = this.request.increments[index];
    if (status === Status.ok) {
      if (increment) {
        this.replies.incremented[index] = reply.arithmeticValue();
        if (this.options.undoIfAbandoned) this.applied.push(increment);
      }
    } else if (status === Status.notStored && increment) {
      this.replies.raced.push(index);
    } else if (!(status === Status.keyNotFound && opcode === Opcode.decrement)) {
      this.failure ??= new StoreUnavailableError(
        `memcached ${this.connection.label} refused a counter update: ${reply.text()} (status ${status})`,
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

  private readReply(reply: Reply): void {
    const { reads } = this.request;
    const { readKeyStarts, readKeyLengths, bytes } = this;
    while (
      this.readCursor < reads.length &&
      !reply.keyIs(bytes, readKeyStarts[this.readCursor] ?? 0, readKeyLengths[this.readCursor] ?? 0)
    )
      this.readCursor++;
    const value = reply.counterText();
    if (this.readCursor === reads.length || Number.isNaN(value)) {
      this.failure ??= new StoreUnavailableError(
        `memcached ${this.connection.label} returned a value that is not a counter`,
      );
      return;
    }
    this.replies.read[this.readCursor++] = value;
  }

  private abandon(error: StoreUnavailableError): void {
    if (this.abandoned) return;
    this.abandoned = true;
    this.reject(error);
    this.takeBackApplied();
  }

  private takeBackApplied(): void {
    if (this.applied.length === 0) return;
    const decrements = this.applied.splice(0).map(({ key, delta }) => ({ key, delta }));
    const { onUndo } = this.options;
    runBatch(this.connection, { increments: [], decrements, reads: [] }, TAKING_BACK).then(
      () => onUndo?.(decrements.length),
      (error: unknown) => onUndo?.(0, error),
    );
  }
}

const TAKING_BACK: BatchOptions = {
  undoIfAbandoned: false,
  evenWhenDown: true,
  onUndo: undefined,
  expirationJitterS: 0,
};
