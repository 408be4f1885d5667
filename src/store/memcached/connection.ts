import { connect, isIP, type Socket } from 'node:net';
import {
  connect as connectTls,
  createSecureContext,
  type ConnectionOptions as ConnectionOptionsTls,
  type SecureContext,
} from 'node:tls';
import type { MemcachedTls } from './servers.js';
import { StoreUnavailableError } from '../counter-store.js';
import { encodeBatch, encodeRequest, Opcode, Status } from './protocol.js';
import { HEADER_BYTES, Reply } from './reply.js';

/**
 * One request, or one pipelined batch of requests sharing an opaque, and what to do with
 * the server's replies to it.
 */
export interface Exchange {
  readonly opaque: number;
  readonly bytes: Buffer;
  /** Each reply carrying this opaque (read in place: see Reply); true when it was the last one expected. */
  onReply(reply: Reply): boolean;
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
  /** SASL PLAIN credentials, sent first on every new connection when given. */
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** TLS, before anything else is sent (SASL included); in clear when unset. */
  readonly tls?: MemcachedTls | undefined;
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
/** A connection not established within this many deadlines (and at least a second) is given up. */
const CONNECT_DEADLINES = 4;
/** TCP keep-alive probes start after this long idle, so a peer that vanished is noticed. */
const KEEP_ALIVE_MS = 30_000;
/** The opaque of the SASL request: no exchange carries it. */
const SASL_OPAQUE = 0;
/** The first byte of every reply. */
const RESPONSE_MAGIC = 0x81;
/** Why a server whose bytes are not replies of the binary protocol is down. */
const NOT_MEMCACHED = "it answers with bytes that are not Memcached's binary protocol: another service on this port?";

/** One context per TLS setting, made at the first connection: each reconnect would parse the authorities again. */
const contexts = new WeakMap<MemcachedTls, SecureContext>();

/** Node's options for a TLS connection to `host` as `tls` asks. */
function tlsOptions(host: string, tls: MemcachedTls): ConnectionOptionsTls {
  let secureContext = contexts.get(tls);
  if (!secureContext) {
    secureContext = createSecureContext({
      ...(tls.ca ? { ca: tls.ca } : {}),
      ...(tls.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
    });
    contexts.set(tls, secureContext);
  }
  return {
    secureContext,
    // SNI takes a name only; an address is checked against the certificate's IP entries.
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ...(tls.verifyHostname ? {} : { checkServerIdentity: () => undefined }),
  };
}

/** An exchange on its way: sent, waiting, perhaps late, until complete or failed. */
interface Pending {
  readonly exchange: Exchange;
  readonly createdAt: number;
  readonly socket: Socket;
  /** When its bytes were handed to the socket; unset while they wait corked in memgate. */
  sentAt: number | undefined;
  late: boolean;
  ended: boolean;
}

/**
 * One Memcached server as memgate talks to it, over one socket of its own: the binary
 * protocol's framing (replies read in place, dispatched by opaque), SASL PLAIN, and what a
 * limiter needs on top:
 *
 * - **Deadlines that measure the store, not memgate.** An exchange is late only when the
 *   server has sent nothing at all for `deadlineMs` while it waited, judged as of an
 *   instant after which the event loop has read what the socket holds. A busy memgate
 *   whose turns run longer than the deadline reads its replies late, but they are there:
 *   that is not the store's fault and must not turn checks into unchecked decisions. A
 *   late exchange keeps its socket: a server that was only frozen applies the requests it
 *   had received when it wakes, and their replies still reach the exchange (see
 *   Exchange.onLate). One timer per connection watches them all, oldest first: replies
 *   come in order.
 * - **Down means down.** Once an exchange is late or the connection fails, the server is
 *   down: exchanges fail at once instead of each waiting a deadline and piling requests
 *   into a frozen socket, and one probe (a no-op) waits for the server. Replies come in
 *   order, so when the probe answers, every earlier request has been answered too.
 * - **One write per turn.** With `coalesceWrites`, the socket is corked at the first
 *   exchange of a turn and uncorked in the check phase, so every check one poll delivered
 *   leaves in one writev: under load, socket writes were the server's largest cost.
 *
 * memjs did the socket and the framing before; it copied every chunk the socket delivered
 * into a new buffer and made objects of each reply's parts, and the store registered two
 * callbacks and a timer per exchange: a quarter of memgate's own cost per check.
 */
export class ServerConnection {
  readonly label: string;
  private readonly options: ConnectionOptions;
  private socket: Socket | undefined;
  /**
   * Exchanges waiting for replies, oldest first from `head`: a server answers in order, so a
   * reply is for the oldest exchange still waiting (a Map of them by opaque kept every
   * exchange it had held alive until it rehashed, and the garbage collector paid for it).
   */
  private queue: Pending[] = [];
  private head = 0;
  /** The start of a reply whose rest has not arrived yet. */
  private partial: Buffer | undefined;
  private readonly reply = new Reply();
  /** When the server last sent any bytes (performance.now()). */
  private lastHeardAt = 0;
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** When the deadline timer last fired: the poll after it read all the server had sent by then. */
  private judgeAsOf = 0;
  private downReason: string | undefined;
  private probing = false;
  private closed = false;
  private lastOpaque = 0;
  /** The exchanges held back in this turn, and the socket they are corked in. */
  private corked: { readonly socket: Socket; readonly pending: Pending[] } | undefined;

  constructor(options: ConnectionOptions) {
    this.label = options.label;
    this.options = options;
  }

  get host(): string {
    return this.options.host;
  }

  get port(): number {
    return this.options.port;
  }

  /** When the server last sent any bytes (performance.now()), 0 before it ever did. */
  get heardAt(): number {
    return this.lastHeardAt;
  }

  /** Why the server is considered down, or undefined while it answers. */
  get down(): string | undefined {
    return this.downReason;
  }

  /** An opaque no exchange waiting on this server carries (0 is the SASL request's). */
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
    if (this.downReason !== undefined && options.evenWhenDown !== true) {
      exchange.onFail(new StoreUnavailableError(`memcached ${this.label} is down (${this.downReason})`));
      return;
    }
    let socket: Socket;
    try {
      socket = this.socket ?? this.open();
    } catch (error) {
      // A connection Node refuses to start (settings check TLS's files, so this is unexpected): this exchange fails as any unreachable server's would.
      exchange.onFail(
        new StoreUnavailableError(`memcached ${this.label}: cannot connect (${(error as Error).message})`),
      );
      return;
    }
    const pending: Pending = {
      exchange,
      createdAt: performance.now(),
      socket,
      sentAt: undefined,
      late: false,
      ended: false,
    };
    this.queue.push(pending);
    if (this.options.coalesceWrites) this.cork(socket, pending);
    else this.sent(pending, performance.now());
    socket.write(exchange.bytes);
    this.deadlineTimer ??= setTimeout(this.judgeLater, this.options.deadlineMs).unref();
  }

  /** Closes the socket once what was written has gone out, and stops probing. */
  close(): void {
    this.closed = true;
    this.socket?.end();
  }

  /** A new socket; SASL's request goes first, and the exchanges' bytes queue behind it. */
  private open(): Socket {
    const { host, port, username, password, deadlineMs, tls } = this.options;
    const tcp = { host, port, noDelay: true, keepAlive: true, keepAliveInitialDelay: KEEP_ALIVE_MS };
    const socket = tls ? connectTls({ ...tcp, ...tlsOptions(host, tls) }) : connect(tcp);
    this.socket = socket;
    this.partial = undefined;
    let failure: string | undefined;
    const connectMs = Math.max(1000, CONNECT_DEADLINES * deadlineMs);
    let connected = false;
    const connectTimer = setTimeout(() => {
      // Judged after the poll phase that follows this timer, as the exchanges' deadlines are:
      // a connection made while this process was busy is told there, and is not one that never came.
      setImmediate(() => {
        if (connected || socket.destroyed) return;
        failure = `did not connect within ${connectMs} ms`;
        socket.destroy();
      });
    }, connectMs);
    // Over TLS, bytes written before the handshake wait for it in Node: they leave at secureConnect.
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      connected = true;
      clearTimeout(connectTimer);
      // Bytes written while connecting leave now: their deadline starts here.
      const now = performance.now();
      for (const pending of this.waiting()) if (pending.socket === socket) this.sent(pending, now);
    });
    if (username !== undefined && password !== undefined)
      socket.write(encodeRequest(Opcode.saslAuth, 'PLAIN', Buffer.alloc(0), `\0${username}\0${password}`, SASL_OPAQUE));
    socket.on('data', (chunk: Buffer) => {
      this.onData(socket, chunk);
    });
    socket.on('error', (error: Error) => {
      failure ??= error.message;
    });
    socket.once('close', () => {
      clearTimeout(connectTimer);
      if (this.socket === socket) {
        this.socket = undefined;
        this.partial = undefined;
      }
      if (this.corked?.socket === socket) this.corked = undefined;
      // Nothing more comes from this socket: what waits on it fails. A server that closes a
      // connection does not run the requests it had not read.
      const reason = failure ?? 'the connection closed';
      for (const pending of this.waiting()) if (pending.socket === socket) this.fail(pending, reason);
    });
    return socket;
  }

  /**
   * Reads every whole reply the bytes hold, keeping the start of an incomplete one for the next
   * chunk. Bytes that do not start a binary-protocol reply (another service on the port) close
   * the connection without counting as an answer: the server stays down, told once, rather
   * than "answering again" at every probe.
   */
  private onData(socket: Socket, chunk: Buffer): void {
    const bytes = this.partial ? Buffer.concat([this.partial, chunk]) : chunk;
    this.partial = undefined;
    if (bytes[0] !== RESPONSE_MAGIC) {
      socket.destroy(new Error(NOT_MEMCACHED));
      return;
    }
    this.lastHeardAt = performance.now();
    let offset = 0;
    while (bytes.length - offset >= HEADER_BYTES) {
      if (bytes[offset] !== RESPONSE_MAGIC) {
        socket.destroy(new Error(NOT_MEMCACHED));
        return;
      }
      const end = offset + HEADER_BYTES + bytes.readUInt32BE(offset + 8);
      if (end > bytes.length) break;
      this.reply.readFrom(bytes, offset);
      if (!this.dispatch(socket, this.reply)) break;
      offset = end;
    }
    // Copied: a view would keep the whole chunk the socket read (up to 64 KiB) alive with it.
    if (offset < bytes.length && !socket.destroyed) this.partial = Buffer.from(bytes.subarray(offset));
    this.reply.release();
  }

  /** One reply; false when it closed the connection (refused credentials). */
  private dispatch(socket: Socket, reply: Reply): boolean {
    if (reply.opaque === SASL_OPAQUE && reply.status !== Status.ok) {
      // The server refused the credentials: every request after them would be refused too,
      // and a server that refuses them is not up (its probes would say so every 100 ms).
      socket.destroy(new Error(`refused the credentials (SASL PLAIN: ${reply.text() || `status ${reply.status}`})`));
      return false;
    }
    // A server that answers again is up: the replies it owes follow in order.
    this.markUp();
    if (reply.opaque === SASL_OPAQUE) return true;
    const pending = this.waitingFor(reply.opaque);
    // A reply for an exchange that failed already (its socket closed) has no one to read it.
    if (pending?.exchange.onReply(reply)) this.end(pending);
    return true;
  }

  /** The exchanges still waiting, oldest first. */
  private waiting(): Pending[] {
    return this.queue.slice(this.head).filter((pending) => !pending.ended);
  }

  /** The waiting exchange a reply is for: the oldest, unless an exchange ended out of turn. */
  private waitingFor(opaque: number): Pending | undefined {
    for (let i = this.head; i < this.queue.length; i++) {
      const pending = this.queue[i] as Pending;
      if (!pending.ended && pending.exchange.opaque === opaque) return pending;
    }
    return undefined;
  }

  private end(pending: Pending): void {
    pending.ended = true;
    const { queue } = this;
    while (this.head < queue.length && (queue[this.head] as Pending).ended) queue[this.head++] = undefined as never;
    if (this.head === queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024) {
      this.queue = queue.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * The deadline of the oldest exchange passed. Bytes the server sent while memgate was busy
   * wait unread in the socket; the event loop's poll phase, which follows its timers, reads
   * them. So the exchanges are judged in the check phase after that poll, as of when this
   * timer fired: the poll began after that instant and read whatever had come by then,
   * however long it ran. (Judged as of the check phase itself, a poll that ran 100 ms on
   * other sockets looked like 100 ms of silence from a server whose answer came just after
   * the poll had looked.) An exchange is late only if the server sent nothing at all for a
   * whole deadline between its leaving and that instant. judgeLater is one function for
   * the connection's timer rather than a closure each time.
   */
  private readonly judgeLater = (): void => {
    this.judgeAsOf = performance.now();
    setImmediate(this.judgeAfterPoll);
  };

  private readonly judgeAfterPoll = (): void => {
    this.deadlineTimer = undefined;
    this.judge(this.judgeAsOf);
  };

  private judge(asOf: number): void {
    const { deadlineMs } = this.options;
    for (const pending of this.waiting()) {
      if (pending.late) continue;
      // Bytes handed to a socket this very turn (corked), or waiting for it to connect, have not
      // waited on the server yet: a connection that never comes is the connect timeout's.
      const waitingSince = pending.sentAt === undefined ? undefined : Math.max(pending.sentAt, this.lastHeardAt);
      if (waitingSince === undefined || asOf - waitingSince < deadlineMs) {
        // Younger exchanges left later: the next to judge is this one, a deadline after it
        // last heard from the server (at once when that has passed during a long poll).
        const dueIn = waitingSince === undefined ? deadlineMs : waitingSince + deadlineMs - performance.now();
        this.deadlineTimer = setTimeout(this.judgeLater, Math.max(1, dueIn)).unref();
        return;
      }
      pending.late = true;
      const reason = `did not answer within ${deadlineMs} ms`;
      this.markDown(reason);
      pending.exchange.onLate(new StoreUnavailableError(`memcached ${this.label} ${reason}`));
    }
  }

  private fail(pending: Pending, reason: string): void {
    if (pending.ended) return;
    this.end(pending);
    this.markDown(reason);
    pending.exchange.onFail(new StoreUnavailableError(`memcached ${this.label}: ${reason}`));
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
      // Timed before the bytes leave: a clock reading's bounds must hold its server's answer
      // even when this thread is preempted between the write and the timestamp.
      const now = performance.now();
      socket.uncork();
      for (const each of corked.pending) this.sent(each, now);
    });
  }

  /** The exchange's bytes left at `at`, unless its socket is still connecting (then they leave on 'connect'). */
  private sent(pending: Pending, at: number): void {
    if (pending.sentAt !== undefined || pending.socket.connecting) return;
    pending.sentAt = at;
    pending.exchange.onSent?.(at);
  }

  private markDown(reason: string): void {
    if (this.downReason !== undefined) return;
    this.downReason = reason;
    this.options.onStateChange?.({ up: false, reason });
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
        bytes: encodeBatch({ increments: [], decrements: [], reads: [] }, opaque, Date.now).bytes,
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
    this.options.onStateChange?.({ up: true });
  }
}
