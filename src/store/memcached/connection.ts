import type { Socket } from 'node:net';
import memjs, { type Response } from 'memjs';
import { StoreUnavailableError } from '../counter-store.js';
import { encodeBatch } from './protocol.js';

/**
 * One request, or one pipelined batch of requests sharing an opaque, and what to do with
 * the server's replies to it.
 */
export interface Exchange {
  readonly opaque: number;
  readonly bytes: Buffer;
  /**
   * memjs keeps a quiet handler registered until a reply with an empty body (a batch's
   * closing no-op, a STAT's terminator); any other handler goes after its first reply.
   */
  readonly quiet: boolean;
  /** Each reply carrying this opaque; true when it was the last one expected. */
  onReply(response: Response): boolean;
  /**
   * The server stayed silent for the whole deadline while this exchange waited on it. Its
   * replies may still come (they are passed to onReply) until it completes or fails.
   */
  onLate(error: StoreUnavailableError): void;
  /** No (more) replies will come: the connection failed, or the server is known to be down. */
  onFail(error: StoreUnavailableError): void;
  /** The bytes were handed to the socket, at this performance.now(). */
  onSent?(at: number): void;
}

export interface SendOptions {
  /**
   * Write even while the server is considered down. For requests that must reach the
   * server whenever it answers again: taking back increments, and probes. Default false.
   */
  readonly evenWhenDown?: boolean;
}

export interface ConnectionOptions {
  readonly host: string;
  readonly port: number;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** How long the server may stay silent while an exchange waits on it. */
  readonly deadlineMs: number;
  /** Send the exchanges of one event-loop turn in one socket write. */
  readonly coalesceWrites: boolean;
  /** Told when the server goes down (reason given) or answers again (no reason). */
  readonly onStateChange?: (state: { up: boolean; reason?: string }) => void;
  /** The label the logs and /readyz use, `host:port`. */
  readonly label: string;
}

/** A probe of a down server that fails (refused, reset) is sent again after this long. */
const PROBE_RETRY_MS = 100;

/** memjs keeps a handler marked quiet registered until a reply with an empty body. */
type QuietHandler = ((response: Response) => void) & { quiet?: boolean };

/** memjs's handler tables, which it clears only when a socket errors, not when one closes. */
interface HandlerTables {
  readonly responseCallbacks: Record<number, unknown>;
  readonly errorCallbacks: Record<number, unknown>;
}

/** An exchange on its way: sent, waiting, perhaps late, until complete or failed. */
interface Pending {
  readonly exchange: Exchange;
  readonly createdAt: number;
  /** When its bytes were handed to the socket; unset while they wait in memgate. */
  sentAt?: number;
  socket?: Socket;
  late: boolean;
  ended: boolean;
  timer?: NodeJS.Timeout;
}

/**
 * One Memcached server as memgate talks to it. memjs's `Server` keeps the socket
 * (connect, SASL, framing, dispatch by opaque); this adds what a limiter needs on top:
 *
 * - **Deadlines that measure the store, not memgate.** An exchange is late only when the
 *   server has sent nothing at all for `deadlineMs` while it waited, judged after the
 *   event loop has read what the socket holds. A busy memgate whose turns run longer than
 *   the deadline reads its replies late, but they are there: that is not the store's fault
 *   and must not turn checks into unchecked decisions. memjs's own timeout is off: it
 *   closes the socket, and a server that was only frozen then applies the requests it had
 *   already received after memgate has decided them (see Exchange.onLate).
 * - **Down means down.** Once an exchange is late or the connection fails, the server is
 *   down: exchanges fail at once instead of each waiting a deadline and piling requests
 *   into a frozen socket, and one probe (a no-op) waits for the server. Replies come in
 *   order, so when the probe answers, every earlier request has been answered too.
 * - **One write per turn.** With `coalesceWrites`, the socket is corked at the first
 *   exchange of a turn and uncorked in the check phase, so every check one poll delivered
 *   leaves in one writev: under load, socket writes were the server's largest cost.
 */
