import { Utils, type Response, type Server } from 'memjs';
import { StoreUnavailableError } from '../counter-store.js';

const STAT_OPCODE = 0x10;

/** memjs keeps a handler marked quiet registered until a reply with an empty body. */
type QuietHandler = ((response: Response) => void) & { quiet?: boolean };

/**
 * A server's general statistics (binary STAT: one reply per statistic, then an empty one),
 * within the deadline. memgate reads `evictions` from them: counters Memcached dropped to
 * make room, each one a count silently lowered.
 */
export function serverStats(server: Server, opaque: number, deadlineMs: number): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const address = `${server.host}:${server.port}`;
    const stats: Record<string, string> = {};
    const timer = setTimeout(() => {
      // A late answer still comes; let memjs match it and drop it.
      server.onResponse(opaque, Object.assign(() => undefined, { quiet: true }));
      reject(new StoreUnavailableError(`memcached ${address} did not answer STAT within ${deadlineMs} ms`));
    }, deadlineMs);
    const onReply: QuietHandler = (response) => {
      if (response.header.keyLength === 0) {
        clearTimeout(timer);
        resolve(stats);
      } else {
        stats[response.key.toString('latin1')] = response.val.toString('latin1');
      }
    };
    onReply.quiet = true;
    server.onResponse(opaque, onReply);
    server.onError(opaque, (error: unknown) => {
      clearTimeout(timer);
      reject(new StoreUnavailableError(`memcached ${address}: ${error instanceof Error ? error.message : String(error)}`, { cause: error }));
    });
    server.write(Utils.makeRequestBuffer(STAT_OPCODE, '', '', '', opaque));
  });
}
