import { DEFAULTS } from '../config/defaults.js';
import { parseRetention, type Archive } from '../config/retention.js';
import { UsageRecorder } from './recorder.js';
import { openSqliteUsage } from './sqlite-store.js';
import { createUsageHistory, type UsageHistory } from './usage-history.js';

export interface InMemoryUsageOptions {
  /** The events of the policies in use. */
  readonly policyEvents: () => Iterable<string>;
  /** Milliseconds since the epoch, for the recorder, the store's pruning and queries. Default Date.now. */
  readonly now?: () => number;
  /** Default MEMGATE_USAGE_RETENTION's default. */
  readonly archives?: readonly Archive[];
  /** Heaviest clients kept per event, minute and outcome. Default MEMGATE_USAGE_TOP's default. */
  readonly top?: number;
}

export interface InMemoryUsage {
  /** Tell it each check's decision. */
  readonly recorder: UsageRecorder;
  /** What /usage answers from. */
  readonly history: UsageHistory;
  readonly close: () => Promise<void>;
}

/**
 * Usage history as the service keeps it by default, in an in-memory SQLite database, on a
 * clock of the caller's: for tests, demonstrations and the README's screenshot.
 */
export function inMemoryUsage({
  policyEvents,
  now = Date.now,
  archives = defaultArchives(),
  top = DEFAULTS.usageTop,
}: InMemoryUsageOptions): InMemoryUsage {
  const sqlite = openSqliteUsage({ path: ':memory:', archives, top, nowSeconds: () => now() / 1000 });
  const recorder = new UsageRecorder({
    stores: { sqlite },
    readFrom: 'sqlite',
    flushSeconds: DEFAULTS.usageFlushSeconds,
    top,
    now,
  });
  const history = createUsageHistory({ reader: sqlite, recorder, archives, policyEvents, now });
  return {
    recorder,
    history,
    close: async () => {
      await recorder.close();
      await sqlite.close();
    },
  };
}

function defaultArchives(): readonly Archive[] {
  const archives = parseRetention(DEFAULTS.usageRetention);
  if (typeof archives === 'string') throw new Error(`DEFAULTS.usageRetention: ${archives}`);
  return archives;
}
