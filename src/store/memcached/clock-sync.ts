import type { ServerConnection } from './connection.js';
import { readVersioned, swapCounter } from './command.js';
import { ServerClock, type ClockAnchor } from './server-clock.js';
import { serverStats } from './stats.js';

/** What a synchronization found: the server's clock against this host's wall clock. */
export interface ClockSync {
  readonly offsetMs: number;
  /** The most `offsetMs` can be off. */
  readonly uncertaintyMs: number;
  /** Whether the clock is the one the instances sharing the server agreed on. */
  readonly agreed: boolean;
}

export interface ClockSyncOptions {
  /** Told after each turn of the server's clock that was watched. */
  readonly onSync?: (sync: ClockSync) => void;
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

/** The statistic a reading of the server's clock needs: its Unix time in seconds. */
const CLOCK_STATS = ['time'];
/** While a server cannot be read, it is tried again this often. */
const RETRY_MS = 1000;
/** Turns a newcomer waits for the time others agreed on before it is ready with the server's own. */
const NEWCOMER_TURNS = 2;
/** How long the time agreed for a turn is kept: newcomers only look at the turn they just saw. */
const ANCHOR_TTL_SECONDS = 60;

/** The key holding the agreed time of a server's turn to `second`: one per turn, on that server. */
export function anchorKey(second: number): string {
  return `memgate:clock:${String(second)}`;
}

/** The agreed times of a server's turns, kept on the server itself (ADD names one, GET reads it). */
function serverAnchor(connection: ServerConnection): ClockAnchor {
  return {
    async agree(second, proposed) {
      const key = anchorKey(second);
      if (
        proposed !== undefined &&
        (await swapCounter(connection, key, proposed, ANCHOR_TTL_SECONDS, undefined, Date.now))
      )
        return proposed;
      return (await readVersioned(connection, key)).value;
    },
    async namedBefore(second) {
      const before = [1, 2, 3].map((back) => readVersioned(connection, anchorKey(second - back)));
      return (await Promise.all(before)).some((read) => read.value !== undefined);
    },
  };
}

/**
 * Keeps a server's clock known and agreed (see ServerClock): pinned once it is first needed,
 * then every turn of the server's second watched, a few readings across each. A server that
 * cannot be read is tried every second. A store whose clock nobody asks (a replay driving
 * its own) reads none.
 */
export function syncClock(connection: ServerConnection, options: ClockSyncOptions = {}): SyncedClock {
  const clock = new ServerClock({
    read: async () => {
      const { stats, sentAt, receivedAt } = await serverStats(connection, CLOCK_STATS);
      const serverSecond = Number(stats.time);
      if (!Number.isSafeInteger(serverSecond)) throw new Error(`memcached ${connection.label} reported no time`);
      return { sentAt, receivedAt, serverSecond };
    },
    anchor: serverAnchor(connection),
  });
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let first: Promise<void> | undefined;
  const later = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => void watch(), ms);
    timer.unref();
  };
  const report = () => {
    const offsetMs = clock.offsetFromWallMs;
    if (offsetMs !== undefined)
      options.onSync?.({ offsetMs, uncertaintyMs: clock.uncertaintyMs, agreed: clock.isAgreed });
  };
  const watch = async (): Promise<void> => {
    try {
      await clock.track();
      report();
      later(0);
    } catch {
      later(RETRY_MS);
    }
  };
  const start = async () => {
    await clock.synchronize();
    // Instances that missed the turn this one first saw name the next ones.
    for (let turns = 0; !clock.isAgreed && turns < NEWCOMER_TURNS; turns++) await clock.track();
  };
  const ready = () =>
    (first ??= start().then(
      () => {
        report();
        later(0);
      },
      () => {
        later(RETRY_MS);
      },
    ));
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
