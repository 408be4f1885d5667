import pLimit from 'p-limit';
import { DEFAULTS } from '../../config/defaults.js';
import {
  StoreOverloadedError,
  StoreUnavailableError,
  swapArgumentError,
  type CounterDecrement,
  type CounterIncrement,
  type CounterSet,
  type CounterStore,
  type IncrementAndReadResult,
  type IncrementOptions,
  type ServerHealth,
  type StoreVersion,
  type VersionedValue,
} from '../counter-store.js';
import { PLAIN_BATCH, runBatch, type BatchOptions, type BatchReplies } from './batch.js';
import { deleteKey, readVersioned, setCounter, swapCounter } from './command.js';
import { syncClock, type ClockSync, type SyncedClock } from './clock-sync.js';
import { ServerConnection } from './connection.js';
import { serverStats } from './stats.js';
import type { BatchRequest } from './protocol.js';
import { parseServerList, serverRouter, type Credentials } from './servers.js';

export interface MemcachedStoreOptions {
  /** `host[:port],…`, as in MEMCACHED_SERVERS. */
  readonly servers: string;
  /** SASL credentials for the servers that name none of their own. */
  readonly credentials?: Credentials;
  /** Deadline of every call to a server, in milliseconds. Default 250. */
  readonly timeoutMs?: number;
  /** Most servers one call talks to at once. Default 8. */
  readonly maxParallelServers?: number;
  /** Send the calls made in one turn of the event loop in one socket write. Default true. */
  readonly coalesceWrites?: boolean;
  /** Most checks waiting on Memcached at once; more are refused with StoreOverloadedError. Default 1000. */
  readonly maxInFlight?: number;
  /** Told of every call's kind, duration and outcome, for metrics. */
  readonly onOperation?: (
    operation: StoreOperation,
    seconds: number,
    outcome: 'ok' | 'unavailable' | 'overloaded',
  ) => void;
  /** Told when a server goes down (with the reason) and when it answers again. */
  readonly onServerState?: (server: string, state: { up: boolean; reason?: string }) => void;
  /** Told of increments taken back after their check was decided without the store. */
  readonly onUndo?: (undone: number, error?: unknown) => void;
  /** Told after each reading of a server's clock (see clock-sync.ts). */
  readonly onClockSync?: (server: string, sync: ClockSync) => void;
}

export type StoreOperation = 'incrementAndRead' | 'decrement' | 'reset' | 'readVersioned' | 'swap';

/** The part of one call that goes to one server, with where each answer belongs in the call. */
interface ServerShare {
  readonly increments: CounterIncrement[];
  readonly incrementPositions: number[];
  readonly decrements: CounterDecrement[];
  readonly reads: string[];
  readonly readPositions: number[];
}

/**
 * Counters in a Memcached cluster shared by every memgate instance. Keys route by hash
 * tag, so one check's keys sit on one server and the check is one write and one round trip.
 */
