// What an operator reads when the store loses counts it was given: an increment taken back too
// late, or items Memcached evicted for lack of memory. Each says what it means for the limits.
import type { Logger } from 'pino';

export interface StoreWarnings {
  /** Taking back a denied request's increments got no answer in time. */
  readonly rollbackFailed: (err: unknown) => void;
  /** Increments a frozen Memcached applied late could not be taken back. */
  readonly undoFailed: (err: unknown) => void;
  /** A Memcached server evicted items since the last look. */
  readonly evicted: (server: string, evicted: number, total: number) => void;
}

export function storeWarnings(logger: Logger): StoreWarnings {
  return {
    rollbackFailed: (err) => {
      logger.warn(
        { err },
        'taking back a denied request got no answer in time; it is applied if Memcached answers on the same connection, else its cost stays counted until its bucket expires',
      );
    },
    undoFailed: (err) => {
      logger.warn(
        { err },
        'could not take back increments a frozen Memcached applied late; they stay counted until their buckets expire',
      );
    },
    evicted: (server, evicted, total) => {
      logger.warn(
        { server, evicted, total },
        `Memcached ${server} evicted ${evicted} items for lack of memory: counts it held are now too low. Give it more memory (see docs/operations.md)`,
      );
    },
  };
}
