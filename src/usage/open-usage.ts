import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import { carbonWriter, graphiteReader } from './graphite-store.js';
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
  /** Told of every decision of /check and /gate; undefined when this instance writes nowhere. */
  readonly recorder: UsageRecorder | undefined;
  /** What /usage reads; undefined when there is nothing to read from (/usage answers usage_off). */
  readonly history: UsageHistory | undefined;
  /** Where usage goes and is read from, for the start-up log line. */
  readonly description: string;
  /** Writes what is left and closes the stores. */
  close(): Promise<void>;
}

export type UsageSettings = Pick<
  Settings,
  'usageDb' | 'usageFlushSeconds' | 'usageTop' | 'usageRetention' | 'graphite' | 'graphiteWeb' | 'graphiteInstance'
>;

export interface OpenUsageOptions {
  readonly settings: UsageSettings;
  readonly policyEvents: () => Iterable<string>;
  readonly logger: Logger;
  readonly watch?: UsageWatch;
  /** Milliseconds since the epoch. Default Date.now. */
  readonly now?: () => number;
}

/** Somewhere a flush goes: the SQLite file, or carbon. */
interface Writer {
  /** `sqlite` or `graphite`: its queue's name in the recorder. */
  readonly kind: string;
  /** For the start-up line. */
  readonly where: string;
  write(batch: UsageBatch): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens usage history as the settings say. Written to the SQLite file unless
 * MEMGATE_USAGE_DB=off, and to carbon when MEMGATE_GRAPHITE is set; read back from
 * graphite-web when MEMGATE_GRAPHITE_WEB is set, else from the file. Undefined when it is
 * neither written nor read.
 */
export function openUsage({ settings, policyEvents, logger, watch, now }: OpenUsageOptions): OpenUsage | undefined {
  const archives = settings.usageRetention;
  const instance = settings.graphiteInstance;
  const sqlite = settings.usageDb === undefined ? undefined : openFile(settings.usageDb, archives);
  const writers: Writer[] = [];
  if (sqlite) {
    writers.push({
      kind: 'sqlite',
      where: `sqlite ${settings.usageDb ?? ''}`,
      write: (batch) => sqlite.write(batch),
      close: () => sqlite.close(),
    });
  }
  if (settings.graphite) {
    const carbon = carbonWriter({ carbon: settings.graphite, instance, onUnstorable: unstorable(logger) });
    const { host, port } = settings.graphite;
    writers.push({
      kind: 'graphite',
      where: `graphite ${host}:${port}`,
      write: carbon.write,
      close: () => Promise.resolve(),
    });
  }
  const web = settings.graphiteWeb ? graphiteReader({ web: settings.graphiteWeb, instance, archives }) : undefined;
  const reader: Pick<UsageStore, 'series' | 'top' | 'events'> | undefined = web ?? sqlite;
  if (!reader && writers.length === 0) return undefined;
  // Only MEMGATE_GRAPHITE_WEB: this instance shows what others write, and records nothing.
  const recorder =
    writers.length === 0
      ? undefined
      : new UsageRecorder({
          stores: Object.fromEntries(writers.map((writer) => [writer.kind, writer])),
          // What the reader has not taken yet is what answers add: the file's queue, or
          // carbon's when graphite-web reads what this instance sends.
          readFrom: web ? (settings.graphite ? 'graphite' : undefined) : 'sqlite',
          flushSeconds: settings.usageFlushSeconds,
          top: settings.usageTop,
          ...(now ? { now } : {}),
          onFlushError: (err, { store, pendingRows }) => {
            watch?.flushFailed();
            logger.warn(
              { err, store, pendingRows },
              `writing usage history to ${store} failed; it is kept and written again at the next flush`,
            );
          },
          onDropped: (rows, store) => {
            watch?.dropped(rows);
            logger.error(
              { rows, store },
              `usage history dropped: ${store} kept failing and memory for what it has not taken is full`,
            );
          },
        });
  recorder?.start();
  const history =
    reader &&
    createUsageHistory({ reader, ...(recorder ? { recorder } : {}), archives, policyEvents, ...(now ? { now } : {}) });
  const written =
    writers.length > 0 ? `written to ${writers.map(({ where }) => where).join(' and ')}` : 'not recorded here';
  const read = web
    ? `read from graphite-web ${settings.graphiteWeb?.origin ?? ''}`
    : sqlite
      ? 'read from sqlite'
      : 'not readable here';
  return {
    recorder,
    history,
    description: `${written}, ${read}`,
    async close() {
      await recorder?.close();
      for (const writer of writers) await writer.close();
      await web?.close();
    },
  };
}

/** Logs, once per name, an event or client too long for a whisper file name, which Graphite never gets. */
function unstorable(logger: Logger) {
  const told = new Set<string>();
  return ({ event, feature }: { readonly event: string; readonly feature?: string }) => {
    const key = `${event}\u0000${feature ?? ''}`;
    // A bounded memory of what was said: a flood of long names is logged a thousand times at most.
    if (told.has(key) || told.size >= 1000) return;
    told.add(key);
    logger.warn(
      { event, feature },
      'a name too long for a Graphite path node (255 bytes once escaped) is not sent to Graphite',
    );
  };
}

/** The SQLite file, or an error that says which file and how to run without it. */
function openFile(path: string, archives: UsageSettings['usageRetention']): UsageStore {
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
