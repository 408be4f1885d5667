import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A keep-alive HTTP/1.1 load on raw sockets, so that every request is classified exactly:
 * an HTTP client library would retry, pool or hide where a request was lost.
 */
export interface LoadOptions {
  readonly port: number;
  readonly host?: string;
  /** Connections kept busy at once, each sending its next request as soon as it has an answer. */
  readonly connections: number;
  /** The path of the n-th request. */
  readonly path: (n: number) => string;
  /** The load stops once this settles (e.g. when the server's process has exited). */
  readonly until: Promise<unknown>;
}

export interface LoadResult {
  /** Requests that got a complete response. */
  answered: number;
  /** Connection attempts refused (ECONNREFUSED): nothing was written. */
  refusedAtConnect: number;
  /** Requests written whose connection closed or reset before a complete response: the losses. */
  writtenWithoutResponse: number;
  /** Why each lost request was lost (`closed`, `ECONNRESET`, …), and whether its connection was new. */
  losses: Record<string, number>;
  /** Other failures to connect (not ECONNREFUSED), by code; nothing was written. */
  otherConnectErrors: Record<string, number>;
  /** Answers by status. */
  statuses: Record<string, number>;
  /** Answers that carried `Connection: close`. */
  closeAnswers: number;
  /** Connections opened. */
  connectionsOpened: number;
}

export interface Answer {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
}

/** A request's fate: its answer, or why its connection closed first. */
export type Outcome = { answer: Answer } | { lost: string };

/** One connection: writes a request, reads its response (Content-Length framed). */
export class Connection {
  private buffer = Buffer.alloc(0);
  private waiting: ((outcome: Outcome) => void) | undefined;
  private error: string | undefined;
  closed = false;
  requests = 0;
  /** Resolves when the connection has closed, from either end. */
  readonly whenClosed: Promise<void>;

  constructor(private readonly socket: Socket) {
    this.whenClosed = new Promise((resolve) => {
      socket.once('close', () => {
        resolve();
      });
    });
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.parse();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.error = error.code ?? error.message;
    });
    socket.on('close', () => {
      this.closed = true;
      this.settle({ lost: this.error ?? 'closed' });
    });
  }

  request(path: string): Promise<Outcome> {
    this.requests++;
    const outcome = new Promise<Outcome>((resolve) => (this.waiting = resolve));
    if (this.closed) this.settle({ lost: this.error ?? 'closed' });
    else this.socket.write(`GET ${path} HTTP/1.1\r\nHost: memgate\r\n\r\n`);
    return outcome;
  }

  close(): void {
    this.socket.destroy();
  }

  private settle(outcome: Outcome): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.(outcome);
  }

  private parse(): void {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return;
    const [statusLine = '', ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const headers = new Map(
      lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    const length = Number(headers.get('content-length'));
    if (!Number.isInteger(length)) throw new Error(`an answer without Content-Length: ${statusLine}`);
    if (this.buffer.length < end + 4 + length) return;
    this.buffer = this.buffer.subarray(end + 4 + length);
    if (!this.waiting) throw new Error(`an answer nobody asked for: ${statusLine}`);
    this.settle({ answer: { status: Number(statusLine.split(' ')[1]), headers } });
  }
}

/** Opens a connection; a string says why it could not be opened. Nothing is written before it is open. */
export function openConnection(port: number, host: string): Promise<Connection | string> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const failed = (error: NodeJS.ErrnoException) => {
      resolve(error.code ?? error.message);
    };
    socket.once('error', failed);
    socket.once('connect', () => {
      socket.off('error', failed);
      resolve(new Connection(socket));
    });
  });
}

const count = (tally: Record<string, number>, key: string) => {
  tally[key] = (tally[key] ?? 0) + 1;
};

/** Drives the load until `until` settles, and counts every request exactly once. */
export async function keepAliveLoad({
  port,
  host = '127.0.0.1',
  connections,
  path,
  until,
}: LoadOptions): Promise<LoadResult> {
  const result: LoadResult = {
    answered: 0,
    refusedAtConnect: 0,
    writtenWithoutResponse: 0,
    losses: {},
    otherConnectErrors: {},
    statuses: {},
    closeAnswers: 0,
    connectionsOpened: 0,
  };
  let stopped = false;
  void until.finally(() => (stopped = true));
  let sent = 0;

  const worker = async () => {
    let connection: Connection | undefined;
    while (!stopped) {
      if (!connection || connection.closed) {
        const opened = await openConnection(port, host);
        if (typeof opened === 'string') {
          if (opened === 'ECONNREFUSED') result.refusedAtConnect++;
          else count(result.otherConnectErrors, opened);
          // Not too hot a loop while the port is closed.
          await sleep(5);
          continue;
        }
        connection = opened;
        result.connectionsOpened++;
      }
      const outcome = await connection.request(path(sent++));
      if ('lost' in outcome) {
        result.writtenWithoutResponse++;
        count(result.losses, `${outcome.lost} on ${connection.requests === 1 ? 'a new' : 'a reused'} connection`);
        connection = undefined;
        continue;
      }
      result.answered++;
      count(result.statuses, String(outcome.answer.status));
      if (outcome.answer.headers.get('connection')?.toLowerCase() === 'close') {
        result.closeAnswers++;
        // The server closes it after this answer: do not write on it again.
        connection.close();
        connection = undefined;
      }
    }
    connection?.close();
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return result;
}
