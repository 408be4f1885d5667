import type { ServerConnection } from './connection.js';
import { encodeRequest, Opcode } from './protocol.js';

export interface TimedStats {
  /** The statistics asked for that the server sent. */
  readonly stats: Readonly<Partial<Record<string, string>>>;
  /** performance.now() when the request left and when the last statistic arrived. */
  readonly sentAt: number;
  readonly receivedAt: number;
}

/**
 * Some of a server's general statistics (binary STAT: one reply per statistic, about 90, then
 * an empty one), within the connection's deadline. memgate reads `evictions` (counters
 * dropped to make room, each one a count silently lowered) and `time` (the server's clock,
 * read a few times a second): only the names asked for are made into strings, not every
 * reply's key and value.
 */
export function serverStats(connection: ServerConnection, names: readonly string[]): Promise<TimedStats> {
  const wanted = names.map((name) => ({ name, bytes: Buffer.from(name, 'latin1') }));
  return new Promise((resolve, reject) => {
    const opaque = connection.nextOpaque();
    const stats: Partial<Record<string, string>> = {};
    let sentAt = performance.now();
    connection.send({
      opaque,
      bytes: encodeRequest(Opcode.stat, '', Buffer.alloc(0), '', opaque),
      onSent: (at) => (sentAt = at),
      onReply: (reply) => {
        if (reply.keyLength !== 0) {
          for (const { name, bytes } of wanted) if (reply.keyIs(bytes, 0, bytes.length)) stats[name] = reply.text();
          return false;
        }
        resolve({ stats, sentAt, receivedAt: performance.now() });
        return true;
      },
      onLate: reject,
      onFail: reject,
    });
  });
}