export class ServerConnection {
  readonly label: string;
  private readonly server: memjs.Server;
  private readonly deadlineMs: number;
  private readonly coalesceWrites: boolean;
  private readonly onStateChange: ConnectionOptions['onStateChange'];
  /** When the server last sent any bytes (performance.now()). */
  private lastHeardAt = 0;
  private downReason: string | undefined;
  private probing = false;
  private closed = false;
  private lastOpaque = 0;
  /** The exchanges held back in this turn, and the socket they are corked in. */
  private corked: { readonly socket: Socket; readonly pending: Pending[] } | undefined;
  private readonly watched = new WeakSet<Socket>();
  private readonly pendingBySocket = new Map<Socket, Set<Pending>>();

  constructor(options: ConnectionOptions) {
    this.label = options.label;
    this.deadlineMs = options.deadlineMs;
    this.coalesceWrites = options.coalesceWrites;
    this.onStateChange = options.onStateChange;
    this.server = new memjs.Server(options.host, options.port, options.username, options.password, {
      // memgate keeps the deadlines: memjs's would close the socket (see above).
      timeout: 0,
      conntimeout: Math.max(1, (4 * options.deadlineMs) / 1000),
      keepAlive: true,
      keepAliveDelay: 30,
    });
  }

  get host(): string {
    return this.server.host;
  }

  get port(): number {
    return this.server.port;
  }

  /** Why the server is considered down, or undefined while it answers. */
  get down(): string | undefined {
    return this.downReason;
  }

  /** An opaque no exchange waiting on this server carries. */
  nextOpaque(): number {
    this.lastOpaque = this.lastOpaque >= 0xffff_ffff ? 1 : this.lastOpaque + 1;
    return this.lastOpaque;
  }

  /** Sends an exchange. While the server is down it fails at once, unless `evenWhenDown`. */
  send(exchange: Exchange, options: SendOptions = {}): void {
    if (this.closed) {
      exchange.onFail(new StoreUnavailableError(`memcached ${this.label}: the store is closed`));
      return;
    }
    if (this.downReason !== undefined && !options.evenWhenDown) {
      exchange.onFail(new StoreUnavailableError(`memcached ${this.label} is down (${this.downReason})`));
      return;
    }
    const pending: Pending = { exchange, createdAt: performance.now(), late: false, ended: false };
    const onReply: QuietHandler = (response: Response) => {
      if (pending.ended) return;
      if (exchange.onReply(response)) this.end(pending);
    };
    onReply.quiet = exchange.quiet;
    this.server.onResponse(exchange.opaque, onReply);
    this.server.onError(exchange.opaque, (error: unknown) => {
      this.fail(pending, `memcached ${this.label}: ${error instanceof Error ? error.message : String(error)}`);
    });
    pending.timer = setTimeout(this.judgeLater, this.deadlineMs, pending);
    this.server.sock(false, (socket) => {
      this.watch(socket);
      pending.socket = socket;
      this.pendingOn(socket).add(pending);
      if (this.coalesceWrites) this.cork(socket, pending);
      else this.sent(pending, performance.now());
      socket.write(exchange.bytes);
    });
  }

  /** Closes the socket once what was written has gone out, and stops probing. */
  close(): void {
    this.closed = true;
    this.server.close();
  }

  /**
   * The deadline passed. Bytes the server sent while memgate was busy wait unread in the
   * socket, so look again only after two polls of the event loop: the first may have
   * started before they arrived (a busy poll phase runs long), the second starts after.
   * Then the exchange is late only if the server sent nothing at all for a whole deadline
   * since the exchange left.
   */
  /** judge(), for timers: one function for every exchange rather than a closure each. */
  private readonly judgeLater = (pending: Pending): void => {
    this.judge(pending);
  };

