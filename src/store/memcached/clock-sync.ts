import { DEFAULTS } from '../../config/defaults.js';
import type { ServerConnection } from './connection.js';
import { ServerClock } from './server-clock.js';
import { serverStats } from './stats.js';

/** What a synchronization found: the server's clock against this host's wall clock. */
export interface ClockSync {
  readonly offsetMs: number;
  /** The most `offsetMs` can be off. */
  readonly uncertaintyMs: number;
}

export interface ClockSyncOptions {
  /** Told after each synchronization of the server's clock. */
  readonly onSync?: (sync: ClockSync) => void;
  /** Time between synchronizations. */
  readonly intervalMs?: number;
}

export interface SyncedClock {
  /** The server's Unix time in milliseconds (see ServerClock.now); starts the synchronizing. */
  now(): number;
  /** The server's clock minus this host's wall clock, in milliseconds; undefined until read. */
  readonly offsetFromWallMs: number | undefined;
  /** Starts the synchronizing; resolves once the server's clock has been read, or could not be. */
  ready(): Promise<void>;
  stop(): void;
}

/** While a server cannot be read, it is tried again this often. */
const RETRY_MS = 1000;

/**
 * Keeps a server's clock known: pinned to a few milliseconds (at most 1.5 s of readings)
 * once it is first needed, then again every `intervalMs`, as monotonic clocks and the
 * server's drift apart by milliseconds a minute. A server that cannot be read is tried
 * every second. A store whose clock nobody asks (a replay driving its own) reads none.
 */
export function syncClock(connection: ServerConnection, options: ClockSyncOptions = {}): SyncedClock {
  const clock = new ServerClock({
    read: async () => {
      const { stats, sentAt, receivedAt } = await serverStats(connection);
      const serverSecond = Number(stats.time);
      if (!Number.isSafeInteger(serverSecond)) throw new Error(`memcached ${connection.label} reported no time`);
      return { sentAt, receivedAt, serverSecond };
    },
  });
  const intervalMs = options.intervalMs ?? DEFAULTS.clockSyncIntervalMs;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let first: Promise<void> | undefined;
  const later = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => void synchronize(), ms);
    timer.unref();
  };
  const synchronize = async (): Promise<void> => {
    try {
      await clock.synchronize();
      const offsetMs = clock.offsetFromWallMs;
      if (offsetMs !== undefined) options.onSync?.({ offsetMs, uncertaintyMs: clock.uncertaintyMs });
      later(intervalMs);
    } catch {
      later(RETRY_MS);
    }
  };
  const ready = () => (first ??= synchronize());
  return {
    now() {
      void ready();
      return clock.now();
    },
    get offsetFromWallMs() {
      return clock.offsetFromWallMs;
    },
    ready,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
