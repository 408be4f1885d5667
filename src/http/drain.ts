import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import { setImmediate as afterPoll, setTimeout as sleep } from 'node:timers/promises';

/**
 * The end of an HTTP server's life without losing a request that reached it.
 *
 * `begin()` starts the drain: /readyz fails and every answer carries `Connection: close`,
 * so clients leave after their next answer. `closeListener()` then stops accepting
 * connections. Closing a listening socket resets every connection still in the kernel's
 * accept queue, whose client may already have written its request. So from then on
 * requests wait until the listener has closed: a client waiting for an answer opens no
 * new connection, and the listener closes once none has arrived for `quietMs`.
 * Connections that carry no request are closed `quietMs` after that, and every `quietMs`
 * after, as those whose requests began before the drain finish.
 *
 * Both act on the server's 'request' event, and only once begun: a request served before
 * the drain pays nothing for it (hooks on every request were a measurable share of the
 * cost of a repeated denial).
 */
export interface Drain {
  /** True once the drain has begun. */
  readonly draining: boolean;
  begin(server: Server): void;
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

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

export function createDrain(): Drain {
  let draining = false;
  let held: (() => void)[] | undefined;
  let heldRequests = 0;
  const begin = (server: Server) => {
    if (draining) return;
    draining = true;
    // Node then answers with Connection: close and ends the connection after the answer.
    server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
      response.shouldKeepAlive = false;
    });
    // The app's own listener, from now on called only when no request must wait.
    const handlers = server.listeners('request') as RequestListener[];
    const app = handlers.at(-1);
    if (!app) return;
    server.removeListener('request', app);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      if (!held) {
        app(request, response);
        return;
      }
      heldRequests++;
      held.push(() => {
        app(request, response);
      });
    });
  };
  return {
    get draining() {
      return draining;
    },
    begin,
    async closeListener(server, { quietMs, maxWaitMs }) {
      begin(server);
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
      // long again, since the listener closed. Then again every quietMs: a request that began
      // before the drain answers with keep-alive, and its connection turns idle only then.
      const idle = setInterval(() => {
        server.closeIdleConnections();
      }, quietMs);
      void allClosed.then(() => {
        clearInterval(idle);
      });
      return { waitedMs, quiet, heldRequests, openConnections, allClosed };
    },
  };
}

/** Resolves right after a poll phase, once no connection has been accepted for `quietMs`, or after `maxWaitMs`. */
async function untilQuiet(
  server: Server,
  quietMs: number,
  maxWaitMs: number,
): Promise<{ waitedMs: number; quiet: boolean }> {
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
      if (quietFor >= quietMs || now - started >= maxWaitMs)
        return { waitedMs: Math.round(now - started), quiet: quietFor >= quietMs };
      await sleep(Math.min(quietMs - quietFor, maxWaitMs - (now - started)));
    }
  } finally {
    server.off('connection', accepted);
  }
}