export function createMemcachedStore(options: MemcachedStoreOptions): CounterStore {
  const endpoints = parseServerList(options.servers, options.credentials);
  const timeoutMs = options.timeoutMs ?? DEFAULTS.memcachedTimeoutMs;
  const coalesceWrites = options.coalesceWrites ?? true;
  const servers = endpoints.map(
    ({ host, port, username, password, label }) =>
      new ServerConnection({
        host,
        port,
        username,
        password,
        label,
        deadlineMs: timeoutMs,
        coalesceWrites,
        onStateChange: (state) => options.onServerState?.(label, state),
      }),
  );
  const serverOf = serverRouter(endpoints);
  // Bucket time is the clock of the server holding the buckets, which every instance reads.
  const clocks = servers.map((server) =>
    syncClock(server, { onSync: (sync) => options.onClockSync?.(server.label, sync) }),
  );
  const clockOf = (index: number) => clocks[index] as SyncedClock;
  // Built once each: a batch is the hot path, and objects of one shape keep it fast.
  const nowOf = clocks.map((clock) => () => clock.now());
  const { onUndo } = options;
  const undoing: BatchOptions = { undoIfAbandoned: true, evenWhenDown: false, onUndo };
  const takingBack: BatchOptions = { undoIfAbandoned: false, evenWhenDown: true, onUndo };
  const maxParallelServers = options.maxParallelServers ?? DEFAULTS.memcachedMaxParallelServers;
  const maxInFlight = options.maxInFlight ?? DEFAULTS.memcachedMaxInFlight;
  let inFlight = 0;
  const { onOperation } = options;

  /** Tells onOperation how long a store call took and how it ended, when it listens. */
  function timed<T>(operation: StoreOperation, call: Promise<T>): Promise<T> {
    if (!onOperation) return call;
    const started = performance.now();
    return call.then(
      (result) => {
        onOperation(operation, (performance.now() - started) / 1000, 'ok');
        return result;
      },
      (error: unknown) => {
        onOperation(
          operation,
          (performance.now() - started) / 1000,
          error instanceof StoreOverloadedError ? 'overloaded' : 'unavailable',
        );
        throw error;
      },
    );
  }

  /** One batch to one server, sending again the increments that lost a creation race. */
  function runOn(index: number, request: BatchRequest, options: BatchOptions): Promise<BatchReplies> {
    const server = servers[index] as ServerConnection;
    // Absolute expirations are read by the server's clock.
    const now = nowOf[index];
    const first = runBatch(server, request, options, now);
    return first.then((replies) =>
      replies.raced.length === 0 ? replies : raceAgain(index, request, replies, options),
    );
  }

  async function raceAgain(
    index: number,
    request: BatchRequest,
    replies: BatchReplies,
    options: BatchOptions,
  ): Promise<BatchReplies> {
    const server = servers[index] as ServerConnection;
    const increments = replies.raced.map((i) => request.increments[i] as CounterIncrement);
    const again = await runBatch(server, { increments, decrements: [], reads: [] }, options, nowOf[index]);
    if (again.raced.length > 0) throw new StoreUnavailableError(`memcached ${server.label} would not create a counter`);
    replies.raced.forEach((position, i) => (replies.incremented[position] = again.incremented[i] ?? 0));
    return { incremented: replies.incremented, read: replies.read, raced: [] };
  }

  function run(request: BatchRequest, batch: BatchOptions): Promise<BatchReplies> {
    if (servers.length === 1) return runOn(0, request, batch);
    const shares = sharesByServer(request, serverOf);
    const [single] = shares;
    if (shares.size === 1 && single) return runOn(single[0], request, batch);
    return runSpread(request, shares, batch);
  }

  /** Keys spanning servers: one batch per server, a bounded number at once. */
  async function runSpread(
    request: BatchRequest,
    shares: Map<number, ServerShare>,
    batch: BatchOptions,
  ): Promise<BatchReplies> {
    const incremented = new Array<number>(request.increments.length).fill(0);
    const read = new Array<number>(request.reads.length).fill(0);
    await pLimit(maxParallelServers).map(shares, async ([server, share]) => {
      const replies = await runOn(server, share, batch);
      share.incrementPositions.forEach((position, i) => (incremented[position] = replies.incremented[i] ?? 0));
      share.readPositions.forEach((position, i) => (read[position] = replies.read[i] ?? 0));
    });
    return { incremented, read, raced: [] };
  }

  /** Why a check's call to `target` is refused before it is sent, if it is. */
  function refusal(target: ServerConnection | undefined): StoreUnavailableError | StoreOverloadedError | undefined {
    // A server known to be down decides the check by its event's rule at once: that is
    // an outage, not an overload, and must not be answered as one.
    if (target?.down !== undefined)
      return new StoreUnavailableError(`memcached ${target.label} is down (${target.down})`);
    // A slow server must not make checks pile up without bound: refuse at once.
    // Decrements are exempt: they take back denied requests, and are rare.
    if (inFlight >= maxInFlight)
      return new StoreOverloadedError(`${maxInFlight} Memcached calls are already in flight`);
    return undefined;
  }

  /** A check's call, not timed: counts in flight, refuses past maxInFlight, fails at once for a server known down. */
  function incrementAndReadNow(
    increments: readonly CounterIncrement[],
    reads: readonly string[],
    call: IncrementOptions,
  ): Promise<IncrementAndReadResult> {
    const refused = refusal(servers[servers.length === 1 ? 0 : serverOf(increments[0]?.key ?? reads[0] ?? '')]);
    if (refused) return Promise.reject(refused);
    inFlight++;
    return run({ increments, decrements: [], reads }, call.admittedIfUnanswered === false ? undoing : PLAIN_BATCH).then(
      (replies) => {
        inFlight--;
        // An increment always answers a value (it creates missing keys).
        return { incremented: replies.incremented, read: replies.read };
      },
      (error: unknown) => {
        inFlight--;
        throw error;
      },
    );
  }

  /**
   * A check's call on one key (compare-and-swap's), not timed: to the server of the key,
   * refused as incrementAndRead's are, counted in flight while it runs.
   */
  function onServerOf<T>(key: string, call: (server: ServerConnection, index: number) => Promise<T>): Promise<T> {
    const index = serverOf(key);
    const server = servers[index] as ServerConnection;
    const refused = refusal(server);
    if (refused) return Promise.reject(refused);
    inFlight++;
    return call(server, index).finally(() => {
      inFlight--;
    });
  }

  return {
    kind: 'memcached',
    shared: true,
    description: `memcached ${endpoints.map((endpoint) => endpoint.label).join(',')}`,
    clock: {
      now: (key) => clockOf(serverOf(key)).now(),
      ready: async () => {
        await Promise.all(clocks.map((clock) => clock.ready()));
      },
    },

    incrementAndRead: (
      increments: readonly CounterIncrement[],
      reads: readonly string[],
      call: IncrementOptions = {},
    ): Promise<IncrementAndReadResult> => timed('incrementAndRead', incrementAndReadNow(increments, reads, call)),

    decrement: (decrements: readonly CounterDecrement[]): Promise<void> =>
      // Taking back must reach the server whenever it answers, or a denied request stays counted.
      timed(
        'decrement',
        run({ increments: [], decrements, reads: [] }, takingBack).then(() => undefined),
      ),

    reset: (marker: CounterSet, deletes: readonly string[]): Promise<void> =>
      timed(
        'reset',
        (async () => {
          const serverFor = (key: string) => servers[serverOf(key)] as ServerConnection;
          await setCounter(
            serverFor(marker.key),
            marker.key,
            marker.value,
            marker.ttlSeconds,
            clockOf(serverOf(marker.key)).now(),
          );
          for (const key of deletes) await deleteKey(serverFor(key), key);
        })(),
      ),

    readVersioned: (key: string): Promise<VersionedValue> =>
      timed(
        'readVersioned',
        onServerOf(key, (server) => readVersioned(server, key)),
      ),

    swap(key: string, value: number, ttlSeconds: number, expected: StoreVersion | undefined): Promise<boolean> {
      // A caller's mistake, not the store's: neither sent nor counted.
      const invalid = swapArgumentError(value, ttlSeconds, expected);
      if (invalid) return Promise.reject(invalid);
      return timed(
        'swap',
        // Absolute expirations (over 30 days) are read by the server's clock.
        onServerOf(key, (server, index) =>
          swapCounter(server, key, value, ttlSeconds, expected, nowOf[index] as () => number),
        ),
      );
    },

    async ping(): Promise<void> {
      await pLimit(maxParallelServers).map(servers, (server) =>
        runBatch(server, { increments: [], decrements: [], reads: [] }),
      );
    },

    health(): Promise<ServerHealth[]> {
      return pLimit(maxParallelServers).map(servers, async (server, i) => {
        const { label } = server;
        const offset = clockOf(i).offsetFromWallMs;
        const clockOffset = offset === undefined ? {} : { clockOffsetMs: Math.round(offset) };
        // A server known to be down is not asked again: its probe will tell when it is back.
        if (server.down !== undefined)
          return { server: label, up: false, error: `memcached ${label} is down (${server.down})`, ...clockOffset };
        try {
          const { stats } = await serverStats(server);
          return { server: label, up: true, evictions: Number(stats.evictions ?? 0), ...clockOffset };
        } catch (error) {
          return {
            server: label,
            up: false,
            error: error instanceof Error ? error.message : String(error),
            ...clockOffset,
          };
        }
      });
    },

    close(): Promise<void> {
      for (const clock of clocks) clock.stop();
      for (const server of servers) server.close();
      return Promise.resolve();
    },
  };
}

/** Splits one call by server, remembering where each answer belongs in the caller's order. */
function sharesByServer(request: BatchRequest, serverOf: (key: string) => number): Map<number, ServerShare> {
  const shares = new Map<number, ServerShare>();
  const shareOf = (key: string): ServerShare => {
    const server = serverOf(key);
    let share = shares.get(server);
    if (!share) {
      share = { increments: [], incrementPositions: [], decrements: [], reads: [], readPositions: [] };
      shares.set(server, share);
    }
    return share;
  };
  request.increments.forEach((op, i) => {
    const share = shareOf(op.key);
    share.increments.push(op);
    share.incrementPositions.push(i);
  });
  for (const op of request.decrements) shareOf(op.key).decrements.push(op);
  request.reads.forEach((key, i) => {
    const share = shareOf(key);
    share.reads.push(key);
    share.readPositions.push(i);
  });
  return shares;
}
