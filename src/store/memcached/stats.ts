import type { ServerConnection } from './connection.js';
import { encodeRequest, Opcode } from './protocol.js';

export interface TimedStats {
  readonly stats: Readonly<Record<string, string>>;
  /** performance.now() when the request left and when the last statistic arrived. */
  readonly sentAt: number;
  readonly receivedAt: number;
}

/**
 * A server's general statistics (binary STAT: one reply per statistic, then an empty one),
 * within the connection's deadline. memgate reads `evictions` (counters dropped to make
 * room, each one a count silently lowered) and `time` (the server's clock) from them.
 */
export function serverStats(connection: ServerConnection): Promise<TimedStats> {
  return new Promise((resolve, reject) => {
    const opaque = connection.nextOpaque();
    const stats: Record<string, string> = {};
    let sentAt = performance.now();
    connection.send({
      opaque,
      bytes: encodeRequest(Opcode.stat, '', Buffer.alloc(0), '', opaque),
      onSent: (at) => (sentAt = at),
      onReply: (reply) => {
        if (reply.keyLength !== 0) {
          stats[reply.key()] = reply.text();
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