  private judge(pending: Pending): void {
    setImmediate(() => {
      setImmediate(() => {
        if (pending.ended || pending.late) return;
        const now = performance.now();
        // Bytes handed to a socket this very turn (corked) left now; bytes still waiting for
        // a connection wait on the server (the polls just before this would have seen it).
        const sentAt = pending.sentAt ?? (pending.socket ? now : pending.createdAt);
        const silentMs = now - Math.max(sentAt, this.lastHeardAt);
        if (silentMs < this.deadlineMs) {
          pending.timer = setTimeout(this.judgeLater, this.deadlineMs - silentMs, pending);
          return;
        }
        pending.late = true;
        const reason = `did not answer within ${this.deadlineMs} ms`;
        this.markDown(reason);
        pending.exchange.onLate(new StoreUnavailableError(`memcached ${this.label} ${reason}`));
      });
    });
  }

  private end(pending: Pending): void {
    pending.ended = true;
    clearTimeout(pending.timer);
    if (pending.socket) this.pendingBySocket.get(pending.socket)?.delete(pending);
  }

  private fail(pending: Pending, message: string): void {
    if (pending.ended) return;
    this.end(pending);
    this.markDown(message.replace(`memcached ${this.label}: `, ''));
    pending.exchange.onFail(new StoreUnavailableError(message));
  }

  /** Once per socket: note every byte that arrives, and fail what waits on it when it closes. */
  private watch(socket: Socket): void {
    if (this.watched.has(socket)) return;
    this.watched.add(socket);
    socket.on('data', () => {
      this.lastHeardAt = performance.now();
      // A server that speaks again is up: the replies it owes follow in order.
      this.markUp();
    });
    // memjs forgets a socket that closes without an error, and the exchanges waiting on
    // it with it: they would wait forever.
    socket.once('close', () => {
      const waiting = this.pendingBySocket.get(socket);
      this.pendingBySocket.delete(socket);
      const tables = this.server as unknown as HandlerTables;
      for (const pending of waiting ?? []) {
        Reflect.deleteProperty(tables.responseCallbacks, pending.exchange.opaque);
        Reflect.deleteProperty(tables.errorCallbacks, pending.exchange.opaque);
        this.fail(pending, `memcached ${this.label}: the connection closed`);
      }
    });
  }

  private pendingOn(socket: Socket): Set<Pending> {
    let pending = this.pendingBySocket.get(socket);
    if (!pending) this.pendingBySocket.set(socket, (pending = new Set()));
    return pending;
  }

  private cork(socket: Socket, pending: Pending): void {
    if (this.corked?.socket === socket) {
      this.corked.pending.push(pending);
      return;
    }
    const corked = { socket, pending: [pending] };
    this.corked = corked;
    socket.cork();
    setImmediate(() => {
      if (this.corked === corked) this.corked = undefined;
      socket.uncork();
      const now = performance.now();
      for (const each of corked.pending) this.sent(each, now);
    });
  }

  private sent(pending: Pending, at: number): void {
    pending.sentAt = at;
    pending.exchange.onSent?.(at);
  }

  private markDown(reason: string): void {
    if (this.downReason !== undefined) return;
    this.downReason = reason;
    this.onStateChange?.({ up: false, reason });
    this.probe();
  }

  /** One no-op at a time until the server answers; it then counts as up again. */
  private probe(): void {
    if (this.probing || this.closed) return;
    this.probing = true;
    const retry = () => {
      this.probing = false;
      setTimeout(() => {
        this.probe();
      }, PROBE_RETRY_MS).unref();
    };
    const opaque = this.nextOpaque();
    this.send(
      {
        opaque,
        bytes: encodeBatch([], [], opaque, Date.now),
        quiet: false,
        onReply: () => {
          this.probing = false;
          this.markUp();
          return true;
        },
        // A probe waits as long as its connection lives: a frozen server answers it when it wakes.
        onLate: () => undefined,
        onFail: retry,
      },
      { evenWhenDown: true },
    );
  }

  private markUp(): void {
    if (this.downReason === undefined) return;
    this.downReason = undefined;
    this.onStateChange?.({ up: true });
  }
}
