import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import { UsageRecorder } from './recorder.js';
import { openSqliteUsage } from './sqlite-store.js';
import { createUsageHistory, type UsageHistory } from './usage-history.js';
import type { UsageBatch, UsageStore } from './usage-store.js';

/** What the service's metrics learn of usage recording. */
export interface UsageWatch {
  readonly flushFailed: () => void;
  readonly dropped: (rows: number) => void;
}

export interface OpenUsage {
  /** Told of every decision of /check and /gate. */
  readonly recorder: UsageRecorder;
  /** What /usage reads. */
  readonly history: UsageHistory;
  /** Where usage goes and is read from, for the start-up log line. */
  readonly description: string;
  /** Writes what is left and closes the stores. */
  close(): Promise<void>;
}

export interface OpenUsageOptions {
  readonly settings: Pick<
    Settings,
    'usageDb' | 'usageFlushSeconds' | 'usageTop' | 'usageRetention' | 'graphite' | 'graphiteWeb'
  >;
  readonly policyEvents: () => Iterable<string>;
  readonly logger: Logger;
  readonly watch?: UsageWatch;
  /** Milliseconds since the epoch. Default Date.now. */
  readonly now?: () => number;
}

/**
 * Opens usage history as the settings say: the SQLite file unless MEMGATE_USAGE_DB=off,
 * Graphite too when MEMGATE_GRAPHITE is set; read back from graphite-web when
 * MEMGATE_GRAPHITE_WEB is set, else from the file. Undefined when there is nowhere to keep it.
 */
export function openUsage({ settings, policyEvents, logger, watch, now }: OpenUsageOptions): OpenUsage | undefined {
  const archives = settings.usageRetention;
  const writers: UsageStore[] = [];
  const sqlite = settings.usageDb === undefined ? undefined : openFile(settings.usageDb, archives);
  if (sqlite) writers.push(sqlite);
  const reader = sqlite;
  if (!reader || writers.length === 0) return undefined;
  const recorder = new UsageRecorder({
    store: { write: (batch: UsageBatch) => writeAll(writers, batch) },
    flushSeconds: settings.usageFlushSeconds,
    top: settings.usageTop,
    ...(now ? { now } : {}),
    onFlushError: (err, pendingRows) => {
      watch?.flushFailed();
      logger.warn({ err, pendingRows }, 'writing usage history failed; it is kept and written again at the next flush');
    },
    onDropped: (rows) => {
      watch?.dropped(rows);
      logger.error(
        { rows },
        'usage history dropped: the usage store kept failing and memory for unwritten counts is full',
      );
    },
  });
  recorder.start();
  const history = createUsageHistory({ reader, recorder, archives, policyEvents, ...(now ? { now } : {}) });
  return {
    recorder,
    history,
    description: writers.map((writer) => writer.kind).join('+'),
    async close() {
      await recorder.close();
      for (const writer of writers) await writer.close();
    },
  };
}

/** The SQLite file, or an error that says which file and how to run without it. */
function openFile(path: string, archives: OpenUsageOptions['settings']['usageRetention']): UsageStore {
  try {
    return openSqliteUsage({ path, archives });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new Error(
      `cannot open the usage history file MEMGATE_USAGE_DB=${path}: ${why}; make it writable, or set MEMGATE_USAGE_DB=off`,
      {
        cause: error,
      },
    );
  }
}

/** Writes a batch to every store; a store that already has it counts it once, so a retry may go to all. */
async function writeAll(writers: readonly UsageStore[], batch: UsageBatch): Promise<void> {
  for (const writer of writers) await writer.write(batch);
}
