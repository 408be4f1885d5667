import type { Server } from 'node:http';
import { Server as NetServer } from 'node:net';
import { setImmediate as afterPoll, setTimeout as sleep } from 'node:timers/promises';

/**
 * The end of an HTTP server's life without losing a request that reached it.
 *
 * `begin()` starts the drain: /readyz fails and every answer carries `Connection: close`,
 * so clients leave after their next answer. `closeListener()` then stops accepting
 * connections. Closing a listening socket resets every connection still in the kernel's
 * accept queue, whose client may already have written its request. So from then on
 * requests wait (`admit`) until the listener has closed: a client waiting for an answer
 * opens no new connection, and the listener closes once none has arrived for `quietMs`.
 * Connections that still carry no request are closed `quietMs` after that.
 */
export interface Drain {
  /** True once the drain has begun. */
  readonly draining: boolean;
  begin(): void;
  /** Lets a request be handled: now, or once the listener has closed if it is closing. */
  admit(handle: () => void): void;
  /** Stops accepting connections; the result says how, and when every connection has closed. */
  closeListener(server: Server, timing: ListenerTiming): Promise<ListenerClosed>;
}

export interface ListenerTiming {
  /** The listener closes once no connection has arrived for this long … */
  readonly quietMs: number;
  /** … or after this long, if connections keep arriving. */
  readonly maxWaitMs: number;
}

export interface ListenerClosed {
  /** How long the listener waited for a quiet moment. */
  readonly waitedMs: number;
  /** False when connections kept arriving until `maxWaitMs`: some may have been reset. */
  readonly quiet: boolean;
  /** Requests that waited for the listener to close. */
  readonly heldRequests: number;
  /** Connections open when it closed. */
  readonly openConnections: number;
  /** Resolves once every connection has closed. */
  readonly allClosed: Promise<void>;
}

export function createDrain(): Drain {
  let draining = false;
  let held: (() => void)[] | undefined;
  let heldRequests = 0;
  return {
    get draining() {
      return draining;
    },
    begin() {
      draining = true;
    },
    admit(handle) {
      if (!held) {
        handle();
        return;
      }
      heldRequests++;
      held.push(handle);
    },
    async closeListener(server, { quietMs, maxWaitMs }) {
      draining = true;
      held = [];
      const { waitedMs, quiet } = await untilQuiet(server, quietMs, maxWaitMs);
      // net.Server's close, not http.Server's: since Node 19 that one also destroys at
      // once every connection without a request in progress, resetting any client whose
      // request is on its way.
      const allClosed = new Promise<void>((resolve) => {
        NetServer.prototype.close.call(server, () => {
          resolve();
        });
      });
      const openConnections = await new Promise<number>((resolve) => {
        server.getConnections((_error, count) => {
          resolve(count);
        });
      });
      const waiting = held;
      held = undefined;
      for (const handle of waiting) handle();
      // A connection accepted just before has had quietMs to send its request; give it as
      // long again, since the listener closed.
      const idle = setTimeout(() => {
        server.closeIdleConnections();
      }, quietMs);
      void allClosed.then(() => {
        clearTimeout(idle);
      });
      return { waitedMs, quiet, heldRequests, openConnections, allClosed };
    },
  };
}

/** Resolves right after a poll phase, once no connection has been accepted for `quietMs`, or after `maxWaitMs`. */
async function untilQuiet(server: Server, quietMs: number, maxWaitMs: number): Promise<{ waitedMs: number; quiet: boolean }> {
  const started = performance.now();
  let last = started;
  const accepted = () => (last = performance.now());
  server.on('connection', accepted);
  try {
    for (;;) {
      // libuv accepts every pending connection in its poll phase; setImmediate runs right after.
      await afterPoll();
      const now = performance.now();
      const quietFor = now - last;
      if (quietFor >= quietMs || now - started >= maxWaitMs) return { waitedMs: Math.round(now - started), quiet: quietFor >= quietMs };
      await sleep(Math.min(quietMs - quietFor, maxWaitMs - (now - started)));
    }
  } finally {
    server.off('connection', accepted);
  }
}
