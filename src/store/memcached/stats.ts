import { Utils } from 'memjs';
import type { ServerConnection } from './connection.js';
import { Opcode } from './protocol.js';

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
      bytes: Utils.makeRequestBuffer(Opcode.stat, '', '', '', opaque),
      quiet: true,
      onSent: (at) => (sentAt = at),
      onReply: (response) => {
        if (response.header.keyLength !== 0) {
          stats[response.key.toString('latin1')] = response.val.toString('latin1');
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
